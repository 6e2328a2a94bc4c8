import { closeSync, openSync, readFileSync, readSync, renameSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { appendFilePrivateSync, mkdirPrivateSync, openPrivateSync, writeWholeSync } from './private-files.js';

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
/** How much of a journal forEachInFile reads at a time. */
const READ_CHUNK = 1 << 20;

/** How much of a line readLine() asks for at first (a gateway map's line is some 500 bytes). */
const LINE_READ = 4096;
/** How much withLines() reads at a time. */
const WINDOW = 1 << 16;
/** How much rewrite() gathers before each write. */
const WRITE_CHUNK = 1 << 16;

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
   * forEach on the file at `path` (with each line's byte offset: its handle for readLine), read 1 MB at a time (no string of the whole file: a 12 MB one lands
   * in the heap's large-object space and stays until a full collection, which an idle process after
   * its start may not run for a long time). `lines`: the entries read; `complete`: the file exists and
   * ends with a newline (nothing cut short after the last line), so it may be appended to as it is.
   */
  static forEachInFile(path: string, what: string, visit: (entry: unknown, offset: number) => void): { lines: number; complete: boolean } {
    mkdirPrivateSync(dirname(path));
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { lines: 0, complete: false };
      throw error;
    }
    const chunk = Buffer.allocUnsafe(READ_CHUNK);
    /** The start of a line the chunk before ended in the middle of. */
    let carry: Buffer | undefined;
    let lines = 0;
    let lineNumber = 0;
    /** The offset of the line being taken, and of the chunk read last. */
    let lineStart = 0;
    let chunkStart = 0;
    const take = (text: string, last: boolean): void => {
      lineNumber += 1;
      if (text === '') return;
      let entry: unknown;
      try {
        entry = JSON.parse(text);
      } catch (error) {
        // The last line without its newline: a write cut short by a crash.
        if (last) return;
        throw new Error(`${path}: unreadable ${what} at line ${lineNumber} (${(error as Error).message})`);
      }
      visit(entry, lineStart);
      lines += 1;
    };
    try {
      for (let read = readSync(fd, chunk, 0, READ_CHUNK, null); read > 0; read = readSync(fd, chunk, 0, READ_CHUNK, null)) {
        const bytes = chunk.subarray(0, read);
        let start = 0;
        for (let newline = bytes.indexOf(10, start); newline >= 0; newline = bytes.indexOf(10, start)) {
          take(carry ? Buffer.concat([carry, bytes.subarray(start, newline)]).toString('utf8') : bytes.toString('utf8', start, newline), false);
          carry = undefined;
          start = newline + 1;
          lineStart = chunkStart + start;
        }
        if (start < read) carry = Buffer.concat(carry ? [carry, bytes.subarray(start)] : [bytes.subarray(start)]);
        chunkStart += read;
      }
    } finally {
      closeSync(fd);
    }
    if (carry) take(carry.toString('utf8'), true);
    return { lines, complete: carry === undefined };
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
    const fd = openSync(path, 'r');
    try {
      return readLineAt(fd, handle, path);
    } finally {
      closeSync(fd);
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
      return readLineAt(fd, handle, path);
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
    const fd = openPrivateSync(temporary, 'w');
    let count = 0;
    let size = 0;
    try {
      let chunk = '';
      for (const text of texts) {
        placed?.(size);
        const line = `${text}\n`;
        size += Buffer.byteLength(line);
        chunk += line;
        count += 1;
        if (chunk.length >= WRITE_CHUNK) {
          writeWholeSync(fd, chunk);
          chunk = '';
        }
      }
      if (chunk !== '') writeWholeSync(fd, chunk);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.path);
    this.count = count;
    this.size = size;
  }
}

/** The line starting at `offset`, without its newline (read 4 KB at a time until the newline). */
function readLineAt(fd: number, offset: number, path: string): string {
  let buffer = Buffer.allocUnsafe(LINE_READ);
  let filled = 0;
  for (;;) {
    if (filled === buffer.length) buffer = Buffer.concat([buffer, Buffer.allocUnsafe(buffer.length)]);
    const read = readSync(fd, buffer, filled, buffer.length - filled, offset + filled);
    const newline = buffer.indexOf(10, filled);
    if (newline >= 0 && newline < filled + read) return buffer.toString('utf8', 0, newline);
    if (read === 0) throw new Error(`${path}: no whole line at byte ${offset}`);
    filled += read;
  }
}
