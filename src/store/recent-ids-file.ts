import { DurableQueue } from './durable-queue.js';
import { FILE_STORAGE, type Storage } from './storage.js';

/**
 * A bounded set of ids (each with a short value, '' when none), durable: the oldest out first past
 * `max` (1% of max at once, so it holds between 99% and all of max: a queue's shift moves the ids
 * after it, and one id at a time would move them all at every add). A journal (a DurableQueue, see
 * JsonLinesFile): an add is one appended line (and a shift line per 1% of max), and the file is
 * rewritten with the ids kept at open and once the journal is twice as long as they are. So the file stays under `max` ids plus 2 × max short lines, and no add
 * rewrites it whole (a list in the plugin's key-value store was rewritten whole, every id of it, on
 * every change: #32).
 */
export class RecentIdsFile {
  private readonly values = new Map<string, string>();

  private constructor(
    private readonly queue: DurableQueue<[string, string] | string>,
    readonly max: number,
  ) {
    for (const item of queue.all()) {
      const [id, value] = typeof item === 'string' ? [item, ''] : item;
      this.values.set(id, value);
    }
  }

  /**
   * Opens the file at `path`. `earlier` (the ids an earlier version kept elsewhere, oldest first) are
   * taken in when the file is new, so an upgrade forgets nothing.
   */
  static open(path: string, max: number, storage: Storage = FILE_STORAGE, earlier: ReadonlyArray<string | [string, string]> = []): RecentIdsFile {
    const queue = DurableQueue.open<[string, string] | string>(path, { storage, maxItems: max + 1 });
    const file = new RecentIdsFile(queue, max);
    if (queue.size === 0) for (const item of earlier.slice(-max)) typeof item === 'string' ? file.add(item) : file.add(item[0], item[1]);
    return file;
  }

  /** Ids kept (at most `max`). */
  get size(): number {
    return this.values.size;
  }

  /** Whether the id is kept (added, and not yet pushed out by newer ones). */
  has(id: string): boolean {
    return this.values.has(id);
  }

  /** The value kept with an id (undefined: not kept). */
  get(id: string): string | undefined {
    return this.values.get(id);
  }

  /** Keeps an id (written before this returns); one kept already stays where it is. */
  add(id: string, value = ''): void {
    if (this.values.has(id)) return;
    if (this.queue.size >= this.max) {
      const room = Math.max(1, Math.floor(this.max / 100));
      for (const old of this.queue.shift(this.queue.size - this.max + room)) this.values.delete(typeof old === 'string' ? old : old[0]);
    }
    this.queue.push(value === '' ? id : [id, value]);
    this.values.set(id, value);
  }
}
