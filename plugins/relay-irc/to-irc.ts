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
 * cursor), or a relay may hand a line to the gateway again (a retry) and the gateway's intake hand it
 * on again. SentKeys remembers each line (by its key and channel, and a chat's line by its chat) once
 * queued; a line queued but not yet remembered when the crash came is still in the queue under the same id.
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
    const { chat, message } = out.source;
    const known = this.idsOf(channelKey, out);
    if (known.some((id) => this.sent.has(id) || this.outbound.holds(channelKey, id))) return;
    const id = known[0]!;
    const src = message && chat ? `${chat.id}:${message.msg_num}` : out.origin.endpoint;
    const texts = renderForIrc(out, chat ? this.routes.prefixFor(chat, channelKey) : '', {
      template: this.options.formats.to_irc,
      antiPing: this.options.anti_ping,
      roomBytes: textRoom(this.options.nick, channel, this.options.max_line_bytes),
      maxLines: this.options.max_lines_per_message,
    });
    try {
      const first = { line: out.key, ...(out.replyTo !== undefined ? { replyTo: out.replyTo } : {}) };
      this.outbound.enqueue(channelKey, texts.map((text, index) => ({ src, key: id, text, ...(index === 0 ? first : {}) })));
      this.counters.queued_lines += texts.length;
    } catch (error) {
      if (!(error instanceof QueueFullError)) throw error;
      this.counters.refused_queue_full += texts.length;
      // Name what was lost as a reader finds it: a chat's message by its number, a relay's line by its origin.
      const what = message && chat ? `message ${message.msg_num} of ${chat.subject}` : `a line from ${out.origin.endpoint}`;
      this.log.error({ channel, chat: chat?.subject, ...(message ? { msgNum: message.msg_num } : { origin: out.origin.endpoint }), src, lines: texts.length, reason: error.message },
        `IRC queue for ${channel} is full: ${what} is NOT relayed`);
    }
    // A refused line is remembered too: it was said loudly, and is not tried again.
    this.counters.relayed_messages += 1;
    this.sent.add(id);
  }

  /**
   * The ids a line is remembered by here, the one to remember first. A chat's line is its chat's (a
   * reset chat says new things under old keys). A line from another relay is known by its key alone,
   * the same whether it came from the gateway's intake or round the chat (which it did before the
   * intake handed such lines on, and may still for a line taken then: also looked for under its chat).
   */
  private idsOf(channelKey: string, out: OutgoingMessage): string[] {
    const chatId = out.source.chat === undefined ? '' : String(out.source.chat.id);
    if (out.origin.platform === 'chat') return [this.sent.idOf(chatId, channelKey, out.key)];
    const ids = [this.sent.idOf('', channelKey, out.key)];
    if (chatId !== '') ids.push(this.sent.idOf(chatId, channelKey, out.key));
    return ids;
  }

  /** The chat's history starts again: lines of its new messages are new, whatever their keys. */
  chatReset(chatId: string): void {
    this.sent.reset(chatId);
  }
}
