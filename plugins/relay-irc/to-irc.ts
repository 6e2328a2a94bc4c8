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
 * on again. A line is known by its id (its key and channel, and a chat's line by its chat): while it
 * waits, as the key of its lines in the channel's queue; once they leave the queue (delivered, or given
 * up on), in SentKeys, written just before the queue forgets them (Outbound's `remember`). So the one
 * append in the way of a line's IRC write is its queue's (#32 part 1); a crash at any point leaves the
 * id in the queue, in SentKeys, or in both. A line with nothing to send, or refused by a full queue,
 * is remembered in SentKeys at once.
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
    if (texts.length === 0) {
      this.counters.relayed_messages += 1;
      this.sent.add(id);
      return;
    }
    try {
      const first = { line: out.key, ...(out.replyTo !== undefined ? { replyTo: out.replyTo } : {}) };
      // Queued under its id: the queue's key says it is known until it leaves, and the outbound
      // remembers it in SentKeys then (OutboundSettings.remember), after it went out, not before.
      this.outbound.enqueue(channelKey, texts.map((text, index) => ({ src, key: id, text, ...(index === 0 ? first : {}) })));
      this.counters.queued_lines += texts.length;
    } catch (error) {
      if (!(error instanceof QueueFullError)) throw error;
      this.counters.refused_queue_full += texts.length;
      // Name what was lost as a reader finds it: a chat's message by its number, a relay's line by its origin.
      const what = message && chat ? `message ${message.msg_num} of ${chat.subject}` : `a line from ${out.origin.endpoint}`;
      this.log.error({ channel, chat: chat?.subject, ...(message ? { msgNum: message.msg_num } : { origin: out.origin.endpoint }), src, lines: texts.length, reason: error.message },
        `IRC queue for ${channel} is full: ${what} is NOT relayed`);
      // A refused line is remembered at once: it was said loudly, and is not tried again.
      this.sent.add(id);
    }
    this.counters.relayed_messages += 1;
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
