import type { Logger } from 'pino';
import type { ChatMessage, Id } from '../api/types.js';

/** What a ChatSequencer is given and what it hands on (sequencer.ts). */

export interface Delivery {
  /**
   * Arrived through history (the history sent on reconnect, a catch-up after a restart, or a gap fill),
   * not live.
   */
  backfilled: boolean;
  /** How old the message was when it arrived, by its `created` time. */
  ageMs: number;
  /** Its JSON text as the socket brought it (PluginContext.wire); undefined when read from history. */
  wire: string | undefined;
}

/** Why a chat's history is taken as new: see docs/protocol.md "History that goes backwards". */
export type ResetReason = 'behind' | 'recreated' | 'replaced';

export interface HistoryReset {
  reason: ResetReason;
  /** The cursor before (what the plugins' marks for the chat may still say). */
  previousCursor: number | undefined;
  /** The newest msg_num the service has, where known (0: the chat is empty). */
  newest: number | undefined;
}

export interface SequencerOptions {
  log: Logger;
  botUserId: Id;
  /** The last msg_num handed on, or undefined on a first start. */
  cursor: number | undefined;
  /** On a first start, hand on this many recent messages (0: start from now). */
  historyOnFirstStart: number;
  /** Messages with msg_num above `after`, oldest first, every page. */
  fetchAfter(after: number): AsyncIterable<ChatMessage>;
  /** The newest `count` messages, oldest first. */
  fetchLatest(count: number): Promise<ChatMessage[]>;
  /** Hands a message to the plugins; the next one waits for it. */
  deliver(message: ChatMessage, delivery: Delivery): Promise<void>;
  /** The bot's own message, found in the stream: offered to the outbox before it is handed on (marked as the bot's). */
  own(message: ChatMessage): void;
  /** Persists the cursor; called after each message. */
  saveCursor(msgNum: number): void;
  /**
   * The chat's history went backwards, or the chat is another one now: tell the plugins and reset what
   * is kept per msg_num. After it the cursor is 0 and the new history is handed on from its start.
   */
  reset?(reset: HistoryReset): Promise<void>;
  /**
   * Flow control: asked to stop reading frames when too many wait to be handed on, and to read again
   * once they are few. Frames then wait as bytes in TCP (at worst the service closes a socket too slow,
   * and the reconnect catches up exactly), not as parsed messages on the heap.
   */
  flow?: { pause(): void; resume(): void };
}
