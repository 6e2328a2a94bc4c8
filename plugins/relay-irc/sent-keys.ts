import { hash } from 'node:crypto';
import { join } from 'node:path';
import { DurableQueue, FILE_STORAGE, MsgNumMarks, type Storage } from '../../src/index.js';
import { IdDigests } from './id-digests.js';

/** Lines remembered, at most: far more than a chain can run again after a crash (it restarts at its cursor). */
const REMEMBERED = 20_000;

/**
 * The gateway lines already sent to IRC (or given up on), by their key and channel; a line still in its
 * channel's queue is known by the queue's key (ToIrc), and written here as it leaves it. The core may hand a line again
 * (the chain ran again after a crash) and it must go out once. Keys, not msg_nums: one chat message
 * can send several lines to one channel (an answer in parts, given only to IRC, then the message's own
 * line), and an answer may come after later messages were sent on.
 *
 * A journal of hashes (`sent-keys.json`, the oldest 1% dropped once REMEMBERED are kept) and the count of each
 * chat's history resets (`relayed.json`'s epochs): a reset chat's ids may be given again to new
 * messages, which then are not the lines sent before.
 */
export class SentKeys {
  /** Every id the journal holds, as digests (the journal keeps only the oldest of them in memory). */
  private readonly seen: IdDigests;

  private constructor(
    private readonly journal: DurableQueue<string>,
    private readonly resets: MsgNumMarks,
    private readonly max: number,
  ) {
    this.seen = new IdDigests(max);
    for (const id of journal.values()) this.seen.add(id);
  }

  static open(dataDir: string, storage: Storage = FILE_STORAGE, max = REMEMBERED): SentKeys {
    return new SentKeys(DurableQueue.open<string>(join(dataDir, 'sent-keys.json'), { maxItems: max, storage }), MsgNumMarks.open(join(dataDir, 'relayed.json'), storage), max);
  }

  /** The id a line is remembered by: its key, channel, chat and the chat's resets, hashed. */
  idOf(chatId: string, channelKey: string, key: string): string {
    const epoch = this.resets.epoch(chatId);
    // crypto.hash: one call, no Hash object (a gateway line computes two ids before it is queued).
    return hash('sha256', `${chatId}\u0000${epoch}\u0000${channelKey}\u0000${key}`, 'base64url').slice(0, 22);
  }

  has(id: string): boolean {
    return this.seen.has(id);
  }

  /** Remembers a line by its id (written before it returns). */
  add(id: string): void {
    this.addAll([id]);
  }

  /** Remembers lines by their ids, those not known yet in one append (written before it returns). */
  addAll(ids: readonly string[]): void {
    const fresh = [...new Set(ids)].filter((id) => !this.seen.has(id));
    if (fresh.length === 0) return;
    if (this.journal.size + fresh.length > this.max) {
      // 1% at once: a shift moves the items after it, and one at a time would move all 20,000 at every line.
      const room = Math.max(fresh.length, Math.floor(this.max / 100));
      for (const old of this.journal.shift(Math.min(this.journal.size, this.journal.size - this.max + room))) this.seen.delete(old);
    }
    this.journal.push(...fresh);
    for (const id of fresh) this.seen.add(id);
  }

  /**
   * The chat's history was reset: what it says from now on is new, whatever its ids. (MsgNumMarks
   * counts a reset only for a chat it has a mark for, hence the mark first.)
   */
  reset(chatId: string): void {
    this.resets.mark(chatId, 1);
    this.resets.reset(chatId);
  }
}
