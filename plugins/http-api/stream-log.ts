import { DurableQueue, type Storage } from '../../src/index.js';
import type { FilePayload, LinePayload } from './line.js';

/** A line of a channel's log: its sequence number (the event stream's `id:`) and the line. */
export interface LogEntry {
  seq: number;
  line: LinePayload;
}

export interface Page {
  entries: LogEntry[];
  /** The position asked for is outside what is kept (older than the oldest line, or newer than the newest): start over from the oldest. */
  reset: boolean;
}

/**
 * Lines kept past `keep` before the oldest go, 1% of it at once: a queue's shift moves the lines after
 * it, and one line at a time would move all 10,000 at every line sent.
 */
function roomOf(keep: number): number {
  return Math.floor(keep / 100);
}

/**
 * The last `keep` lines (up to 1% more) sent to one channel, numbered 1, 2, 3, ... for good: the number is written
 * with the line (a DurableQueue journal) before send() returns, so a client's position means the same
 * line after a restart. Every reader has its own position; reading takes nothing away. The ids kept
 * also tell a line the gateway sends again (after a crash) from a new one.
 */
export class ChannelLog {
  private readonly ids = new Set<string>();
  /** The files of the lines kept, by media id (with how many kept lines carry each): what `/files/<id>/…` serves. */
  private readonly files = new Map<string, { file: FilePayload; lines: number }>();
  private readonly listeners = new Set<() => void>();

  private constructor(
    private readonly queue: DurableQueue<LogEntry>,
    private readonly keep: number,
  ) {
    for (const entry of queue.all()) this.added(entry.line);
  }

  static open(path: string, storage: Storage, keep: number): ChannelLog {
    return new ChannelLog(DurableQueue.open<LogEntry>(path, { storage, maxItems: keep + roomOf(keep) + 1, window: Number.POSITIVE_INFINITY }), keep);
  }

  /** The newest line's number (0 before the first). */
  get last(): number {
    return this.queue.last()?.seq ?? 0;
  }

  /** The oldest line kept (last + 1 when none is). */
  get oldest(): number {
    return this.queue.peek()?.seq ?? this.last + 1;
  }

  get size(): number {
    return this.queue.size;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Adds a line under the next number and tells the readers waiting; the oldest goes past `keep`. */
  append(line: LinePayload): LogEntry {
    const entry = { seq: this.last + 1, line };
    this.queue.push(entry);
    this.added(line);
    if (this.queue.size > this.keep + roomOf(this.keep)) for (const gone of this.queue.shift(this.queue.size - this.keep)) this.removed(gone.line);
    for (const listener of this.listeners) listener();
    return entry;
  }

  /** A file of a line still kept in this channel's log, by its media id. */
  file(id: string): FilePayload | undefined {
    return this.files.get(id)?.file;
  }

  private added(line: LinePayload): void {
    this.ids.add(line.id);
    for (const file of line.files ?? []) {
      const known = this.files.get(file.id);
      if (known) known.lines += 1;
      else this.files.set(file.id, { file, lines: 1 });
    }
  }

  private removed(line: LinePayload): void {
    this.ids.delete(line.id);
    for (const file of line.files ?? []) {
      const known = this.files.get(file.id);
      if (known && (known.lines -= 1) === 0) this.files.delete(file.id);
    }
  }

  /** The lines after `position`, at most `limit`. */
  after(position: number, limit = Number.POSITIVE_INFINITY): Page {
    const oldest = this.oldest;
    // A position before what is kept missed lines; one past the newest belongs to a log that is gone (state wiped).
    const reset = position < oldest - 1 || position > this.last;
    const from = reset ? 0 : position - oldest + 1;
    return { entries: this.queue.range(from, limit), reset };
  }

  /** Calls `listener` after each append, until the returned function is called. */
  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
