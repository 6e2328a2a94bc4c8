import { FILE_STORAGE, type Storage } from './storage.js';

/** A post the bot has to make. `sent` items wait for the service's history to show them. */
export interface OutboxItem {
  id: string;
  chatId: string;
  text: string;
  /**
   * queued → sent → done. A `done` post is kept (with what the service stored) only while the message
   * that caused it could be handed to the plugins again after a crash, so the repeat does not post twice.
   */
  state: 'queued' | 'sent' | 'done';
  /** The message being handled when the post was asked for (`<chat id> <msg_num>`), if any. */
  origin?: { chatId: string; msgNum: number };
  /** A line relayed by a gateway: its message-map record and what the post is there (see RelayTag). */
  relay?: { key: string; bus: boolean; first: boolean; part?: number };
  result?: unknown;
  queuedAt: number;
  /** The chat's cursor when it was sent: the post, once stored, has a greater msg_num. */
  sentAfter?: number;
}

/** What the file holds. Before 2026-11 it was the bare array of items (still read). */
interface OutboxDocument {
  items: OutboxItem[];
  /** Per chat id: the newest msg_num of the bot's that confirmed a post (see confirmedThrough). */
  confirmed?: Record<string, number>;
}

/**
 * A bot's outbox on disk. Replies are rare next to incoming messages, so every change is written
 * synchronously and atomically: a reply accepted is a reply that survives a crash.
 */
export class OutboxFile {
  private items: OutboxItem[] = [];
  private confirmed = new Map<string, number>();

  private constructor(private readonly path: string | undefined, private readonly storage: Storage = FILE_STORAGE) {}

  static open(path: string, storage: Storage = FILE_STORAGE): OutboxFile {
    const file = new OutboxFile(path, storage);
    const document = storage.readDocument<OutboxItem[] | OutboxDocument>(path, [], 'outbox');
    file.items = Array.isArray(document) ? document : document.items;
    if (!Array.isArray(document)) file.confirmed = new Map(Object.entries(document.confirmed ?? {}));
    return file;
  }

  static memory(): OutboxFile {
    return new OutboxFile(undefined);
  }

  forChat(chatId: string): OutboxItem[] {
    return this.items.filter((item) => item.chatId === chatId);
  }

  add(item: OutboxItem): void {
    this.items.push(item);
    this.save();
  }

  /** An item was changed in place (its state): write the file again. */
  changed(): void {
    this.save();
  }

  remove(id: string): void {
    this.items = this.items.filter((item) => item.id !== id);
    this.save();
  }

  /**
   * The newest msg_num that confirmed one of this chat's posts, by this process or an earlier one (0:
   * none yet). A post sent later is stored after it, so it is looked for past it: an own message the
   * previous holder of the outbox matched already is never taken for it.
   */
  confirmedThrough(chatId: string): number {
    return this.confirmed.get(chatId) ?? 0;
  }

  /** Raised with a confirmation; written with the item's change that follows (changed() or remove()). */
  noteConfirmed(chatId: string, msgNum: number): void {
    if (msgNum > this.confirmedThrough(chatId)) this.confirmed.set(chatId, msgNum);
  }

  /** The chat's history was reset: its msg_nums start again. Answers whether there was a mark (the caller writes the file). */
  forgetConfirmed(chatId: string): boolean {
    return this.confirmed.delete(chatId);
  }

  get size(): number {
    return this.items.length;
  }

  /** The origin chat's cursor passed these messages: their posts can no longer be asked for twice. */
  forgetDone(originChatId: string, cursor: number): void {
    // Called for every message handed on: most of the time there is nothing to forget.
    if (this.items.length === 0) return;
    const before = this.items.length;
    this.items = this.items.filter((item) =>
      !(item.state === 'done' && item.origin?.chatId === originChatId && item.origin.msgNum <= cursor));
    if (this.items.length !== before) this.save();
  }

  private save(): void {
    if (!this.path) return;
    const document: OutboxDocument = { items: this.items };
    if (this.confirmed.size > 0) document.confirmed = Object.fromEntries(this.confirmed);
    this.storage.writeDocument(this.path, document);
  }
}
