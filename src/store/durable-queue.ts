import { JsonLinesFile } from './json-lines-file.js';
import { FILE_STORAGE, type Journal, type Storage } from './storage.js';

export interface QueueOptions {
  /** Past this many items a push is refused (QueueFullError): bounded, never dropping silently. */
  maxItems?: number;
  /** Called once each time the queue passes this fraction of maxItems (default 0.8), for a loud warning. */
  onHighWater?: (size: number, maxItems: number) => void;
  highWater?: number;
  /** Where it is kept (default: files; Redis for workers, docs/scale-out.md). */
  storage?: Storage;
}

/** A push the queue could not take: it is full. Nothing was dropped; the caller decides. */
export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

/** Journal lines, at the least, before the file is rewritten with just the items waiting. */
const COMPACT_AFTER = 1000;

/**
 * One line of the queue's journal: items pushed, so many items taken from the front, or the queue's
 * note set (with a shift, or alone).
 */
type QueueEntry<T> = { push: T[] } | { shift: number; note?: unknown } | { note: unknown };

/**
 * A first-in first-out queue kept in a file, for relays that must not lose what they have not
 * delivered yet. Every change is appended to the file synchronously before the call returns (a
 * journal of JSON lines, see JsonLinesFile), so an item pushed is an item that survives a crash; the
 * file is rewritten with only the waiting items at open and every so often. Meant for queues of
 * thousands, not millions.
 *
 * A queue also keeps one small note, written in the same journal (so with the same durability, and in
 * the same append as a shift): what its owner must remember about delivery along with the items, such
 * as the server's id of the last item delivered, or that the head item's sending has begun.
 */
export class DurableQueue<T> {
  private items: T[] = [];
  private currentNote: unknown;
  private warned = false;

  private constructor(
    private readonly file: Journal | undefined,
    private readonly options: QueueOptions,
  ) {}

  static open<T>(path: string, options: QueueOptions = {}): DurableQueue<T> {
    const storage = options.storage ?? FILE_STORAGE;
    const { items, note } = DurableQueue.parse<T>(storage.readText(path), path);
    const queue = new DurableQueue<T>(storage.journal(path, DurableQueue.snapshot(items, note)), options);
    queue.items = items;
    queue.currentNote = note;
    return queue;
  }

  /** The items waiting in a queue's file, without opening it (tools and tests; the owner may be writing). */
  static read<T>(path: string): T[] {
    return DurableQueue.load<T>(path).items;
  }

  private static load<T>(path: string): { items: T[]; note: unknown } {
    return DurableQueue.parse<T>(JsonLinesFile.readText(path), path);
  }

  private static parse<T>(text: string, path: string): { items: T[]; note: unknown } {
    // Files written before the journal held the whole queue as one JSON array.
    if (text.startsWith('[')) {
      try {
        return { items: JSON.parse(text) as T[], note: undefined };
      } catch (error) {
        throw new Error(`${path}: unreadable queue (${(error as Error).message})`);
      }
    }
    const items: T[] = [];
    let note: unknown;
    for (const entry of JsonLinesFile.parse(text, path, 'queue') as Array<Partial<{ push: T[]; shift: number; note: unknown }> | null>) {
      const known = Array.isArray(entry?.push) || typeof entry?.shift === 'number' || (entry != null && 'note' in entry);
      if (!known) throw new Error(`${path}: unreadable queue (unknown entry ${JSON.stringify(entry).slice(0, 100)})`);
      if (Array.isArray(entry?.push)) items.push(...entry.push);
      if (typeof entry?.shift === 'number') items.splice(0, entry.shift);
      if (entry && 'note' in entry) note = entry.note;
    }
    return { items, note };
  }

  /** The journal of a queue holding just these items and this note. */
  private static snapshot<T>(items: T[], note: unknown): Array<QueueEntry<T>> {
    const entries: Array<QueueEntry<T>> = [];
    if (items.length > 0) entries.push({ push: items });
    if (note !== undefined) entries.push({ note });
    return entries;
  }

  /** A queue in memory only (tests). */
  static memory<T>(options: QueueOptions = {}): DurableQueue<T> {
    return new DurableQueue<T>(undefined, options);
  }

  get size(): number {
    return this.items.length;
  }

  get maxItems(): number {
    return this.options.maxItems ?? 100_000;
  }

  push(...items: T[]): void {
    if (this.items.length + items.length > this.maxItems) {
      throw new QueueFullError(`queue full (${this.items.length} of ${this.maxItems})`);
    }
    this.items.push(...items);
    this.write({ push: items });
    const mark = this.maxItems * (this.options.highWater ?? 0.8);
    if (this.items.length >= mark && !this.warned) {
      this.warned = true;
      this.options.onHighWater?.(this.items.length, this.maxItems);
    } else if (this.items.length < mark / 2) this.warned = false;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  /** The first `count` items, oldest first, without taking them. */
  head(count: number): T[] {
    return this.items.slice(0, count);
  }

  /**
   * Takes the first `count` items (after they were delivered). With a `note` (null clears it), the
   * queue's note becomes it in the same write: the items go and the note is set together, or neither.
   */
  shift(count = 1, note?: unknown): T[] {
    const taken = this.items.splice(0, count);
    if (note !== undefined) this.currentNote = note;
    if (taken.length > 0) this.write(note !== undefined ? { shift: taken.length, note } : { shift: taken.length });
    else if (note !== undefined) this.write({ note });
    return taken;
  }

  /** The queue's note (undefined until one is set; null once cleared). */
  get note(): unknown {
    return this.currentNote;
  }

  /** Sets the queue's note (written before this returns). */
  setNote(note: unknown): void {
    this.currentNote = note ?? null;
    this.write({ note: note ?? null });
  }

  /** Every item, oldest first. */
  all(): readonly T[] {
    return this.items;
  }

  private write(entry: QueueEntry<T>): void {
    if (!this.file) return;
    // Rewritten once the journal is long for what waits: amortized, each change is still one append.
    if (this.file.lines >= Math.max(COMPACT_AFTER, 2 * this.items.length)) this.file.rewrite(DurableQueue.snapshot(this.items, this.currentNote));
    else this.file.append(entry);
  }
}
