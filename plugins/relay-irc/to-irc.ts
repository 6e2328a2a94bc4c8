import type { Logger } from 'pino';
import { QueueFullError } from '../../src/index.js';
import type { OutgoingMessage } from '../../src/gateway/message.js';
import { textRoom } from './format.js';
import type { RelayOptions } from './options.js';
import type { Outbound } from './outbound.js';
import { renderForIrc } from './render.js';
import { ircLower, type Routes } from './routes.js';
import type { SentKeys } from './sent-keys.js';

/**
 * Gateway lines to IRC (the relay's endpoint.send): a line becomes attributed PRIVMSG texts in its
 * channel's durable queue. It only queues (a synchronous file write) and returns, so the gateway step
 * of the chain is never held up by IRC.
 *
 * Sent once: the core may hand the same line again after a crash (the chain runs again from the
 * cursor). SentKeys remembers each line (by its key, channel and chat) once queued; a line queued but
 * not yet remembered when the crash came is still in the queue under the same id.
 */
export class ToIrc {
  readonly counters = { relayed_messages: 0, queued_lines: 0, refused_queue_full: 0 };

  constructor(
    private readonly options: RelayOptions,
    private readonly routes: Routes,
    private readonly outbound: Outbound,
    private readonly sent: SentKeys,
    private readonly log: Logger,
  ) {}

  send(channel: string, out: OutgoingMessage): void {
    const channelKey = ircLower(channel);
    const chatId = String(out.source.chat.id);
    const msgNum = out.source.message.msg_num;
    const id = this.sent.idOf(chatId, channelKey, out.key);
    if (this.sent.has(id) || this.outbound.holds(channelKey, id)) return;
    const texts = renderForIrc(out, this.routes.prefixFor(out.source.chat, channelKey), {
      template: this.options.formats.to_irc,
      antiPing: this.options.anti_ping,
      roomBytes: textRoom(this.options.nick, channel, this.options.max_line_bytes),
      maxLines: this.options.max_lines_per_message,
    });
    try {
      const first = { line: out.key, ...(out.replyTo !== undefined ? { replyTo: out.replyTo } : {}) };
      this.outbound.enqueue(channelKey, texts.map((text, index) => ({ src: `${chatId}:${msgNum}`, key: id, text, ...(index === 0 ? first : {}) })));
      this.counters.queued_lines += texts.length;
    } catch (error) {
      if (!(error instanceof QueueFullError)) throw error;
      this.counters.refused_queue_full += texts.length;
      this.log.error({ channel, chat: out.source.chat.subject, msgNum, lines: texts.length, reason: error.message },
        `IRC queue for ${channel} is full: message ${msgNum} of ${out.source.chat.subject} is NOT relayed`);
    }
    // A refused line is remembered too: it was said loudly, and is not tried again.
    this.counters.relayed_messages += 1;
    this.sent.add(id);
  }

  /** The chat's history starts again: lines of its new messages are new, whatever their keys. */
  chatReset(chatId: string): void {
    this.sent.reset(chatId);
  }
}
