import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ChatInfo, ChatMessage } from '../../src/index.js';
import type { DiskTrouble } from './disk-trouble.js';
import type { Format, RenderOptions, ResetNote } from './formats.js';
import { fileDay, type PathPattern, type PathValues } from './path-pattern.js';
import { dayOf, messageDate } from './time.js';
import { TranscriptFile } from './transcript-file.js';

export interface WriterOptions {
  root: string;
  pattern: PathPattern;
  formats: Format[];
  render: RenderOptions;
  botName: string;
  flushIntervalMs: number;
  retryMaxMs: number;
  log: Logger;
  trouble: DiskTrouble;
  /** Called when writing works again after failures. */
  onRecovered?(): void;
  /**
   * The bot's storage barrier (env.storage.durable): with workers sharing the bots, only the holder of
   * the bot's unit may write its transcripts; once another worker holds it, nothing more is written here.
   */
  durable?(): Promise<void>;
}

/** How long a file that has nothing waiting is remembered after its last write. */
const IDLE_FILE_MS = 10 * 60_000;

/**
 * Messages waiting that start a write before the flush interval is up. In a busy chat a second's
 * entries otherwise outlive two young-generation collections and are copied into the old one, whose
 * collections cost far more (a fifth of the supervisor's time at 25,000 messages a second).
 */
const EARLY_WRITE_AT = 1_000;

/**
 * Once a chat is busy (a write started early), how often the writer looks whether it went quiet: the
 * tail of a burst, fewer than EARLY_WRITE_AT, is then written a moment after the last message rather
 * than up to a whole flush interval later. A quiet chat (no early write) waits for the interval as before.
 */
const QUIET_CHECK_MS = 25;

/**
 * The transcript files of one logger: entries wait in memory per file and are appended and fsynced
 * every `flushIntervalMs`, or as soon as 1,000 wait. A failure (a full disk, a directory that cannot
 * be made) is logged clearly and counted; the entries stay and the next attempt comes after a
 * backoff, without blocking anyone.
 */
export class TranscriptWriter {
  private readonly files = new Map<string, TranscriptFile>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<boolean> | undefined;
  /** The unit's lease was lost: said once. */
  private fenced = false;
  private failures = 0;
  private stopped = false;
  /** Messages waiting (the most any one format has): asked for with every message, so kept, not counted. */
  private waiting = 0;
  private lastFiles: { chat: ChatInfo; subject: string; day: string; files: TranscriptFile[] } | undefined;
  /** Messages added so far (the quiet check compares it between its looks), and the check's timer while busy. */
  private added = 0;
  private quietCheck: NodeJS.Timeout | undefined;
  readonly stats = { written: 0 };

  constructor(private readonly options: WriterOptions) {}

  /** Path values of a chat (and a day, for a message). */
  valuesFor(chat: ChatInfo, format: Format, day?: string): PathValues {
    const [year, month, dayOfMonth] = day ? day.split('-') : [];
    return {
      group: chat.groupName, group_id: chat.groupId, chat: chat.subject, chat_id: chat.id, bot: this.options.botName,
      ext: format.ext, date: day, year, month, day: dayOfMonth,
    };
  }

  /** The file for a path (remembered, so what it holds is read once). */
  file(path: string, format: Format, chat: ChatInfo, day: string | undefined): TranscriptFile {
    let file = this.files.get(path);
    if (!file) {
      file = new TranscriptFile(path, format, { group: chat.groupName, chat: chat.subject, period: day, timeZone: this.options.render.timeZone }, this.options.log);
      this.files.set(path, file);
    }
    return file;
  }

  /** Queues a message for every format's file of its day (`wire`: its text from the socket, see Format.entry). */
  add(message: ChatMessage, chat: ChatInfo, wire?: string): void {
    const day = dayOf(messageDate(message.created), this.options.render.timeZone);
    for (const file of this.filesOf(chat, day)) file.pending.push({ msgNum: message.msg_num, text: file.format.entry(message, this.options.render, wire) });
    this.waiting += 1;
    this.added += 1;
    // Not while writes fail: those wait for their backoff.
    if (this.waiting >= EARLY_WRITE_AT && this.flushing === undefined && this.failures === 0 && !this.stopped) {
      void this.flush();
      this.watchForQuiet();
    }
  }

  /** While busy: writes what waits once no message came for a look (QUIET_CHECK_MS); ends when nothing waits. */
  private watchForQuiet(): void {
    if (this.quietCheck) return;
    let seen = this.added;
    this.quietCheck = setInterval(() => {
      if (this.waiting === 0 || this.stopped) {
        clearInterval(this.quietCheck);
        this.quietCheck = undefined;
        return;
      }
      if (this.added === seen && this.flushing === undefined && this.failures === 0) void this.flush();
      seen = this.added;
    }, QUIET_CHECK_MS);
    this.quietCheck.unref();
  }

  /**
   * The chat's history was reset: each format's file of the day it was noticed gets a marker line next,
   * and takes entries from msg_num 1 again (every other file the writer knows of the chat too, without
   * a marker of its own, for a new message dated on another day).
   */
  reset(chat: ChatInfo, note: ResetNote): void {
    const day = dayOf(messageDate(note.at), this.options.render.timeZone);
    const marked = new Set(this.filesOf(chat, day));
    for (const file of marked) file.markReset(file.format.reset(note, this.options.render));
    for (const file of this.files.values()) {
      if (marked.has(file) || file.meta.chat !== chat.subject || file.meta.group !== chat.groupName) continue;
      // An empty marker: what waits keeps its numbering, what comes next starts at 1.
      file.markReset('');
    }
  }

  /** Every format's file for a chat and day; the last answer is reused (runs of messages share it). */
  private filesOf(chat: ChatInfo, day: string): TranscriptFile[] {
    const last = this.lastFiles;
    // Compared by value: a chat's subject (a path field) may change between messages.
    if (last && last.chat === chat && last.subject === chat.subject && last.day === day && last.files.every((f) => this.files.get(f.path) === f)) {
      return last.files;
    }
    const files = this.options.formats.map((format) => {
      const path = join(this.options.root, this.options.pattern.render(this.valuesFor(chat, format, day)));
      return this.file(path, format, chat, this.options.pattern.daily ? day : undefined);
    });
    this.lastFiles = { chat, subject: chat.subject, day, files };
    return files;
  }

  /**
   * The last msg_num of a chat on disk: per format, the newest file of the chat that holds a message;
   * the lowest of the formats (so a format that fell behind is filled up). Undefined when no format
   * has a file of the chat yet. Throws when the directory cannot be read.
   */
  async lastOnDisk(chat: ChatInfo): Promise<number | undefined> {
    let lowest: number | undefined;
    for (const format of this.options.formats) {
      const found = await this.options.pattern.find(this.options.root, this.valuesFor(chat, format));
      found.sort((a, b) => (fileDay(a.values) ?? '').localeCompare(fileDay(b.values) ?? ''));
      let last: number | undefined;
      for (const candidate of found.toReversed()) {
        const file = this.file(candidate.path, format, chat, fileDay(candidate.values));
        await file.recover();
        if (file.holds) {
          last = file.last;
          break;
        }
      }
      if (last !== undefined) lowest = Math.min(lowest ?? last, last);
    }
    return lowest;
  }

  /** Messages waiting in memory (the most any one format has waiting). */
  get pending(): number {
    return this.waiting;
  }

  /** Counts what waits from the files themselves (after a flush; between flushes add() counts). */
  private recount(): void {
    const perFormat = new Map<string, number>();
    for (const file of this.files.values()) perFormat.set(file.format.name, (perFormat.get(file.format.name) ?? 0) + file.waitingCount);
    this.waiting = Math.max(0, ...perFormat.values());
  }

  get fileCount(): number {
    return this.files.size;
  }

  start(): void {
    this.schedule(this.options.flushIntervalMs);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.flush().then((ok) => this.schedule(ok ? this.options.flushIntervalMs : this.retryDelay()));
    }, delayMs);
    this.timer.unref();
  }

  private retryDelay(): number {
    const base = Math.min(this.options.retryMaxMs, this.options.flushIntervalMs * 2 ** Math.min(this.failures - 1, 16));
    return base / 2 + Math.random() * (base / 2);
  }

  /** The storage barrier (workers: the unit's lease still provably this worker's). */
  private async stillOurs(): Promise<boolean> {
    if (this.fenced) return false;
    try {
      await this.options.durable?.();
      return true;
    } catch (error) {
      this.options.log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: its transcripts are written by the next holder');
      this.fenced = true;
      return false;
    }
  }

  /** Writes everything waiting; answers whether it all went to disk. One flush at a time. */
  flush(): Promise<boolean> {
    this.flushing ??= this.flushOnce().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async flushOnce(): Promise<boolean> {
    let failed: { error: NodeJS.ErrnoException; file: string } | undefined;
    let tried = false;
    for (const file of [...this.files.values()]) {
      if (!file.waiting) continue;
      // Before each file, not once a flush: a worker paused mid-flush past its lease writes no further file.
      if (!(await this.stillOurs())) return false;
      tried = true;
      try {
        this.stats.written += await file.write();
      } catch (error) {
        failed ??= { error: error as NodeJS.ErrnoException, file: file.path };
      }
    }
    this.recount();
    if (failed) {
      this.failures += 1;
      this.options.trouble.failed(failed.error, failed.file, 'write');
      return false;
    }
    this.failures = 0;
    // Only a write that happened tells that the disk works again (reading may still fail).
    if (tried && this.options.trouble.worked()) this.options.onRecovered?.();
    this.forgetIdleFiles();
    return true;
  }

  private forgetIdleFiles(): void {
    const now = Date.now();
    for (const [path, file] of this.files) if (!file.waiting && now - file.lastUsed > IDLE_FILE_MS) this.files.delete(path);
  }

  /** Stops the timer and writes what is left, trying again until `deadline` (ms since the epoch). */
  async stop(deadline: number): Promise<boolean> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.quietCheck);
    this.quietCheck = undefined;
    for (;;) {
      if (await this.flush()) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, Math.max(0, deadline - Date.now()))));
    }
  }
}
