import { renameSync, writeFileSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { StoreData } from './store.js';

/**
 * `--state FILE`: the sandbox's data survives restarts of the process. Saved atomically (write, then
 * rename) whenever the store's version moved, at most once per interval, and once more on close.
 */
export class StateFile {
  private savedVersion = -1;
  private timer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    private readonly snapshot: () => { version: number; data: StoreData },
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

  start(intervalMs = 500): void {
    this.timer = setInterval(() => void this.save(), intervalMs);
    this.timer.unref();
  }

  /** Saves if anything changed; concurrent calls queue behind each other. */
  save(): Promise<void> {
    this.saving = this.saving.then(async () => {
      const { version, data } = this.snapshot();
      if (version === this.savedVersion) return;
      const temporary = `${this.path}.${process.pid}.tmp`;
      try {
        await writeFile(temporary, JSON.stringify(data), { mode: 0o600 });
        await rename(temporary, this.path);
        this.savedVersion = version;
      } catch (error) {
        this.log.error({ err: error, path: this.path }, 'could not save the state file; will retry');
      }
    });
    return this.saving;
  }

  /**
   * Saves at once, synchronously: for an `exit` handler, which cannot wait. The process ends right
   * after it, so no asynchronous save under way can replace this file with older data.
   */
  saveNow(): void {
    const { version, data } = this.snapshot();
    if (version === this.savedVersion) return;
    const temporary = `${this.path}.${process.pid}.now.tmp`;
    try {
      writeFileSync(temporary, JSON.stringify(data), { mode: 0o600 });
      renameSync(temporary, this.path);
      this.savedVersion = version;
    } catch (error) {
      this.log.error({ err: error, path: this.path }, 'could not save the state file');
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.save();
  }
}
