import type { Logger } from 'pino';
import type { ChatInfo, ChatMessage, ChatReset, GroupsClient } from '../../src/index.js';
import type { DiskTrouble } from './disk-trouble.js';
import type { TranscriptWriter } from './writer.js';

export interface TrailOptions {
  chat: ChatInfo;
  botUserId: string;
  includeOwn: boolean;
  /** On a chat's very first transcript, fetch its whole history too. */
  fullHistory: boolean;
  client: GroupsClient;
  writer: TranscriptWriter;
  trouble: DiskTrouble;
  log: Logger;
  /** Aborted at stop: waits and history reads give up. */
  signal: AbortSignal;
  /** The longest wait between attempts to read the files. */
  retryMaxMs: number;
  /** Called when reading the files works again after failures. */
  onRecovered?(): void;
  /** True while there is no room for more messages in memory. */
  full(): boolean;
  /** A message read from the chat's history as the transcript keeps it (the origin of a relayed line added). */
  fromHistory?(message: ChatMessage): ChatMessage;
}

export class StoppedError extends Error {
  override name = 'StoppedError';
}

/**
 * One chat's way into the transcript, in msg_num order and off the plugin chain: messages are queued
 * and taken one at a time. The first time, it reads where the chat's files end; whatever lies between
 * that and the messages arriving (lost from memory in a crash, said while the bot was away, or dropped
 * while memory was full) is read from `getchathistory`. A message at or below what it has already
 * taken is a replay and is skipped.
 */
export class ChatTrail {
  /** The highest msg_num handed to the writer (undefined: not known yet, or nothing before). */
  last: number | undefined;
  private initialized = false;
  /** Messages were dropped (memory full): fill from history at the next chance. */
  private mustFill = false;
  private work: Promise<void> = Promise.resolve();
  private queued = 0;
  /** Tasks queued or running: while there are any, a new message waits its turn behind them. */
  private tasks = 0;
  private kicked = false;
  readonly stats = { taken: 0, duplicates: 0, gap_fills: 0, dropped: 0 };

  constructor(private readonly options: TrailOptions) {}

  get chat(): ChatInfo {
    return this.options.chat;
  }

  /** Messages queued here and not yet handed to the writer. */
  get waiting(): number {
    return this.queued;
  }

  get needsFill(): boolean {
    return this.mustFill;
  }

  /** Queues a message from the chain (`wire`: its text as the socket brought it, for the jsonl entry). */
  push(message: ChatMessage, wire?: string): void {
    // The common case: the next message in order with nothing queued before it. Taken at once, without
    // a promise per message (a measurable share of the throughput bench).
    if (this.tasks === 0 && this.initialized && !this.mustFill && this.last !== undefined && message.msg_num === this.last + 1) {
      this.accept(message, wire);
      return;
    }
    this.queued += 1;
    void this.enqueue(() => {
      // In hand now: from here it is counted where it goes (the writer), so memory stays bounded.
      this.queued -= 1;
      return this.take(message, wire);
    });
  }

  /** Memory is full: the message is not kept; it is read from history once there is room. */
  drop(): void {
    this.stats.dropped += 1;
    this.mustFill = true;
  }

  /** Reads where the chat's files end and fills up to the chat's end (at start, for quiet chats). */
  init(): Promise<void> {
    return this.enqueue(() => this.ensureInitialized());
  }

  /** Fills from history up to the chat's end now (after drops, or at stop for the bot's last posts). */
  catchUp(): Promise<void> {
    return this.enqueue(async () => {
      await this.ensureInitialized();
      if (this.last !== undefined) await this.fill(this.last);
    });
  }

  /**
   * The chat's history was reset (the supervisor's chatReset): a marker line goes into the files, and
   * the messages of the new history are taken from msg_num 1 on, in their turn after what is queued.
   */
  reset(reset: ChatReset): Promise<void> {
    return this.enqueue(async () => {
      await this.ensureInitialized();
      this.options.writer.reset(this.chat, {
        at: reset.at, reason: reset.reason, previousCursor: reset.previousCursor, newest: reset.newest, chatId: this.chat.id,
      });
      this.options.log.warn({ chat: this.chat.subject, transcriptHad: this.last, newest: reset.newest },
        'transcript: the chat\'s history was reset; a marker line is written and the new messages follow it from msg_num 1');
      this.last = 0;
      this.mustFill = false;
    });
  }

  /** Fills up what was dropped, unless a fill is already queued. */
  kick(): void {
    if (this.kicked) return;
    this.kicked = true;
    void this.catchUp().finally(() => {
      this.kicked = false;
    });
  }

  /** Resolves when everything queued so far is done. */
  idle(): Promise<void> {
    return this.work;
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    this.tasks += 1;
    this.work = this.work.then(task).catch((error: unknown) => {
      if (!(error instanceof StoppedError)) this.options.log.error({ err: error, chat: this.chat.subject }, 'transcript: could not take a message');
    }).then(() => {
      this.tasks -= 1;
    });
    return this.work;
  }

  private async take(message: ChatMessage, wire: string | undefined): Promise<void> {
    await this.ensureInitialized();
    if (this.last !== undefined && message.msg_num <= this.last) {
      this.stats.duplicates += 1;
      return;
    }
    // Within one run the bot's own posts come through the chain in their place, so a gap is an own
    // post left out (include_own off: not read) or a message a plugin before the logger kept to
    // itself (read while own posts are wanted, as before), or messages dropped (always read).
    if (this.last !== undefined && message.msg_num > this.last + 1 && (this.options.includeOwn || this.mustFill)) {
      await this.fill(this.last, message.msg_num);
      if (message.msg_num <= this.last!) return;
      if (this.mustFill) {
        // The gap could not be filled (memory is full): this message comes later from history too.
        this.stats.dropped += 1;
        return;
      }
    }
    this.accept(message, wire);
  }

  private async ensureInitialized(): Promise<void> {
    let delay = Math.min(250, this.options.retryMaxMs);
    while (!this.initialized) {
      if (this.options.signal.aborted) throw new StoppedError('stopped');
      try {
        const onDisk = await this.options.writer.lastOnDisk(this.chat);
        if (this.options.trouble.worked()) this.options.onRecovered?.();
        this.last = onDisk ?? (this.options.fullHistory ? 0 : undefined);
        this.initialized = true;
        if (onDisk !== undefined) this.options.log.debug({ chat: this.chat.subject, last: onDisk }, 'transcript: continuing after the last message on disk');
        // Whatever the chat said since (a crash lost it from memory, or it came while the bot was away).
        if (this.last !== undefined) await this.fill(this.last);
      } catch (error) {
        if (error instanceof StoppedError) throw error;
        this.options.trouble.failed(error, `the files of ${this.chat.groupName}/${this.chat.subject}`, 'read');
        await this.sleep(delay);
        delay = Math.min(delay * 2, this.options.retryMaxMs);
      }
    }
  }

  /** Hands on the chat's history after `after` (up to `until`, exclusive), oldest first. */
  private async fill(after: number, until?: number): Promise<void> {
    let delay = 500;
    for (;;) {
      if (this.options.signal.aborted) throw new StoppedError('stopped');
      try {
        this.stats.gap_fills += 1;
        const pages = this.options.client.paginate<ChatMessage>('getchathistory', {
          chat_id: this.chat.id, start_msg_num: this.last ?? after, sort_dir: 'asc', limit: 100,
        });
        for await (const message of pages) {
          if (until !== undefined && message.msg_num >= until) break;
          if (message.msg_num <= (this.last ?? after)) continue;
          if (this.options.full()) {
            // No room: stop here; the rest is read once the writer caught up.
            this.mustFill = true;
            return;
          }
          if (message.user_id === this.options.botUserId && !this.options.includeOwn) this.last = message.msg_num;
          else this.accept(this.options.fromHistory?.(message) ?? message);
          if (this.options.signal.aborted) throw new StoppedError('stopped');
        }
        this.mustFill = false;
        return;
      } catch (error) {
        if (error instanceof StoppedError) throw error;
        this.options.log.warn({ err: error, chat: this.chat.subject, delayMs: delay }, 'transcript: cannot read the chat\'s history; trying again');
        await this.sleep(delay);
        delay = Math.min(delay * 2, 30_000);
      }
    }
  }

  private accept(message: ChatMessage, wire?: string): void {
    this.options.writer.add(message, this.chat, wire);
    this.last = message.msg_num;
    this.stats.taken += 1;
  }

  private sleep(ms: number): Promise<void> {
    const signal = this.options.signal;
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(new StoppedError('stopped'));
        return;
      }
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(new StoppedError('stopped'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
