import type { Caller } from '../auth.js';
import { CHAT_MSG_CLOSED, postChatMessage } from '../chat-messages.js';
import type { ServiceCore } from '../core.js';
import { badRequest, noPermission } from '../errors.js';
import type { Chat } from '../model.js';
import { afterMsgNum } from '../msg-num.js';
import { defineOp, EMPTY_OK, type Operation } from '../operation.js';
import { listView, type SortSpec } from '../paging.js';
import type { Params } from '../params.js';
import { seenGroupScope, visibleChat, type ChatAccess } from '../visibility.js';

/** Our decisions: a subject is 1 to 255 characters after trimming; desc is required, at most 64 KiB. */
const MAX_SUBJECT = 255;
const MAX_DESC = 65_536;

const CHAT_SORT: SortSpec<Chat> = {
  fields: { id: (c) => c.seq, created: (c) => c.created, updated: (c) => c.updated, subject: (c) => c.subject },
  defaultField: 'created',
  defaultDir: 'desc',
};

/** The chat a call names, through the one visibility check every chat operation makes (visibility.ts). */
function chatFrom(core: ServiceCore, params: Params, caller: Caller): ChatAccess {
  return visibleChat(core, core.store.chats.get(params.requiredId('chat_id')), caller);
}

function validSubject(params: Params, required: boolean): string | undefined {
  const subject = params.string('subject');
  if (subject === undefined && !required) return undefined;
  const trimmed = subject?.trim() ?? '';
  if (trimmed === '' || trimmed.length > MAX_SUBJECT) throw badRequest('invalid subject');
  return trimmed;
}

function validDesc(params: Params, required: boolean): string | undefined {
  const desc = params.string('desc');
  if (desc === undefined && !required) return undefined;
  if (desc === undefined || Buffer.byteLength(desc) > MAX_DESC) throw badRequest('invalid desc');
  return desc;
}

function requireChatOwner(chat: Chat, userId: string): void {
  if (chat.userId !== userId) throw noPermission('chat owner');
}

export const chatOperations: Operation[] = [
  defineOp('newchat', 'POST', ({ core, params, caller }) => {
    const scope = seenGroupScope(core, params, caller);
    core.require(scope, 'manage_chats');
    const subject = validSubject(params, true)!;
    const desc = validDesc(params, true)!;
    const now = core.now();
    const chat = core.store.addChat({
      groupId: scope.group.id, userId: caller.user.id, subject, desc, isClosed: false, created: now, updated: now,
    });
    core.store.addChatSub({
      chatId: chat.id, groupId: chat.groupId, userId: caller.user.id, lastMsgSeen: 0, created: now, updated: now,
    });
    core.activity.record(scope.group, 'chat_created', caller.user, `created the chat "${subject}"`);
    return core.present.chat(chat, caller.user.id);
  }),

  defineOp('updatechat', 'POST', ({ core, params, caller }) => {
    // Ownership counts only while the owner still sees the chat: a banned or removed owner has no power.
    const { chat, scope } = chatFrom(core, params, caller);
    requireChatOwner(chat, caller.user.id);
    const subject = validSubject(params, false);
    const desc = validDesc(params, false);
    const isClosed = params.boolean('is_closed');
    const group = scope.group;
    if (subject !== undefined) chat.subject = subject;
    if (desc !== undefined) chat.desc = desc;
    chat.updated = core.now();
    core.store.touch();
    if (isClosed === true && !chat.isClosed) {
      chat.isClosed = true;
      // The closing notice is part of the history, so a client that reconnects later still sees it.
      postChatMessage(core, chat, caller.user, 'This chat has been closed.', CHAT_MSG_CLOSED);
      core.events.emit('chat-closed', chat);
      core.activity.record(group, 'chat_closed', caller.user, `closed the chat "${chat.subject}"`);
    } else if (isClosed === false && chat.isClosed) {
      chat.isClosed = false;
      core.activity.record(group, 'chat_reopened', caller.user, `reopened the chat "${chat.subject}"`);
    } else if (subject !== undefined || desc !== undefined) {
      core.activity.record(group, 'chat_updated', caller.user, `updated the chat "${chat.subject}"`);
    }
    return core.present.chat(chat, caller.user.id);
  }),

  defineOp('getchats', 'GET', ({ core, params, caller }) => {
    const scope = seenGroupScope(core, params, caller);
    core.require(scope, 'chat_visible');
    const showClosed = params.boolean('show_closed') ?? false;
    const chats = [...core.store.chats.values()].filter(
      (chat) => chat.groupId === scope.group.id && chat.isClosed === showClosed,
    );
    const page = core.pager.page(chats, params, CHAT_SORT, `getchats ${caller.user.id} ${scope.group.id} ${showClosed}`);
    return listView(page, page.items.map((chat) => core.present.chat(chat, caller.user.id)));
  }),

  defineOp('deletechat', 'POST', ({ core, params, caller }) => {
    const { chat, scope } = chatFrom(core, params, caller);
    requireChatOwner(chat, caller.user.id);
    core.store.removeChat(chat);
    core.events.emit('chat-deleted', chat);
    core.activity.record(scope.group, 'chat_deleted', caller.user, `deleted the chat "${chat.subject}"`);
    return EMPTY_OK;
  }),

  defineOp('joinchat', 'POST', ({ core, params, caller }) => {
    const { chat, scope } = chatFrom(core, params, caller);
    if (chat.isClosed) throw badRequest('closed chat');
    if (core.store.chatSubOf(caller.user.id, chat.id)) throw badRequest('already subscribed');
    const now = core.now();
    const sub = core.store.addChatSub({
      chatId: chat.id, groupId: chat.groupId, userId: caller.user.id, lastMsgSeen: 0, created: now, updated: now,
    });
    core.activity.record(scope.group, 'chat_joined', caller.user, `joined the chat "${chat.subject}"`);
    return core.present.chatSub(sub);
  }),

  defineOp('leavechat', 'POST', ({ core, params, caller }) => {
    const sub = core.store.chatSubs.get(params.requiredId('chatsub_id'));
    if (!sub) throw badRequest('invalid chatsub_id');
    // Someone else's chat_sub in a chat the caller may not see answers as an unknown one.
    const { chat, scope } = visibleChat(core, core.store.chats.get(sub.chatId), caller, 'invalid chatsub_id');
    if (sub.userId !== caller.user.id) throw noPermission('chat_sub owner');
    core.store.removeChatSub(sub);
    core.events.emit('chat-sub-removed', sub);
    core.activity.record(scope.group, 'chat_left', caller.user, `left the chat "${chat.subject}"`);
    return EMPTY_OK;
  }),

  defineOp('getchathistory', 'GET', ({ core, params, caller }) => {
    const { chat } = chatFrom(core, params, caller);
    const history = core.store.chatMessages.get(chat.id) ?? [];
    const after = params.integer('start_msg_num', 0);
    const messages = after === undefined ? history : afterMsgNum(history, after);
    const page = core.pager.page(messages, params, {
      fields: { msg_num: (m) => m.msgNum, created: (m) => m.created, id: (m) => m.seq },
      defaultField: 'msg_num',
      defaultDir: 'desc',
    }, `getchathistory ${caller.user.id} ${chat.id}`);
    return listView(page, page.items.map((message) => core.present.chatMessage(message)));
  }),
];
