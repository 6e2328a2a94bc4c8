import { closeSync, renameSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { FileLineWriter, readFileLines } from './file-lines.js';
import { mkdirPrivateSync, openPrivateSync, writeWholeSync } from './private-files.js';

/**
 * One line of a queue's journal: items pushed (`at`: when, ms since the epoch; absent in files of
 * earlier versions), so many items taken from the front, or the queue's note set (with a shift, or alone).
 */
export type QueueEntry<T> = { push: T[]; at?: number } | { shift: number; note?: unknown } | { note: unknown };

/** Items and the times they were pushed, side by side. */
export interface TimedItems<T> {
  items: T[];
  times: number[];
}

/** Every push line starts so (JSON.stringify keeps the key order it is given): shift and note lines are passed over unparsed. */
const PUSH_PREFIX = '{"push":';

/**
 * How long the journal's descriptor stays open after its last append: a queue that writes keeps it (no
 * open and close per line, #32 part 1), one left alone (never closed by its owner) lets it go soon.
 */
const KEEP_OPEN_MS = 1000;

/**
 * The journal holding a descriptor open on each path (by its absolute path), at most one per path. A
 * rewrite replaces the file by rename, so a descriptor kept on the file it replaced would write where
 * no one reads: every rewrite of a path (by whichever QueueFile: a queue opened twice, a reopen while
 * the old one lives) first lets that path's descriptor go, and appends land in the current file, as an
 * append by path did.
 */
const holders = new Map<string, QueueFile<unknown>>();

function releasePath(path: string): void {
  holders.get(resolve(path))?.close();
}

/**
 * The journal file of a DurableQueue whose items beyond a window from the head stay on disk only
 * (#32 part 3, "memory bounded whatever the backlog"): they are found again by the byte offset of
 * the push line holding the first of them. Every push line at or after that offset holds only items
 * on disk (the queue is first in, first out: once one item is on disk, every later one is too).
 *
 * The journal's format is DurableQueue's (JSON lines, see JsonLinesFile): each change is one
 * synchronous append (on a descriptor kept open while appends come); a last line cut short by a crash is left out at open, and every open rewrites
 * the file (streaming, in two passes: one to count what was taken, one to copy what waits).
 */
export class QueueFile<T> {
  /** The file's size, in bytes: where the next line goes. */
  private bytes = 0;
  /** Lines since the file was last rewritten. */
  lines = 0;
  /** Items waiting on disk only. */
  onDisk = 0;
  /** The first item on disk is item `skip` of the push line at byte `offset`. */
  private offset = 0;
  private skip = 0;

  /**
   * The journal opened to append, kept between appends while they come (closed after KEEP_OPEN_MS
   * without one, by close(), and before each rewrite: the rewrite replaces the file by rename).
   */
  private fd: number | undefined;
  /** An append came since the idle timer last looked. */
  private used = false;
  private idle: NodeJS.Timeout | undefined;

  private constructor(readonly path: string) {}

  /**
   * Opens the journal at `path` (made when missing) and rewrites it with just the waiting items and
   * the note. The first `window` waiting items are returned; `each` sees every waiting item, in order.
   */
  static open<T>(path: string, now: number, window: number, each: (item: T) => void): { file: QueueFile<T>; head: TimedItems<T>; note: unknown } {
    mkdirPrivateSync(dirname(path));
    const what = QueueFile.count(path);
    const file = new QueueFile<T>(path);
    const head: TimedItems<T> = { items: [], times: [] };
    const writer = new FileLineWriter(`${path}.${process.pid}.tmp`);
    try {
      let seen = 0;
      for (const entry of QueueFile.entries<T>(path)) {
        if (!('push' in entry)) continue;
        const first = Math.max(0, what.taken - seen);
        seen += entry.push.length;
        if (first >= entry.push.length) continue;
        const rest = first > 0 ? entry.push.slice(first) : entry.push;
        const at = typeof entry.at === 'number' ? entry.at : now;
        const start = writer.bytes;
        writer.line(JSON.stringify({ push: rest, at }));
        rest.forEach((item, index) => {
          each(item);
          if (file.onDisk === 0 && head.items.length < window) {
            head.items.push(item);
            head.times.push(at);
          } else file.addOnDisk(start, index);
        });
      }
      if (what.note !== undefined) writer.line(JSON.stringify({ note: what.note }));
    } finally {
      writer.close();
    }
    releasePath(path);
    renameSync(`${path}.${process.pid}.tmp`, path);
    file.bytes = writer.bytes;
    file.lines = writer.lines;
    return { file, head, note: what.note };
  }

  /** A journal started afresh with these items and note (a queue file of an earlier version, read whole). */
  static create<T>(path: string, head: TimedItems<T>, note: unknown): QueueFile<T> {
    mkdirPrivateSync(dirname(path));
    const file = new QueueFile<T>(path);
    file.compact(head, note);
    return file;
  }

  /** The first pass of an open: how many items were taken, and the last note. */
  private static count(path: string): { taken: number; note: unknown } {
    let pushed = 0;
    let taken = 0;
    let note: unknown;
    for (const entry of QueueFile.entries(path)) {
      if ('push' in entry) pushed += entry.push.length;
      if ('shift' in entry) taken = Math.min(pushed, taken + entry.shift);
      if ('note' in entry) note = entry.note;
    }
    return { taken, note };
  }

  /** The journal's entries, checked: a last line cut short is left out, any other unreadable line is an error. */
  private static *entries<T>(path: string): Generator<QueueEntry<T>> {
    let number = 0;
    for (const line of readFileLines(path)) {
      number += 1;
      if (line.text === '') continue;
      let entry: Partial<{ push: T[]; at: number; shift: number; note: unknown }> | null;
      try {
        entry = JSON.parse(line.text) as typeof entry;
      } catch (error) {
        if (!line.complete) continue;
        throw new Error(`${path}: unreadable queue at line ${number} (${(error as Error).message})`);
      }
      const known = Array.isArray(entry?.push) || typeof entry?.shift === 'number' || (entry != null && 'note' in entry);
      if (!known) throw new Error(`${path}: unreadable queue (unknown entry ${JSON.stringify(entry).slice(0, 100)})`);
      yield entry as QueueEntry<T>;
    }
  }

  /** Appends one line (synchronously); returns its byte offset. */
  append(entry: QueueEntry<T>): number {
    const line = `${JSON.stringify(entry)}\n`;
    this.write(line);
    const offset = this.bytes;
    this.bytes += Buffer.byteLength(line);
    this.lines += 1;
    return offset;
  }

  /**
   * One line written at the end of the journal, as a synchronous write (as durable as an append that
   * opens and closes the file: the kernel has it when this returns; no fsync, as before). A file
   * groupwire makes is 0600.
   */
  private write(line: string): void {
    if (this.fd === undefined) {
      const key = resolve(this.path);
      holders.get(key)?.close();
      this.fd = openPrivateSync(this.path, 'a');
      holders.set(key, this as QueueFile<unknown>);
      this.used = false;
      // Unref'd: an open journal never keeps the process alive.
      this.idle = setInterval(() => {
        if (this.used) this.used = false;
        else this.close();
      }, KEEP_OPEN_MS);
      this.idle.unref();
    }
    this.used = true;
    try {
      writeWholeSync(this.fd, line);
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** Lets the journal's descriptor go (the next append opens it again): the queue's owner stops, or a rewrite. */
  close(): void {
    clearInterval(this.idle);
    this.idle = undefined;
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    const key = resolve(this.path);
    if (holders.get(key) === this) holders.delete(key);
    closeSync(fd);
  }

  /** Item `index` of the push line at `offset` (just appended) stays on disk only. */
  addOnDisk(offset: number, index: number): void {
    if (this.onDisk === 0) {
      this.offset = offset;
      this.skip = index;
    }
    this.onDisk += 1;
  }

  /** Reads up to `count` items from the head of those on disk into memory (they are no longer on disk only). */
  take(count: number): TimedItems<T> {
    const taken: TimedItems<T> = { items: [], times: [] };
    for (const { item, at, line, index } of this.onDiskItems()) {
      if (taken.items.length >= count) break;
      taken.items.push(item);
      taken.times.push(at);
      this.offset = line.start;
      this.skip = index + 1;
    }
    this.onDisk -= taken.items.length;
    return taken;
  }

  /** The items on disk only, oldest first, read line by line (for a look past the window; the queue must not change meanwhile). */
  *values(): Generator<T> {
    for (const { item } of this.onDiskItems()) yield item;
  }

  private *onDiskItems(): Generator<{ item: T; at: number; line: { start: number }; index: number }> {
    if (this.onDisk === 0) return;
    let left = this.onDisk;
    let skip = this.skip;
    for (const line of readFileLines(this.path, this.offset)) {
      if (!line.text.startsWith(PUSH_PREFIX)) continue;
      const entry = JSON.parse(line.text) as { push: T[]; at: number };
      for (let index = skip; index < entry.push.length; index += 1) {
        yield { item: entry.push[index]!, at: entry.at, line, index };
        left -= 1;
        if (left === 0) return;
      }
      skip = 0;
    }
  }

  /**
   * Rewrites the journal with `head` (the items in memory), then the items on disk only, copied line
   * by line from the old file (never read whole), then the note; the offsets are those of the new file.
   */
  compact(head: TimedItems<T>, note: unknown): void {
    const temporary = `${this.path}.${process.pid}.tmp`;
    const writer = new FileLineWriter(temporary);
    let offset = 0;
    try {
      let from = 0;
      for (let index = 1; index <= head.items.length; index += 1) {
        if (index < head.items.length && head.times[index] === head.times[from]) continue;
        writer.line(JSON.stringify({ push: head.items.slice(from, index), at: head.times[from]! }));
        from = index;
      }
      offset = writer.bytes;
      if (this.onDisk > 0) {
        let skip = this.skip;
        for (const line of readFileLines(this.path, this.offset)) {
          if (!line.text.startsWith(PUSH_PREFIX)) continue;
          if (skip > 0) {
            const entry = JSON.parse(line.text) as { push: T[]; at: number };
            if (skip < entry.push.length) writer.line(JSON.stringify({ push: entry.push.slice(skip), at: entry.at }));
            skip = 0;
          } else writer.line(line.text);
        }
      }
      if (note !== undefined) writer.line(JSON.stringify({ note }));
    } finally {
      writer.close();
    }
    // A descriptor on the file being replaced is let go: the next append opens the new one.
    releasePath(this.path);
    renameSync(temporary, this.path);
    this.offset = offset;
    this.skip = 0;
    this.bytes = writer.bytes;
    this.lines = writer.lines;
  }
}
