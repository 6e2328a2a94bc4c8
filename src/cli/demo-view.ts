import { terminalText } from './terminal-text.js';
import { CHAT_MSG_CLOSED } from '../service/chat-messages.js';
import { chatLine } from './chat-line.js';
import type { LocalService } from '../service/local-service.js';
import type { Chat, ChatMessage } from '../service/model.js';

/**
 * The demo terminal's view of the conversation: every line of every chat of the embedded service, as
 * a chat client shows it (time, chat, name). It listens inside the service rather than on a member's
 * chat socket: a socket does not echo its member's own posts, and covers one chat only.
 */
export class DemoView {
  private readonly onMessage = (message: ChatMessage, chat: Chat) => this.write(this.line(message, chat));

  constructor(
    private readonly service: LocalService,
    private readonly write: (line: string) => void,
  ) {}

  /** Shows every new line from now on. */
  start(): void {
    this.service.core.events.on('chat-message', this.onMessage);
  }

  stop(): void {
    this.service.core.events.off('chat-message', this.onMessage);
  }

  /** The last lines of each open chat, as a client shows them when the chat is opened. */
  showRecent(perChat: number): void {
    for (const chat of this.service.core.store.chats.values()) {
      if (chat.isClosed) continue;
      const recent = (this.service.core.store.chatMessages.get(chat.id) ?? []).slice(-perChat);
      for (const message of recent) this.write(this.line(message, chat));
    }
  }

  private line(message: ChatMessage, chat: Chat): string {
    const where = `  [${clockTime(message.created)}] #${terminalText(chat.subject)}`;
    if (message.type === CHAT_MSG_CLOSED) return chatLine(`${where} -- `, message.message);
    const user = this.service.core.store.users.get(message.userId);
    return chatLine(`${where} <${terminalText(user?.fullName || user?.userName || message.userId)}> `, message.message);
  }
}

/** HH:MM:SS in the terminal's time zone (TZ), as a chat client shows times. */
function clockTime(ms: number): string {
  const date = new Date(ms);
  return [date.getHours(), date.getMinutes(), date.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}
