import { resolve } from 'node:path';
import type { ChatInfo, ChatReset, PluginContext, PluginEnv, PluginInstance } from '../../src/index.js';
import { ChatTrail } from './chat-trail.js';
import { DiskTrouble } from './disk-trouble.js';
import { FORMATS } from './formats.js';
import { loggedMessage, withOrigin } from './logged-message.js';
import type { LoggerOptions } from './options.js';
import { PathPattern } from './path-pattern.js';
import { TranscriptWriter } from './writer.js';

/** How long stop() waits for history reads and the last writes. */
const STOP_BUDGET_MS = 4_000;

/**
 * The transcript logger: every chat message goes to its chat's trail (queued, never awaited by the
 * chain), from there to the writer, which appends and fsyncs on its own clock.
 */
export class TranscriptLogger implements PluginInstance {
  private readonly writer: TranscriptWriter;
  private readonly trouble: DiskTrouble;
  private readonly trails = new Map<string, ChatTrail>();
  private readonly stopper = new AbortController();
  private ticker: NodeJS.Timeout | undefined;
  private stopping = false;
  private overflowing = false;

  constructor(
    private readonly options: LoggerOptions,
    private readonly env: PluginEnv,
  ) {
    this.trouble = new DiskTrouble(env.log, () => this.pending());
    this.writer = new TranscriptWriter({
      trouble: this.trouble,
      root: resolve(env.configDir, options.dir),
      pattern: PathPattern.parse(options.path),
      formats: options.format.map((name) => FORMATS[name]),
      render: { timeZone: options.time_zone, timeFormat: options.time_format },
      botName: env.bot.name,
      flushIntervalMs: options.flush_interval_ms,
      retryMaxMs: options.retry_max_ms,
      log: env.log,
      onRecovered: () => this.refillDropped(),
      durable: () => env.storage.durable(),
    });
  }

  start(): void {
    this.writer.start();
    // Chats are joined after the plugins start: pick them up as they come, so a quiet chat's
    // transcript is completed (after a crash, or a time away) without waiting for someone to speak.
    this.ticker = setInterval(() => this.tick(), Math.min(1000, this.options.flush_interval_ms));
    this.ticker.unref();
  }

  /**
   * Every message in its place in msg_num order, the bot's own posts too (ctx.own: its answers, and the
   * lines it relayed from IRC, Slack or another chat), unless include_own is off.
   */
  handle(ctx: PluginContext, next: () => Promise<void>): Promise<void> {
    if (!this.stopping && (ctx.own === undefined || this.options.include_own)) {
      const trail = this.trail(ctx.chat);
      if (this.full()) {
        trail.drop();
        this.warnOverflow();
      } else {
        const logged = loggedMessage(ctx);
        // The frame's text is the entry only for the message as it came (a relayed line adds relayed_from).
        trail.push(logged, logged === ctx.message ? ctx.wire : undefined);
      }
    }
    return next();
  }

  /** The chat's history was reset: a marker in the files, then the new history from msg_num 1. */
  chatReset(reset: ChatReset): Promise<void> | undefined {
    if (this.stopping) return undefined;
    return this.trail(reset.chat).reset(reset);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.ticker);
    const deadline = Date.now() + STOP_BUDGET_MS;
    // The bot's last posts may not have come round the chain before the stop (the service had not
    // echoed them yet): read them from the chat's history now.
    const work = [...this.trails.values()].map((trail) => (this.options.include_own ? trail.catchUp() : trail.idle()));
    await Promise.race([Promise.all(work), new Promise((done) => setTimeout(done, STOP_BUDGET_MS / 2).unref())]);
    this.stopper.abort();
    const written = await this.writer.stop(deadline);
    const left = this.writer.pending + [...this.trails.values()].reduce((sum, trail) => sum + trail.waiting, 0);
    if (!written || left > 0) {
      this.env.log.error({ pending: left }, 'transcript messages could not be written before the stop; they are read from history on the next start');
    }
  }

  stats(): Record<string, number> {
    const trails = [...this.trails.values()];
    const sum = (key: keyof ChatTrail['stats']) => trails.reduce((total, trail) => total + trail.stats[key], 0);
    return {
      written: this.writer.stats.written,
      write_errors: this.trouble.errors,
      pending: this.pending(),
      duplicates: sum('duplicates'),
      gap_fills: sum('gap_fills'),
      dropped: sum('dropped'),
      files: this.writer.fileCount,
    };
  }

  private pending(): number {
    let waiting = this.writer.pending;
    for (const trail of this.trails.values()) waiting += trail.waiting;
    return waiting;
  }

  private full(): boolean {
    return this.pending() >= this.options.max_pending;
  }

  private trail(chat: ChatInfo): ChatTrail {
    let trail = this.trails.get(chat.id);
    if (!trail) {
      trail = new ChatTrail({
        chat, botUserId: this.env.bot.userId, includeOwn: this.options.include_own, fullHistory: this.options.full_history,
        client: this.env.client, writer: this.writer, trouble: this.trouble, log: this.env.log, signal: this.stopper.signal,
        retryMaxMs: this.options.retry_max_ms, full: () => this.full(), onRecovered: () => this.refillDropped(),
        fromHistory: (message) => withOrigin(message, this.env.ownPost(chat, message)),
      });
      this.trails.set(chat.id, trail);
      void trail.init();
    }
    return trail;
  }

  private tick(): void {
    if (this.stopping) return;
    for (const chat of this.env.chats()) this.trail(chat);
    this.refillDropped();
  }

  private warnOverflow(): void {
    if (this.overflowing) return;
    this.overflowing = true;
    this.env.log.error({ pending: this.pending(), max_pending: this.options.max_pending },
      'transcript memory is full (writing fails); further messages are not kept but read from the chat history once writing works again');
  }

  /** Reads what was dropped while memory was full, once there is room again (a half at a time). */
  private refillDropped(): void {
    if (this.stopping || this.trouble.failing || this.pending() >= this.options.max_pending / 2) return;
    this.overflowing = false;
    for (const trail of this.trails.values()) if (trail.needsFill) trail.kick();
  }
}
