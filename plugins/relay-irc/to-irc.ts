import type { Logger } from 'pino';
import { QueueFullError, type ChatInfo, type ChatMessage, type MsgNumMarks } from '../../src/index.js';
import { chatToIrcLines, textRoom } from './format.js';
import type { RelayOptions } from './options.js';
import type { Outbound } from './outbound.js';
import type { Routes } from './routes.js';

/** The only chat messages relayed: what members say (not "chat closed" notes or types added later). */
const NORMAL = 'chat_msg_type_normal';

/**
 * Chat to IRC: a chat message becomes attributed PRIVMSG texts in its channel's durable queue. It only
 * queues (a synchronous file write) and returns, so the plugin chain is never held up by IRC.
 */
export class ChatToIrc {
  readonly counters = { relayed_messages: 0, queued_lines: 0, refused_queue_full: 0 };

  constructor(
    private readonly options: RelayOptions,
    private readonly routes: Routes,
    private readonly outbound: Outbound,
    private readonly marks: MsgNumMarks,
    private readonly log: Logger,
  ) {}

  relay(message: ChatMessage, chat: ChatInfo): void {
    const routes = this.routes.forChat(chat);
    const chatId = String(chat.id);
    if (routes.length === 0 || message.type !== NORMAL || this.marks.has(chatId, message.msg_num)) return;
    const src = `${chatId}:${message.msg_num}`;
    for (const route of routes) {
      if (this.outbound.holds(route.channelKey, src)) continue;
      const texts = chatToIrcLines(message, route.prefix, {
        template: this.options.formats.to_irc,
        antiPing: this.options.anti_ping,
        roomBytes: textRoom(this.options.nick, route.channel, this.options.max_line_bytes),
        maxLines: this.options.max_lines_per_message,
      });
      try {
        this.outbound.enqueue(route.channelKey, texts.map((text) => ({ src, text })));
        this.counters.queued_lines += texts.length;
      } catch (error) {
        if (!(error instanceof QueueFullError)) throw error;
        this.counters.refused_queue_full += texts.length;
        this.log.error({ channel: route.channel, chat: chat.subject, msgNum: message.msg_num, lines: texts.length, reason: error.message },
          `IRC queue for ${route.channel} is full: message ${message.msg_num} of ${chat.subject} is NOT relayed`);
      }
    }
    this.counters.relayed_messages += 1;
    this.marks.mark(chatId, message.msg_num);
  }
}
