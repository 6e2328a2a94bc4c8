import { readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { mkdirPrivate, writeFilePrivate } from './private-files.js';

/**
 * A JSON file replaced atomically (write a temporary file, then rename), so a crash leaves either the
 * old or the new content, never half of one. Writes are coalesced: many changes in a short time make
 * one write. Without a path it only pretends (an in-memory store).
 */
export class AtomicJsonFile<T> {
  private timer: NodeJS.Timeout | undefined;
  private pending: (() => T) | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string | undefined,
    private readonly delayMs = 50,
  ) {}

  async read(): Promise<T | undefined> {
    if (!this.path) return undefined;
    try {
      return JSON.parse(await readFile(this.path, 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`${this.path}: unreadable state file (${(error as Error).message})`);
    }
  }

  scheduleWrite(snapshot: () => T): void {
    if (!this.path) return;
    this.pending = snapshot;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.delayMs);
  }

  /** Writes what is pending now; resolves when it is on disk. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const snapshot = this.pending;
    this.pending = undefined;
    if (!snapshot || !this.path) return this.writing;
    const path = this.path;
    const text = JSON.stringify(snapshot());
    // A failed write does not poison the ones after it (each reports its own failure).
    this.writing = this.writing.catch(() => undefined).then(async () => {
      await mkdirPrivate(dirname(path));
      const temporary = `${path}.${process.pid}.tmp`;
      await writeFilePrivate(temporary, text);
      await rename(temporary, path);
    });
    return this.writing;
  }
}
