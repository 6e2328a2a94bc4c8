import { closeSync, openSync, renameSync, writeSync } from 'node:fs';
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

  constructor(private readonly path: string) {}

  get lines(): number {
    return this.count;
  }

  append(entry: unknown): void {
    const line = `${JSON.stringify(entry)}\n`;
    this.pending.push(line);
    this.pendingBytes += line.length;
    this.count += 1;
    if (this.pendingBytes >= CHUNK) this.write();
  }

  rewrite(entries: readonly unknown[]): void {
    this.close();
    const temporary = `${this.path}.${process.pid}.tmp`;
    const fd = openSync(temporary, 'w', 0o600);
    writeSync(fd, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
    closeSync(fd);
    renameSync(temporary, this.path);
    this.fd = openSync(this.path, 'a');
    this.count = entries.length;
  }

  reopen(lines: number): void {
    this.fd = openSync(this.path, 'a');
    this.count = lines;
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
