import { readJsonFileSync, writeJsonFileSync } from './json-file-sync.js';

export interface QueueOptions {
  /** Past this many items a push is refused (QueueFullError): bounded, never dropping silently. */
  maxItems?: number;
  /** Called once each time the queue passes this fraction of maxItems (default 0.8), for a loud warning. */
  onHighWater?: (size: number, maxItems: number) => void;
  highWater?: number;
}

/** A push the queue could not take: it is full. Nothing was dropped; the caller decides. */
export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

/**
 * A first-in first-out queue kept in a file, for relays that must not lose what they have not
 * delivered yet. Every change is written synchronously and atomically (write, then rename), so an
 * item pushed is an item that survives a crash. Meant for queues of thousands, not millions.
 */
export class DurableQueue<T> {
  private items: T[] = [];
  private warned = false;

  private constructor(
    private readonly path: string | undefined,
    private readonly options: QueueOptions,
  ) {}

  static open<T>(path: string, options: QueueOptions = {}): DurableQueue<T> {
    const queue = new DurableQueue<T>(path, options);
    queue.items = readJsonFileSync<T[]>(path, [], 'queue');
    return queue;
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
    this.save();
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

  /** Takes the first `count` items (after they were delivered). */
  shift(count = 1): T[] {
    const taken = this.items.splice(0, count);
    if (taken.length > 0) this.save();
    return taken;
  }

  /** Every item, oldest first. */
  all(): readonly T[] {
    return this.items;
  }

  private save(): void {
    if (this.path) writeJsonFileSync(this.path, this.items);
  }
}
