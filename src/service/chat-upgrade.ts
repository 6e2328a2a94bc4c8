import type { IncomingMessage } from 'node:http';
import type { Caller } from './auth.js';
import { callerKey } from './caller-limits.js';
import type { ServiceCore } from './core.js';
import { badRequest, invalidValue, rateLimited } from './errors.js';
import type { Chat, ChatSub } from './model.js';
import { Params } from './params.js';
import { visibleChat } from './visibility.js';

/** What a granted upgrade carries to the accepted socket. */
export interface Accepted {
  caller: Caller;
  sub: ChatSub;
  chat: Chat;
  withHistory: boolean;
  limitKey: string;
}

/** Who may open a `chatdata` socket, and on which chat_sub: throws the ApiError the upgrade is refused with. */
export async function checkChatUpgrade(core: ServiceCore, request: IncomingMessage, url: URL): Promise<Accepted> {
  const delay = core.faults.delay();
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
  const injected = core.faults.errorFor('upgrade', 'chatdata');
  if (injected) throw injected;
  const key = callerKey(core, request.headers, request.socket.remoteAddress ?? '');
  const wait = core.upgradeLimiter.take(`upgrade ${key}`);
  if (wait > 0) throw rateLimited(wait);
  const caller = core.auth.authenticate({
    authorization: request.headers.authorization,
    cookieHeader: request.headers.cookie,
  });
  const params = new Params(Object.fromEntries(url.searchParams));
  core.auth.checkCsrf(caller, params.string('csrf'));
  const subId = params.string('chatsub_id');
  const sub = subId ? core.store.chatSubs.get(subId) : undefined;
  if (!sub || sub.userId !== caller.user.id) throw badRequest('invalid chatsub_id');
  // The same visibility as every chat operation: a chat_sub outlives a ban, a removal or a lost
  // chat_visible (chat_access), the stream does not.
  const { chat } = visibleChat(core, core.store.chats.get(sub.chatId), caller, 'invalid chatsub_id');
  if (chat.isClosed) throw badRequest('closed chat');
  let noHistory: boolean | undefined;
  try {
    noHistory = params.boolean('no_history');
  } catch {
    throw invalidValue('no_history');
  }
  return { caller, sub, chat, withHistory: !noHistory, limitKey: key };
}
