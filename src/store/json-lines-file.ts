import { readFileSync, renameSync } from 'node:fs';
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
 * A crash can cut only the last line short (each change is one append, and every open rewrites the
 * file before appending again); that line is left out. Any other unreadable line is an error. No
 * descriptor is kept open (an append by path costs microseconds too), so there is nothing to close.
 */
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
    const lines = text.split('\n');
    const entries: unknown[] = [];
    lines.forEach((line, index) => {
      if (line === '') return;
      try {
        entries.push(JSON.parse(line));
      } catch (error) {
        // The last line without its newline: a write cut short by a crash.
        if (index === lines.length - 1) return;
        throw new Error(`${path}: unreadable ${what} at line ${index + 1} (${(error as Error).message})`);
      }
    });
    return entries;
  }

  /** Starts the file afresh with `entries` (the owner's state, read before). */
  static create(path: string, entries: readonly unknown[]): JsonLinesFile {
    const file = new JsonLinesFile(path);
    file.rewrite(entries);
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
