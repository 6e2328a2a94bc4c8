import { readSync, openSync, closeSync } from 'node:fs';
import { JsonLinesFile } from './json-lines-file.js';
import { QueueFile, type QueueEntry } from './queue-file.js';
import { FILE_STORAGE, type Journal, type Storage } from './storage.js';

/** A DurableQueue's bound, where it is stored, and its warnings as it fills. */
export interface QueueOptions<T = unknown> {
  /** Past this many items a push is refused (QueueFullError): bounded, never dropping silently. */
  maxItems?: number;
  /** Called once each time the queue passes this fraction of maxItems (default 0.8), for a loud warning. */
  onHighWater?: (size: number, maxItems: number) => void;
  highWater?: number;
  /** Where it is kept (default: files; Redis for workers, docs/scale-out.md). */
  storage?: Storage;
  /**
   * A key per item (say its gateway line's): hasKey() then answers whether an item of that key waits
   * without a pass over the queue (a line handed on again after a crash is looked up per line).
   */
  keyOf?: (item: T) => string;
  /** The clock of queuedAt (tests). */
  now?: () => number;
  /**
   * Items kept in memory from the head (files storage only; default DEFAULT_WINDOW): the rest wait in
   * the journal alone and are read back a batch at a time as the head drains. Infinity keeps them all
   * (a queue whose owner reads it at random, bounded by maxItems). Redis storage keeps every item in memory.
   */
  window?: number;
}

/** Items of a file-backed queue held in memory, from the head (#32 part 3, docs/operations.md "Backlogs"). */
export const DEFAULT_WINDOW = 1000;

/**
 * What a queue says of its backlog (#32 part 3), read in O(1): how many items wait, when the oldest was
 * pushed, and the items pushed and taken since the queue was opened (a rate is their change over time).
 */
export interface QueueBacklog {
  depth: number;
  /** When the oldest waiting item was pushed (ms since the epoch; the open's time for items of files without it). */
  oldestAt: number | undefined;
  pushed: number;
  taken: number;
}

/** A push the queue could not take: it is full. Nothing was dropped; the caller decides. */
export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

/** Journal lines, at the least, before the file is rewritten with just the items waiting. */
const COMPACT_AFTER = 1000;

/** Taken items leave the front of the array in place; it is cut once this many (and half of it) are gone. */
const CUT_AFTER = 1024;

/**
 * A first-in first-out queue kept in a file, for relays that must not lose what they have not
 * delivered yet. Every change is appended to the file synchronously before the call returns (a
 * journal of JSON lines, see JsonLinesFile), so an item pushed is an item that survives a crash; the
 * file is rewritten with only the waiting items once the journal is twice as long as they are (and
 * at least COMPACT_AFTER lines). A push or a shift costs the same at 50,000 waiting as at 10 (#32 part
 * 3): one line appended, no pass over the items (a shift moves an index; hasKey() is a look-up), and the
 * rewrites, amortised, at most one item's line per change.
 *
 * Memory (files storage): at most `window` items from the head are held (QueueFile keeps the rest in
 * the journal and reads the next batch once fewer than half the window remain), plus the newest item
 * and, with keyOf, a count per key of every waiting item (docs/operations.md "Backlogs"). Other
 * storages hold every waiting item (maxItems bounds them).
 *
 * A queue also keeps one small note, written in the same journal (so with the same durability, and in
 * the same append as a shift): what its owner must remember about delivery along with the items, such
 * as the server's id of the last item delivered, or that the head item's sending has begun.
 */
export class DurableQueue<T> {
  /** The items in memory are items[start..]: a shift moves `start`, the array is cut now and then (amortised O(1)). */
  private items: T[] = [];
  /** When each item was pushed (ms since the epoch), beside items. */
  private times: number[] = [];
  private start = 0;
  /** The newest waiting item (it may be on disk only). */
  private tail: T | undefined;
  private currentNote: unknown;
  private warned = false;
  private readonly keys = new Map<string, number>();
  private pushed = 0;
  private taken = 0;
  private readonly window: number;

  private constructor(
    /** A journal holding every waiting item in memory (Redis, tests), or a windowed file. */
    private readonly file: Journal | QueueFile<T> | undefined,
    private readonly options: QueueOptions<T>,
  ) {
    this.window = file instanceof QueueFile ? Math.max(2, options.window ?? DEFAULT_WINDOW) : Number.POSITIVE_INFINITY;
  }

  /** Opens the queue journalled at `path` (made when missing), with the items that were waiting when it was last used. */
  static open<T>(path: string, options: QueueOptions<T> = {}): DurableQueue<T> {
    const storage = options.storage ?? FILE_STORAGE;
    const now = (options.now ?? Date.now)();
    if (storage === FILE_STORAGE) return DurableQueue.openFile(path, options, now);
    const { items, times, note } = DurableQueue.parse<T>(storage.readText(path), path, now);
    const queue = new DurableQueue<T>(storage.journal(path, DurableQueue.snapshot(items, times, note)), options);
    queue.items = items;
    queue.times = times;
    queue.tail = items.at(-1);
    queue.currentNote = note;
    for (const item of items) queue.countKey(item, 1);
    return queue;
  }

  /** A queue in a file, read line by line: the window's items from the head are held, the rest stays on disk. */
  private static openFile<T>(path: string, options: QueueOptions<T>, now: number): DurableQueue<T> {
    const window = Math.max(2, options.window ?? DEFAULT_WINDOW);
    const tail: { item?: T } = {};
    const keys = new Map<string, number>();
    let opened: { file: QueueFile<T>; head: { items: T[]; times: number[] }; note: unknown };
    if (DurableQueue.firstByte(path) === '[') {
      // Files written before the journal held the whole queue as one JSON array: read whole, once.
      const { items, times } = DurableQueue.parse<T>(JsonLinesFile.readText(path), path, now);
      opened = { file: QueueFile.create(path, { items, times }, undefined), head: { items, times }, note: undefined };
      tail.item = items.at(-1);
    } else {
      opened = QueueFile.open<T>(path, now, window, (item) => {
        tail.item = item;
        DurableQueue.count(keys, options.keyOf, item, 1);
      });
    }
    const queue = new DurableQueue<T>(opened.file, options);
    queue.items = opened.head.items;
    queue.times = opened.head.times;
    queue.tail = tail.item;
    queue.currentNote = opened.note;
    if (keys.size > 0) for (const [key, count] of keys) queue.keys.set(key, count);
    else for (const item of queue.items) queue.countKey(item, 1);
    return queue;
  }

  private static firstByte(path: string): string | undefined {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return undefined;
    }
    try {
      const byte = Buffer.alloc(1);
      return readSync(fd, byte, 0, 1, 0) === 1 ? byte.toString('latin1') : undefined;
    } finally {
      closeSync(fd);
    }
  }

  /** The items waiting in a queue's file, without opening it (tools and tests; the owner may be writing). */
  static read<T>(path: string): T[] {
    return DurableQueue.parse<T>(JsonLinesFile.readText(path), path, 0).items;
  }

  private static parse<T>(text: string, path: string, now: number): { items: T[]; times: number[]; note: unknown } {
    // Files written before the journal held the whole queue as one JSON array.
    if (text.startsWith('[')) {
      try {
        const items = JSON.parse(text) as T[];
        return { items, times: items.map(() => now), note: undefined };
      } catch (error) {
        throw new Error(`${path}: unreadable queue (${(error as Error).message})`);
      }
    }
    let items: T[] = [];
    let times: number[] = [];
    let start = 0;
    let note: unknown;
    for (const entry of JsonLinesFile.parse(text, path, 'queue') as Array<Partial<{ push: T[]; at: number; shift: number; note: unknown }> | null>) {
      const known = Array.isArray(entry?.push) || typeof entry?.shift === 'number' || (entry != null && 'note' in entry);
      if (!known) throw new Error(`${path}: unreadable queue (unknown entry ${JSON.stringify(entry).slice(0, 100)})`);
      if (Array.isArray(entry?.push)) {
        const at = typeof entry.at === 'number' ? entry.at : now;
        for (const item of entry.push) {
          items.push(item);
          times.push(at);
        }
      }
      if (typeof entry?.shift === 'number') start = Math.min(items.length, start + entry.shift);
      if (entry && 'note' in entry) note = entry.note;
      // A long journal of pushes and shifts is not replayed at O(n) a shift: the front is cut now and then.
      if (start >= CUT_AFTER && 2 * start >= items.length) {
        items = items.slice(start);
        times = times.slice(start);
        start = 0;
      }
    }
    return { items: items.slice(start), times: times.slice(start), note };
  }

  /**
   * The journal of a queue holding just these items and this note: a push line per run of items pushed
   * at the same time (so each keeps its time).
   */
  private static snapshot<T>(items: readonly T[], times: readonly number[], note: unknown): Array<QueueEntry<T>> {
    const entries: Array<QueueEntry<T>> = [];
    let from = 0;
    for (let index = 1; index <= items.length; index += 1) {
      if (index < items.length && times[index] === times[from]) continue;
      entries.push({ push: items.slice(from, index), at: times[from]! });
      from = index;
    }
    if (note !== undefined) entries.push({ note });
    return entries;
  }

  /** A queue in memory only (tests). */
  static memory<T>(options: QueueOptions<T> = {}): DurableQueue<T> {
    return new DurableQueue<T>(undefined, options);
  }

  /** Items waiting, in memory and on disk. */
  get size(): number {
    return this.inMemory + this.onDisk;
  }

  /** Waiting items held in memory (at most the window, but for a file of an earlier version read whole). */
  get inMemory(): number {
    return this.items.length - this.start;
  }

  /** Waiting items kept in the journal only. */
  private get onDisk(): number {
    return this.file instanceof QueueFile ? this.file.onDisk : 0;
  }

  /** The bound past which push() refuses (QueueOptions.maxItems, default 100,000). */
  get maxItems(): number {
    return this.options.maxItems ?? 100_000;
  }

  /** Its depth, the oldest item's time and the counts pushed and taken: read without a pass over the items. */
  get backlog(): QueueBacklog {
    return { depth: this.size, oldestAt: this.size > 0 ? this.times[this.start] : undefined, pushed: this.pushed, taken: this.taken };
  }

  /** Appends items, written to the journal before this returns; throws QueueFullError past maxItems rather than drop any. */
  push(...items: T[]): void {
    if (this.size + items.length > this.maxItems) {
      throw new QueueFullError(`queue full (${this.size} of ${this.maxItems})`);
    }
    const at = (this.options.now ?? Date.now)();
    const entry: QueueEntry<T> = { push: items, at };
    // Written first: the line's offset is where the items past the window are found again.
    const offset = this.file instanceof QueueFile ? this.file.append(entry) : -1;
    items.forEach((item, index) => {
      if (this.file instanceof QueueFile && (this.file.onDisk > 0 || this.inMemory >= this.window)) this.file.addOnDisk(offset, index);
      else {
        this.items.push(item);
        this.times.push(at);
      }
      this.countKey(item, 1);
    });
    if (items.length > 0) this.tail = items.at(-1);
    this.pushed += items.length;
    this.write(entry);
    const mark = this.maxItems * (this.options.highWater ?? 0.8);
    if (this.size >= mark && !this.warned) {
      this.warned = true;
      this.options.onHighWater?.(this.size, this.maxItems);
    } else if (this.size < mark / 2) this.warned = false;
  }

  /** The oldest item, left in the queue (undefined when empty). */
  peek(): T | undefined {
    return this.items[this.start];
  }

  /** The newest item. */
  last(): T | undefined {
    return this.size > 0 ? this.tail : undefined;
  }

  /** The first `count` items, oldest first, without taking them. */
  head(count: number): T[] {
    return this.range(0, count);
  }

  /** `count` items from the `from`th waiting one (0: the oldest), without taking them (past the window: read from the journal). */
  range(from: number, count: number): T[] {
    const begin = this.start + Math.max(0, from);
    const end = begin + Math.max(0, count);
    const found = this.items.slice(begin, Math.min(this.items.length, end));
    if (end <= this.items.length || !(this.file instanceof QueueFile) || this.file.onDisk === 0) return found;
    let index = this.items.length;
    for (const item of this.file.values()) {
      if (index >= end) break;
      if (index >= begin) found.push(item);
      index += 1;
    }
    return found;
  }

  /** Whether an item of this key (options.keyOf) waits: a look-up, not a pass. */
  hasKey(key: string): boolean {
    if (!this.options.keyOf) throw new Error('hasKey() needs the queue\'s keyOf option');
    return this.keys.has(key);
  }

  /**
   * Takes the first `count` items (after they were delivered). With a `note` (null clears it), the
   * queue's note becomes it in the same write: the items go and the note is set together, or neither.
   */
  shift(count = 1, note?: unknown): T[] {
    const taken = this.head(count);
    // Items past the window (a shift longer than what is in memory) are read back before they go.
    if (taken.length > this.inMemory) this.refill(taken.length - this.inMemory);
    this.start += taken.length;
    for (const item of taken) this.countKey(item, -1);
    this.taken += taken.length;
    if (this.start >= CUT_AFTER && 2 * this.start >= this.items.length) this.cut();
    if (note !== undefined) this.currentNote = note;
    if (taken.length > 0) this.write(note !== undefined ? { shift: taken.length, note } : { shift: taken.length });
    else if (note !== undefined) this.write({ note });
    if (this.onDisk > 0 && this.inMemory < this.window / 2) this.refill(this.window - this.inMemory);
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

  /** The items, oldest first, one at a time (no copy; past the window read from the journal; do not change the queue while iterating). */
  *values(): IterableIterator<T> {
    for (let index = this.start; index < this.items.length; index += 1) yield this.items[index]!;
    if (this.file instanceof QueueFile) yield* this.file.values();
  }

  /**
   * The queue's owner stops: a journal file's descriptor, kept open while appends come, is let go now
   * rather than after a second without one. Nothing else changes: a change after it opens the file again.
   */
  close(): void {
    if (this.file instanceof QueueFile) this.file.close();
  }

  /** Every item, oldest first (the array is cut to them first: call it at open or rarely, not per item; past the window, a copy). */
  all(): readonly T[] {
    if (this.onDisk > 0) return [...this.values()];
    if (this.start > 0) this.cut();
    return this.items;
  }

  /** Reads up to `count` more items from the journal into memory. */
  private refill(count: number): void {
    if (!(this.file instanceof QueueFile)) return;
    const more = this.file.take(count);
    if (this.start > 0) this.cut();
    for (let index = 0; index < more.items.length; index += 1) {
      this.items.push(more.items[index]!);
      this.times.push(more.times[index]!);
    }
  }

  /** Drops the taken items from the front of the arrays. */
  private cut(): void {
    this.items = this.items.slice(this.start);
    this.times = this.times.slice(this.start);
    this.start = 0;
  }

  private countKey(item: T, change: 1 | -1): void {
    DurableQueue.count(this.keys, this.options.keyOf, item, change);
  }

  private static count<T>(keys: Map<string, number>, keyOf: ((item: T) => string) | undefined, item: T, change: 1 | -1): void {
    if (!keyOf) return;
    const key = keyOf(item);
    const count = (keys.get(key) ?? 0) + change;
    if (count > 0) keys.set(key, count);
    else keys.delete(key);
  }

  /** Writes a change (a push's line is already appended to a windowed file), rewriting the journal once it is long for what waits. */
  private write(entry: QueueEntry<T>): void {
    if (!this.file) return;
    const long = this.file.lines >= Math.max(COMPACT_AFTER, 2 * this.size);
    if (this.file instanceof QueueFile) {
      if (!('push' in entry)) this.file.append(entry);
      if (long) {
        if (this.start > 0) this.cut();
        this.file.compact({ items: this.items, times: this.times }, this.currentNote);
      }
      return;
    }
    // Rewritten once the journal is long for what waits: amortized, each change is still one append.
    if (long) {
      if (this.start > 0) this.cut();
      this.file.rewrite(DurableQueue.snapshot(this.items, this.times, this.currentNote));
    }
    else this.file.append(entry);
  }
}
