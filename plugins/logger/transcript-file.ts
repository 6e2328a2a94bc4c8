import { open, readFile, stat, truncate, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { mkdirPrivate, openPrivate } from '../../src/index.js';
import { appendSynced, syncDirectory } from './durable-append.js';
import type { FileMeta, Format } from './formats.js';
import { inOrderAfter, type PendingEntry } from './pending-entries.js';

export type { PendingEntry } from './pending-entries.js';

const TAIL_CHUNK = 64 * 1024;

/**
 * Longer than this between the size check and the write means the process stood still (a SIGSTOP, a
 * machine frozen): far less than a unit's lease, so a successor that took the unit over meanwhile may
 * have written. The size is checked again before writing.
 */
const STILL_MS = 1_000;
/** Checks of the size in one write at most (another holder appending all the while is not waited out). */
const SIZE_CHECKS = 5;

/**
 * One transcript file: what it holds (its last msg_num and its size, read back from the file itself
 * at first use) and the entries waiting to be appended. Writes are appends followed by fsync; a write
 * that failed half-way is cut back to the last good size before the next one, so a file never holds
 * half an entry or an entry twice.
 *
 * The last msg_num comes from the file's tail (jsonl, html and markdown entries carry it). Text lines
 * (`[time] <name> message`) do not, so a text file has an index beside it (`.<name>.idx`, one
 * `<msg_num> <size>` line per write, written after the text is on disk); text past the index's size
 * (a crash between the two) is cut off and written again from the chat's history.
 */
export class TranscriptFile {
  /** The highest msg_num in the file since its last reset marker (0: none). */
  last = 0;
  /** The file holds an entry or a reset marker (a file ending in a marker holds `last` 0). */
  holds = false;
  /**
   * Entries of earlier numberings, each ended by the reset marker that followed it: written, in order,
   * before `pending` (whose entries start again at msg_num 1). What was waiting when a reset came belongs
   * to the history before it, so it goes before the marker, never after it mixed with the new numbering.
   */
  private beforeResets: Array<{ entries: PendingEntry[]; marker: string }> = [];
  /** The file's size after its last complete entry. */
  size = 0;
  recovered = false;
  pending: PendingEntry[] = [];
  lastUsed = Date.now();
  /** A write failed part-way: cut the file back to `size` before writing again. */
  private dirty = false;
  /** The text is written but its index line is not. */
  private indexBehind = false;

  constructor(
    readonly path: string,
    readonly format: Format,
    readonly meta: FileMeta,
    private readonly log: Logger,
    /** Monotonic ms (performance.now): it runs on while the process is stopped. A test may give its own. */
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** The chat's history was reset: what waits is written before `marker`; entries added next start at 1. */
  markReset(marker: string): void {
    // An empty marker (the chat's other days) on a file with nothing waiting needs no write, only the
    // count from 1 again: without this every known day file of the chat would be opened and fsynced.
    if (marker === '' && !this.waiting) {
      this.last = 0;
      return;
    }
    this.beforeResets.push({ entries: this.pending, marker });
    this.pending = [];
  }

  /** Entries or a reset marker wait to be written. */
  get waiting(): boolean {
    return this.pending.length > 0 || this.beforeResets.length > 0;
  }

  /** Entries waiting, of every numbering. */
  get waitingCount(): number {
    return this.beforeResets.reduce((sum, segment) => sum + segment.entries.length, this.pending.length);
  }

  get indexPath(): string | undefined {
    return this.format.msgNumOf ? undefined : join(dirname(this.path), `.${basename(this.path)}.idx`);
  }

  /** Reads what the file holds (once); cuts off a torn last entry. Throws when the file cannot be read. */
  async recover(): Promise<void> {
    if (this.recovered) return;
    let size: number;
    try {
      size = (await stat(this.path)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.size = 0;
      this.last = 0;
      this.recovered = true;
      return;
    }
    if (this.format.msgNumOf) await this.recoverFromTail(size, this.format.msgNumOf);
    else await this.recoverFromIndex(size);
    this.recovered = true;
  }

  private async recoverFromTail(size: number, msgNumOf: (line: string) => number | undefined): Promise<void> {
    const handle = await open(this.path, 'r');
    try {
      let chunk = TAIL_CHUNK;
      for (;;) {
        const start = Math.max(0, size - chunk);
        const buffer = Buffer.alloc(size - start);
        await handle.read(buffer, 0, buffer.length, start);
        // Only whole lines count: bytes after the last newline are a torn write.
        const end = buffer.lastIndexOf(0x0a) + 1;
        if (end === 0 && start > 0) {
          chunk *= 4;
          continue;
        }
        const goodSize = start + end;
        const lines = buffer.subarray(0, end).toString('utf8').split('\n');
        // The first line of a chunk that does not start the file may be cut: skip it.
        const whole = start === 0 ? lines : lines.slice(1);
        let found: number | undefined;
        for (let i = whole.length - 1; i >= 0 && found === undefined; i -= 1) found = msgNumOf(whole[i]!);
        if (found === undefined && start > 0) {
          chunk *= 4;
          continue;
        }
        this.last = found ?? 0;
        this.holds = found !== undefined;
        this.size = goodSize;
        break;
      }
    } finally {
      await handle.close();
    }
    if (this.size < size) {
      this.log.warn({ file: this.path, bytes: size - this.size }, 'transcript ended in a torn entry (a crash while writing); cut it off, it is written again');
      await truncate(this.path, this.size);
    }
  }

  private async recoverFromIndex(size: number): Promise<void> {
    const entries = await this.readIndex();
    if (entries.length === 0) {
      this.size = size;
      this.last = 0;
      if (size > 0) {
        this.log.warn({ file: this.path }, 'text transcript without its index: cannot tell which messages it holds; new ones are appended');
      }
      return;
    }
    // The newest index entry the text really reaches.
    const good = entries.findLast((entry) => entry.size <= size) ?? { msgNum: 0, size: 0 };
    this.last = good.msgNum;
    this.holds = good.size > 0;
    this.size = good.size;
    if (size > good.size) {
      this.log.warn({ file: this.path, bytes: size - good.size }, 'text transcript ran past its index (a crash while writing); cut it off, it is written again');
      await truncate(this.path, good.size);
    }
    if (good !== entries.at(-1)) this.indexBehind = true;
  }

  private async readIndex(): Promise<Array<{ msgNum: number; size: number }>> {
    let text: string;
    try {
      text = await readFile(this.indexPath!, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const entries: Array<{ msgNum: number; size: number }> = [];
    for (const line of text.split('\n')) {
      const match = /^(\d+) (\d+)$/.exec(line);
      if (match) entries.push({ msgNum: Number(match[1]), size: Number(match[2]) });
    }
    return entries;
  }

  /**
   * Appends the pending entries above `last` (in msg_num order), fsyncs, and forgets them. Throws on a
   * write error, keeping them pending.
   *
   * The file's size is checked on the handle the entries are appended through: a size other than the
   * one this process left means another process wrote meanwhile (with workers sharing `dir`, a paused
   * predecessor of the unit waking up, or the successor that took the unit over), so the tail is read
   * again and only what the file lacks is appended. A shared directory cannot check a lease, so the
   * check is kept close to the write: when the process stood still between the two (a worker paused past
   * its lease, woken up after its successor wrote), it is made again. What remains is the instant
   * between the clock's read and the system's write call.
   */
  async write(): Promise<number> {
    await this.recover();
    this.lastUsed = Date.now();
    if (this.indexBehind) await this.writeIndex();
    if (this.dirty) {
      await truncate(this.path, this.size).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
      this.dirty = false;
    }
    await mkdirPrivate(dirname(this.path));
    const handle = await openPrivate(this.path, 'a');
    let appended: Appended | undefined;
    try {
      for (let check = 1; appended === undefined; check += 1) {
        const onDisk = (await handle.stat()).size;
        if (onDisk !== this.size) {
          this.log.info({ file: this.path, expected: this.size, found: onDisk }, 'transcript was written by another process (a previous holder of the unit); its tail is read again');
          this.recovered = false;
          await this.recover();
        }
        // undefined: the process stood still between the check and the write: check again.
        appended = await this.appendPending(handle, check < SIZE_CHECKS ? this.clock() : undefined);
      }
    } finally {
      await handle.close();
    }
    // The markers and the older numberings' entries are in the file now: never written again.
    this.beforeResets.splice(0, appended.markers);
    if (appended.count === 0 && appended.markers === 0) return 0;
    if (appended.created) await syncDirectory(dirname(this.path));
    if (this.indexPath) {
      this.indexBehind = true;
      await this.writeIndex();
    }
    // Forgotten only now, so "nothing pending" means the file and its index are on disk (a failed
    // index write keeps them; the next write skips them by `last` and writes the index).
    if (this.pending === appended.source) {
      this.pending = this.pending.filter((entry) => entry.msgNum > this.last);
    } else {
      // A reset came while this write was on its way: the entries it wrote from are now the first ones
      // before a marker, in the numbering `last` counts; only those it wrote are forgotten (a new
      // history's first entries, added meanwhile, are not taken for the old ones of the same msg_num).
      const first = this.beforeResets[0];
      if (first?.entries === appended.source) first.entries = first.entries.filter((entry) => entry.msgNum > this.last);
    }
    return appended.count;
  }

  /**
   * Appends (and fsyncs) the pending entries the file lacks, through `handle`; moves `size` and `last`.
   * Undefined, writing nothing, when more than STILL_MS passed since the size was checked (`checkedAt`):
   * the clock is read right before the write is handed to the system, so a holder paused past its
   * lease and woken up does not append what its successor wrote meanwhile.
   */
  private async appendPending(handle: FileHandle, checkedAt: number | undefined): Promise<Appended | undefined> {
    const source = this.pending;
    // Each numbering's entries above where the file is in it, then its marker; after a marker the
    // entries start again at 1.
    const markers = this.beforeResets.length;
    let after = this.last;
    let text = '';
    let count = 0;
    for (const segment of this.beforeResets) {
      const older = inOrderAfter(segment.entries, after);
      text += older.map((entry) => entry.text).join('') + segment.marker;
      count += older.length;
      after = 0;
    }
    const entries = inOrderAfter(source, after);
    if (entries.length === 0 && markers === 0) {
      this.pending = [];
      return { count: 0, created: false, markers, source };
    }
    const data = Buffer.from((this.size === 0 ? this.format.header(this.meta) : '') + text + entries.map((entry) => entry.text).join(''), 'utf8');
    // Read before the write: `entries` may be the pending array itself, which grows meanwhile.
    count += entries.length;
    const last = entries.at(-1)?.msgNum ?? after;
    const created = this.size === 0;
    if (checkedAt !== undefined && this.clock() - checkedAt > STILL_MS) return undefined;
    try {
      await handle.appendFile(data);
      await handle.sync();
    } catch (error) {
      this.dirty = true;
      throw error;
    }
    this.size += data.length;
    this.last = last;
    this.holds = true;
    return { count, created, markers, source };
  }

  private async writeIndex(): Promise<void> {
    await appendSynced(this.indexPath!, Buffer.from(`${this.last} ${this.size}\n`));
    this.indexBehind = false;
  }
}

/**
 * The entries above `after`, in msg_num order, each msg_num once. Entries usually wait already in
 * order (a chat's trail hands them on so): then they are taken as they are, without a sorted copy.
 */
/** What one append wrote: entries, whether it made the file, how many markers, and from which pending list. */
interface Appended {
  count: number;
  created: boolean;
  markers: number;
  source: PendingEntry[];
}
