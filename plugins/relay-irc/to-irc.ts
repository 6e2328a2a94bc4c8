import type { Logger } from 'pino';
import { QueueFullError, type MsgNumMarks } from '../../src/index.js';
import type { OutgoingMessage } from '../../src/gateway/message.js';
import { textRoom } from './format.js';
import type { RelayOptions } from './options.js';
import type { Outbound } from './outbound.js';
import { renderForIrc } from './render.js';
import { ircLower, type Routes } from './routes.js';

/**
 * Gateway lines to IRC (the relay's endpoint.send): a line becomes attributed PRIVMSG texts in its
 * channel's durable queue. It only queues (a synchronous file write) and returns, so the gateway step
 * of the chain is never held up by IRC.
 *
 * Sent once: the core may hand the same line again after a crash (the chain runs again from the
 * cursor). The marks remember, per source chat AND channel, the last msg_num queued: the gateway step
 * runs in msg_num order, so anything at or below it was queued already. A line queued but not yet
 * marked when the crash came is still in the queue under its key.
 */
export class ToIrc {
  readonly counters = { relayed_messages: 0, queued_lines: 0, refused_queue_full: 0 };

  constructor(
    private readonly options: RelayOptions,
    private readonly routes: Routes,
    private readonly outbound: Outbound,
    private readonly marks: MsgNumMarks,
    private readonly log: Logger,
  ) {}

  send(channel: string, out: OutgoingMessage): void {
    const channelKey = ircLower(channel);
    const chatId = String(out.source.chat.id);
    const msgNum = out.source.message.msg_num;
    const mark = markKey(chatId, channelKey);
    if (this.marks.has(mark, msgNum) || this.outbound.holds(channelKey, out.key)) return;
    const texts = renderForIrc(out, this.routes.prefixFor(out.source.chat, channelKey), {
      template: this.options.formats.to_irc,
      antiPing: this.options.anti_ping,
      roomBytes: textRoom(this.options.nick, channel, this.options.max_line_bytes),
      maxLines: this.options.max_lines_per_message,
    });
    try {
      this.outbound.enqueue(channelKey, texts.map((text) => ({ src: `${chatId}:${msgNum}`, key: out.key, text })));
      this.counters.queued_lines += texts.length;
    } catch (error) {
      if (!(error instanceof QueueFullError)) throw error;
      this.counters.refused_queue_full += texts.length;
      this.log.error({ channel, chat: out.source.chat.subject, msgNum, lines: texts.length, reason: error.message },
        `IRC queue for ${channel} is full: message ${msgNum} of ${out.source.chat.subject} is NOT relayed`);
    }
    this.counters.relayed_messages += 1;
    this.marks.mark(mark, msgNum);
  }

  /** The chat's msg_nums start again: its marks, for every channel, must not hide the new messages. */
  chatReset(chatId: string, channelKeys: string[]): void {
    for (const channelKey of channelKeys) this.marks.reset(markKey(chatId, channelKey));
  }
}

/** The marks' key of a chat and channel (a space never occurs in a folded channel name). */
function markKey(chatId: string, channelKey: string): string {
  return `${chatId} ${channelKey}`;
}
