import type { ServiceCore } from './core.js';
import type { Chat, ChatMessage, User } from './model.js';

/** Our decision (docs/protocol.md): the `type` of an ordinary chat message. */
export const CHAT_MSG_NORMAL = 'chat_msg_type_normal';
/** From the spec: the message sent when a chat is closed. */
export const CHAT_MSG_CLOSED = 'chat_msg_type_closed';
/** Our decision: the longest chat message the service accepts, in characters. */
export const MAX_CHAT_MESSAGE_LENGTH = 10_000;

/** Stores a chat message with the chat's next msg_num and hands it to the open sockets. */
export function postChatMessage(core: ServiceCore, chat: Chat, user: User, text: string, type = CHAT_MSG_NORMAL): ChatMessage {
  const history = core.store.chatMessages.get(chat.id) ?? [];
  const message = core.store.addChatMessage({
    chatId: chat.id,
    groupId: chat.groupId,
    userId: user.id,
    type,
    message: text,
    msgNum: (history.at(-1)?.msgNum ?? 0) + 1,
    version: 1,
    created: core.now(),
  });
  chat.updated = message.created;
  core.events.emit('chat-message', message, chat);
  return message;
}
