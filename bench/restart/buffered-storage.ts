import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';
import { JsonLinesFile } from '../../src/store/json-lines-file.js';
import { FILE_STORAGE, type Journal, type Storage } from '../../src/store/storage.js';

/**
 * The file storage for writing a month of state fast: the same files, line for line, as the stores
 * write through FILE_STORAGE (each append a JSON line, each rewrite the whole file replaced), but
 * appends are gathered and written in large chunks to a descriptor kept open, instead of one
 * open/write/close per line (2.6 million lines through every store took about 20 minutes that way).
 * Nothing here is durable before flush(): it only writes a state for a bench to start on.
 */
export class BufferedFileStorage {
  private readonly open = new Set<BufferedJournal>();

  readonly storage: Storage = {
    ...FILE_STORAGE,
    journal: (path, entries) => {
      const journal = new BufferedJournal(path);
      journal.rewrite(entries);
      this.open.add(journal);
      return journal;
    },
    resume: (path, lines) => {
      const journal = new BufferedJournal(path);
      journal.reopen(lines);
      this.open.add(journal);
      return journal;
    },
  };

  /** Writes every journal's gathered lines and closes its file. */
  flush(): void {
    for (const journal of this.open) journal.close();
    this.open.clear();
  }
}

const CHUNK = 1 << 20;

class BufferedJournal implements Journal {
  private fd: number | undefined;
  private pending: string[] = [];
  private pendingBytes = 0;
  private count = 0;
  private size = 0;

  constructor(private readonly path: string) {}

  get lines(): number {
    return this.count;
  }

  append(entry: unknown): void {
    this.appendLine(entry);
  }

  appendLine(entry: unknown): number {
    const line = `${JSON.stringify(entry)}\n`;
    const handle = this.size;
    this.pending.push(line);
    this.pendingBytes += line.length;
    this.size += Buffer.byteLength(line);
    this.count += 1;
    if (this.pendingBytes >= CHUNK) this.write();
    return handle;
  }

  readLine(handle: number): string {
    this.write();
    return JsonLinesFile.readLine(this.path, handle);
  }

  withLines<T>(use: (read: (handle: number) => string) => T): T {
    this.write();
    return JsonLinesFile.withLines(this.path, use);
  }

  rewrite(entries: readonly unknown[]): void {
    this.rewriteTexts(entries.map((entry) => JSON.stringify(entry)));
  }

  rewriteTexts(texts: Iterable<string>, placed?: (handle: number) => void): void {
    this.close();
    const temporary = `${this.path}.${process.pid}.tmp`;
    const fd = openSync(temporary, 'w', 0o600);
    let size = 0;
    let count = 0;
    const lines: string[] = [];
    for (const text of texts) {
      placed?.(size);
      const line = `${text}\n`;
      size += Buffer.byteLength(line);
      lines.push(line);
      count += 1;
    }
    writeSync(fd, lines.join(''));
    closeSync(fd);
    renameSync(temporary, this.path);
    this.fd = openSync(this.path, 'a');
    this.count = count;
    this.size = size;
  }

  reopen(lines: number): void {
    this.fd = openSync(this.path, 'a');
    this.count = lines;
    this.size = fstatSync(this.fd).size;
  }

  close(): void {
    this.write();
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private write(): void {
    if (this.pending.length === 0 || this.fd === undefined) return;
    writeSync(this.fd, this.pending.join(''));
    this.pending = [];
    this.pendingBytes = 0;
  }
}
