import { closeSync, existsSync, openSync, readFileSync, readSync, renameSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { FileLineWriter, readFileLines } from './file-lines.js';
import { appendFilePrivateSync, mkdirPrivateSync } from './private-files.js';

/**
 * An append-only file of JSON lines, for state that changes with every message (a relay's queue and
 * marks). Each change is one synchronous append: one write() into the page cache, microseconds.
 * Replacing the whole file on every change (write a temporary, rename) cost far more on the event
 * loop — a new inode, a rename and, on ext4, a flush of the data the rename replaces
 * (auto_da_alloc): 0.1 ms typically, several ms at the tail, per write. The owner rewrites the file
 * from its state now and then (atomically: temporary file, then rename) to keep it short.
 *
 * A crash can cut only the last line short (each change is one append, and an open rewrites the file
 * before appending again unless it ends with a newline: see resume); that line is left out. Any other unreadable line is an error. No
 * descriptor is kept open (an append by path costs microseconds too), so there is nothing to close.
 */
/** How much withLines() reads at a time. */
const WINDOW = 1 << 16;

export class JsonLinesFile {
  private count = 0;
  /** The file's length in bytes: where the next line goes (a line's handle is its offset). */
  private size = 0;

  private constructor(readonly path: string) {}

  /** The file's text, '' when there is none yet (its directory is made). */
  static readText(path: string): string {
    mkdirPrivateSync(dirname(path));
    try {
      return readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw error;
    }
  }

  /** The entries of a journal's text, oldest first. */
  static parse(text: string, path: string, what: string): unknown[] {
    const entries: unknown[] = [];
    JsonLinesFile.forEach(text, path, what, (entry) => entries.push(entry));
    return entries;
  }

  /**
   * Hands each entry of a journal's text to `visit`, oldest first, one line at a time: no array of
   * its lines or its entries is made (a 12 MB gateway map read whole that way held three copies of
   * itself at once, and the process kept the memory they took after it started).
   */
  static forEach(text: string, path: string, what: string, visit: (entry: unknown) => void): void {
    let start = 0;
    let line = 1;
    while (start < text.length) {
      const newline = text.indexOf('\n', start);
      const end = newline < 0 ? text.length : newline;
      if (end > start) {
        let entry: unknown;
        try {
          entry = JSON.parse(text.slice(start, end));
        } catch (error) {
          // The last line without its newline: a write cut short by a crash.
          if (newline < 0) return;
          throw new Error(`${path}: unreadable ${what} at line ${line} (${(error as Error).message})`);
        }
        visit(entry);
      }
      if (newline < 0) return;
      start = newline + 1;
      line += 1;
    }
  }

  /**
   * forEach on the file at `path` (with each line's byte offset: its handle for readLine), read through readFileLines, 64 KB at a time (no string of the whole file: a 12 MB one lands
   * in the heap's large-object space and stays until a full collection, which an idle process after
   * its start may not run for a long time). `lines`: the entries read; `complete`: the file exists and
   * ends with a newline (nothing cut short after the last line), so it may be appended to as it is.
   */
  static forEachInFile(path: string, what: string, visit: (entry: unknown, offset: number) => void): { lines: number; complete: boolean } {
    mkdirPrivateSync(dirname(path));
    if (!existsSync(path)) return { lines: 0, complete: false };
    let lines = 0;
    let lineNumber = 0;
    let complete = true;
    for (const line of readFileLines(path)) {
      lineNumber += 1;
      complete = line.complete;
      if (line.text === '') continue;
      let entry: unknown;
      try {
        entry = JSON.parse(line.text);
      } catch (error) {
        // The last line without its newline: a write cut short by a crash.
        if (!line.complete) break;
        throw new Error(`${path}: unreadable ${what} at line ${lineNumber} (${(error as Error).message})`);
      }
      visit(entry, line.start);
      lines += 1;
    }
    return { lines, complete };
  }

  /** Starts the file afresh with `entries` (the owner's state, read before). */
  static create(path: string, entries: readonly unknown[]): JsonLinesFile {
    const file = new JsonLinesFile(path);
    file.rewrite(entries);
    return file;
  }

  /**
   * The file as it is, appended to from here (it holds `lines` lines). Only for a text that ends with a
   * newline: after a line a crash cut short, the next append would join it, so such a file is rewritten.
   */
  static resume(path: string, lines: number): JsonLinesFile {
    const file = new JsonLinesFile(path);
    file.count = lines;
    file.size = statSync(path, { throwIfNoEntry: false })?.size ?? 0;
    return file;
  }

  /**
   * The line at `handle` (its byte offset, from appendLine, rewriteTexts or forEachInFile), without its
   * newline: for a store that keeps old entries on disk only (the message map's older records, #32).
   */
  static readLine(path: string, handle: number): string {
    const lines = readFileLines(path, handle);
    try {
      const line = lines.next();
      if (line.done) throw new Error(`${path}: no line at byte ${handle}`);
      return line.value.text;
    } finally {
      // Closes the file (the generator's finally): only the first line is read.
      lines.return(undefined);
    }
  }

  /**
   * readLine for many lines: `read` reads through one descriptor, closed when `use` returns, 64 KB at a
   * time: lines asked for in the order of the file (a compaction's) cost a read per 64 KB, not one each.
   */
  static withLines<T>(path: string, use: (read: (handle: number) => string) => T): T {
    const fd = openSync(path, 'r');
    const window = Buffer.allocUnsafe(WINDOW);
    let start = 0;
    let filled = 0;
    const read = (handle: number): string => {
      if (handle >= start && handle < start + filled) {
        const newline = window.indexOf(10, handle - start);
        if (newline >= 0 && newline < filled) return window.toString('utf8', handle - start, newline);
      }
      start = handle;
      filled = readSync(fd, window, 0, WINDOW, handle);
      const newline = window.indexOf(10);
      if (newline >= 0 && newline < filled) return window.toString('utf8', 0, newline);
      // A line longer than the window.
      return JsonLinesFile.readLine(path, handle);
    };
    try {
      return use(read);
    } finally {
      closeSync(fd);
    }
  }

  /** Lines in the file since it was last rewritten. */
  get lines(): number {
    return this.count;
  }

  append(entry: unknown): void {
    this.appendLine(entry);
  }

  /** Appends an entry as a line; its handle (for readLine) is returned. */
  appendLine(entry: unknown): number {
    const line = `${JSON.stringify(entry)}\n`;
    const handle = this.size;
    appendFilePrivateSync(this.path, line);
    this.size += Buffer.byteLength(line);
    this.count += 1;
    return handle;
  }

  readLine(handle: number): string {
    return JsonLinesFile.readLine(this.path, handle);
  }

  withLines<T>(use: (read: (handle: number) => string) => T): T {
    return JsonLinesFile.withLines(this.path, use);
  }

  /** Replaces the file with these entries, atomically. */
  rewrite(entries: readonly unknown[]): void {
    this.rewriteTexts(entries.map((entry) => JSON.stringify(entry)));
  }

  /**
   * Replaces the file with these lines (JSON texts, without newlines), atomically, written a chunk at a
   * time (no string of the whole file); `placed` is told each line's handle, in order.
   */
  rewriteTexts(texts: Iterable<string>, placed?: (handle: number) => void): void {
    const temporary = `${this.path}.${process.pid}.tmp`;
    const writer = new FileLineWriter(temporary);
    try {
      for (const text of texts) {
        placed?.(writer.bytes);
        writer.line(text);
      }
    } finally {
      writer.close();
    }
    renameSync(temporary, this.path);
    this.count = writer.lines;
    this.size = writer.bytes;
  }
}
