import type { Caller } from './auth.js';
import type { GroupScope, ServiceCore } from './core.js';
import { ApiError, badRequest } from './errors.js';
import type { Chat, Group } from './model.js';
import type { Params } from './params.js';
import { computePerms, seesGroup } from './perms.js';

/**
 * What a caller may see, decided in one place (docs/protocol.md "What an outsider can tell" and "Chats"):
 * - a group the caller may not see (perms.ts seesGroup) answers exactly as an unknown one, and so does
 *   everything in it, whatever id names it: an outsider cannot tell which ids exist;
 * - every chat operation (getchats, joinchat, getchathistory, updatechat, deletechat, leavechat, the
 *   socket's upgrade, its posts and what it delivers) needs `chat_visible` in the chat's group, so
 *   `chat_access` and a lost membership hold for all of them alike, and ownership of a chat gives nothing
 *   to someone who lost it.
 */

/** The caller's scope in `group`; a missing group, or one the caller may not see, throws `unknown()`. */
export function seenScope(core: ServiceCore, group: Group | undefined, caller: Caller, unknown: () => ApiError): GroupScope {
  if (!group) throw unknown();
  const scope = core.scopeOf(group, caller);
  if (!seesGroup(group, scope.sub)) throw unknown();
  return scope;
}

/**
 * The group a call names (group_id / group_name), as core.groupScope finds it, except that a group the
 * caller may not see answers "invalid group_id" / "invalid group_name" like an unknown one.
 */
export function seenGroupScope(core: ServiceCore, params: Params, caller: Caller): GroupScope {
  const scope = core.groupScope(params, caller);
  if (!seesGroup(scope.group, scope.sub)) {
    // groupScope went by the id when one was given, else by the name: the same parameter is named.
    throw badRequest(params.string('group_id') ? 'invalid group_id' : 'invalid group_name');
  }
  return scope;
}

/**
 * The group an extension operation names (docs/protocol.md "Extensions"): as core.groupScope, except
 * that a named group that does not exist, or that the caller may not see, is `group_not_found` (the type
 * the real service answers) with the same extra, `invalid group_id` / `invalid group_name`. Naming none,
 * or both, stays `bad_request`.
 */
export function foundGroupScope(core: ServiceCore, params: Params, caller: Caller): GroupScope {
  try {
    return core.groupScope(params, caller);
  } catch (error) {
    const named = params.has('group_id') || params.has('group_name');
    if (named && error instanceof ApiError && error.type === 'bad_request' && /^invalid group_(id|name)$/.test(error.extra)) {
      throw new ApiError('group_not_found', error.extra);
    }
    throw error;
  }
}

export interface ChatAccess {
  chat: Chat;
  scope: GroupScope;
}

/**
 * The one visibility check of every chat operation. A chat that does not exist or whose group the
 * caller may not see is `bad_request` `unknownExtra` ("invalid chat_id", or "invalid chatsub_id" when
 * a chat_sub named it); a chat of a group the caller sees without `chat_visible` is
 * `inadequate_permissions` "chat_visible", as getchats answers.
 */
export function visibleChat(core: ServiceCore, chat: Chat | undefined, caller: Caller, unknownExtra = 'invalid chat_id'): ChatAccess {
  const scope = seenScope(core, chat && core.store.groups.get(chat.groupId), caller, () => badRequest(unknownExtra));
  core.require(scope, 'chat_visible');
  return { chat: chat!, scope };
}

/** The same rule as a yes/no for a user, for what the chat hub delivers to sockets already open. */
export function canSeeChat(core: ServiceCore, chat: Chat, userId: string): boolean {
  const group = core.store.groups.get(chat.groupId);
  if (!group) return false;
  const sub = core.store.subscriptionOf(userId, group.id);
  return seesGroup(group, sub) && computePerms(group, sub).chat_visible;
}
