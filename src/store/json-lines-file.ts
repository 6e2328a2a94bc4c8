import { closeSync, openSync, readFileSync, readSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import { appendFilePrivateSync, mkdirPrivateSync, writeFilePrivateSync } from './private-files.js';

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

export class JsonLinesFile {
  private count = 0;

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
   * forEach on the file at `path`, read 1 MB at a time (no string of the whole file: a 12 MB one lands
   * in the heap's large-object space and stays until a full collection, which an idle process after
   * its start may not run for a long time). `lines`: the entries read; `complete`: the file exists and
   * ends with a newline (nothing cut short after the last line), so it may be appended to as it is.
   */
  static forEachInFile(path: string, what: string, visit: (entry: unknown) => void): { lines: number; complete: boolean } {
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
      visit(entry);
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
        }
        if (start < read) carry = Buffer.concat(carry ? [carry, bytes.subarray(start)] : [bytes.subarray(start)]);
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
    return file;
  }

  /** Lines in the file since it was last rewritten. */
  get lines(): number {
    return this.count;
  }

  append(entry: unknown): void {
    appendFilePrivateSync(this.path, `${JSON.stringify(entry)}\n`);
    this.count += 1;
  }

  /** Replaces the file with these entries, atomically. */
  rewrite(entries: readonly unknown[]): void {
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFilePrivateSync(temporary, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
    renameSync(temporary, this.path);
    this.count = entries.length;
  }
}
