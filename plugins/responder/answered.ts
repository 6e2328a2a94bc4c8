import type { KeyValueStore } from '../../src/index.js';

/**
 * The messages the responder has answered, per chat, durably: the highest msg_num it answered (or
 * decided to answer). Messages of a chat reach the plugins in msg_num order, once — again only after a
 * crash or when history is replayed — so one number per chat covers every earlier message.
 *
 * The mark is written to disk (the store is flushed) before the first post of an answer is queued,
 * and the supervisor's outbox writes the post before ctx.reply() returns. So after a crash at any
 * moment a message is answered at most once: either the mark is on disk and the message is skipped,
 * or it is not and nothing was posted yet.
 */
export class AnsweredMarks {
  constructor(private readonly store: KeyValueStore) {}

  private key(chatId: string): string {
    return `answered:${chatId}`;
  }

  has(chatId: string, msgNum: number): boolean {
    return msgNum <= (this.store.get<number>(this.key(chatId)) ?? 0);
  }

  /** The chat's history was reset (msg_nums start again): no message of the new history is answered yet. */
  async reset(chatId: string): Promise<void> {
    if (this.store.get(this.key(chatId)) === undefined) return;
    this.store.delete(this.key(chatId));
    await this.store.flush();
  }

  async mark(chatId: string, msgNum: number): Promise<void> {
    if (this.has(chatId, msgNum)) return;
    this.store.set(this.key(chatId), msgNum);
    await this.store.flush();
  }
}
