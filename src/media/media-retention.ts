import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';

/** How often the sweep runs (and once at start). */
const SWEEP_EVERY_MS = 3600 * 1000;
/** A `.part` (a download under way, or cut short by a kill) older than this is a leftover. */
const PART_MAX_AGE_MS = 3600 * 1000;

/** `<id>`, `<id>.json`, `<id>.part`: the names the store writes (anything else in the folder is left alone). */
const STORE_NAME = /^([0-9a-f]{32})(\.json|\.part)?$/;

/**
 * The media store's retention (bots.yaml `media.retention_days`): stored files older than that are
 * removed with their meta, at start and hourly; `.part` files and meta without a file (a kill -9
 * mid-download) once they are an hour old. Workers sharing a folder may sweep it together: a file
 * removed twice is removed once. A relay that opens a removed file falls back to its link line.
 */
export class MediaRetention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(private readonly dir: string, private readonly maxAgeMs: number, private readonly log: Logger) {}

  start(): void {
    void this.sweep();
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One pass; the number of files removed. One pass at a time. */
  sweep(now = Date.now()): Promise<number> {
    this.running ??= this.pass(now).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async pass(now: number): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn({ err: error, dir: this.dir }, 'the media folder could not be read for its retention');
      return 0;
    }
    const present = new Set(names);
    let removed = 0;
    for (const name of names) {
      const match = STORE_NAME.exec(name);
      if (!match) continue;
      const [, id, suffix] = match;
      const path = join(this.dir, name);
      try {
        const age = now - (await stat(path)).mtimeMs;
        if (suffix === undefined && age > this.maxAgeMs) {
          // The meta first: the listener answers 404 from then on.
          await rm(join(this.dir, `${id}.json`), { force: true });
          await rm(path, { force: true });
          removed += 1;
        } else if (suffix === '.part' && age > PART_MAX_AGE_MS) {
          await rm(path, { force: true });
        } else if (suffix === '.json' && !present.has(id!) && age > PART_MAX_AGE_MS) {
          await rm(path, { force: true });
        }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn({ err: error, file: name }, 'a media file could not be removed');
      }
    }
    if (removed > 0) this.log.info({ removed, dir: this.dir }, 'media files past their retention removed');
    return removed;
  }
}
