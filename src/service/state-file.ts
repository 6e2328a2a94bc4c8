import { closeSync, fsyncSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { openPrivate, openPrivateSync } from '../store/private-files.js';
import type { StoreData } from './store.js';

/** What the state file saves: a key that changes with every change of the data, and the data. */
export interface StateSource {
  /** Differs whenever anything saved differs (the store's version and the clock's offset). */
  key(): string;
  data(): StoreData;
}

/**
 * `--state FILE`: the sandbox's data survives restarts and crashes of the process. Each save is an
 * atomic snapshot made durable: written to a temporary file, fsynced, renamed over FILE, and the
 * directory fsynced (so the rename itself survives a power cut or a `kill -9`).
 *
 * `persist()` resolves once everything changed before the call is on disk; the service awaits it
 * before an answer leaves (see local-service.ts), so what was answered as done survives a crash.
 * Saves are shared: every caller that arrives while a save is running joins the one save queued
 * after it, which snapshots the data when it starts and so covers all of them.
 */
export class StateFile {
  /** The key of the data last written and fsynced. */
  private writtenKey: string | undefined;
  private running: { key: string; done: Promise<void> } | undefined;
  private queued: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Snapshots written (successfully or not): how many saves the traffic cost. */
  writes = 0;

  constructor(
    readonly path: string,
    private readonly source: StateSource,
    private readonly log: Logger,
  ) {}

  static async load(path: string): Promise<StoreData | undefined> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    try {
      return JSON.parse(text) as StoreData;
    } catch (error) {
      throw new Error(`${path}: not a groupwire state file (${(error as Error).message})`);
    }
  }

  /** Also saves on a timer, for changes no answer waits for (chat posts over a socket). */
  start(intervalMs = 500): void {
    this.timer = setInterval(() => {
      this.persist().catch(() => undefined); // logged where it failed; the next tick tries again
    }, intervalMs);
    this.timer.unref();
  }

  /** True when something changed since the last durable save (or a save is under way). */
  get behind(): boolean {
    return this.source.key() !== this.writtenKey;
  }

  /** Resolves when every change made before this call is on disk; rejects if that save failed. */
  persist(): Promise<void> {
    const key = this.source.key();
    if (key === this.writtenKey) return Promise.resolve();
    // A save under way that snapshotted this very data covers the caller already.
    if (this.running?.key === key) return this.running.done;
    this.queued ??= this.afterRunning();
    return this.queued;
  }

  /** The queued save: starts when the running one ends, and snapshots only then. */
  private async afterRunning(): Promise<void> {
    // Callers of this same tick join too; and `queued` is set before this goes on.
    await null;
    while (this.running) await this.running.done.catch(() => undefined);
    this.queued = undefined;
    const key = this.source.key();
    if (key === this.writtenKey) return;
    const done = this.write(key);
    this.running = { key, done };
    try {
      await done;
    } finally {
      this.running = undefined;
    }
  }

  private async write(key: string): Promise<void> {
    this.writes += 1;
    const temporary = `${this.path}.${process.pid}.tmp`;
    try {
      const text = JSON.stringify(this.source.data());
      const file = await openPrivate(temporary, 'w');
      try {
        await file.writeFile(text);
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temporary, this.path);
      await syncDirectory(dirname(this.path));
      this.writtenKey = key;
    } catch (error) {
      this.log.error({ err: error, path: this.path }, 'could not save the state file; will retry');
      throw error;
    }
  }

  /**
   * Saves at once, synchronously: for an `exit` handler, which cannot wait. The process ends right
   * after it, so no asynchronous save under way can replace this file with older data.
   */
  saveNow(): void {
    const key = this.source.key();
    if (key === this.writtenKey) return;
    const temporary = `${this.path}.${process.pid}.now.tmp`;
    try {
      const fd = openPrivateSync(temporary, 'w');
      try {
        writeFileSync(fd, JSON.stringify(this.source.data()));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temporary, this.path);
      const dir = openSync(dirname(this.path), 'r');
      try {
        fsyncSync(dir);
      } finally {
        closeSync(dir);
      }
      this.writtenKey = key;
    } catch (error) {
      this.log.error({ err: error, path: this.path }, 'could not save the state file');
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.persist().catch(() => undefined);
  }
}

/** fsync of a directory makes a rename in it durable (Linux, macOS); elsewhere it may be refused. */
async function syncDirectory(path: string): Promise<void> {
  const dir = await open(path, 'r');
  try {
    await dir.sync();
  } catch (error) {
    // Windows cannot fsync a directory (EPERM/EISDIR): the rename is as durable as that system makes it.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'EISDIR' && code !== 'EINVAL') throw error;
  } finally {
    await dir.close();
  }
}
