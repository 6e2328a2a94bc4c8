import type { ChatMessage } from '../api/types.js';
import { retryUntilStopped } from './backoff.js';
import { FirstStartFrames, planFirstStart, SOCKET_HISTORY } from './first-start.js';
import type { Delivery, HistoryReset, SequencerOptions } from './sequencer-contract.js';

export type { Delivery, HistoryReset, ResetReason, SequencerOptions } from './sequencer-contract.js';

/** Frames waiting before reading pauses, and before it resumes. */
const PAUSE_AT = 1_000;
const RESUME_AT = 100;

/** How long a chat stopped during its first start's history still waits for the history's end (to keep its position). */
const SEEDING_AT_STOP_MS = 2_000;

type Task =
  | { live: ChatMessage; fromHistory: boolean; wire: string | undefined }
  | { run: () => Promise<void>; done: () => void };

/**
 * Exactly once, in order, for one chat. Everything goes through one serial queue. A socket opened with
 * a cursor carries the chat's 50 most recent messages first (msg_nums start at 1 with no gaps): a
 * message at or below the cursor was already handed on and is dropped; the first one past cursor+1
 * (more than 50 missed, or the bot's own posts, which are not echoed live) first has the gap filled
 * from getchathistory. So a reconnect costs no REST call unless over 50 messages were missed.
 *
 * A first start (no cursor yet) opens with the history too and takes its position from it (startFrom),
 * so it costs no REST call either (10,000 chats cost 10,000 getchathistory calls before). The semantics
 * are those of the REST read it replaces: with history_on_first_start 0 nothing older than the socket
 * is handed on (the position is the newest msg_num the socket sent, 0 for an empty chat), and with N
 * the N most recent are handed on first, marked backfilled. Where the frames cannot say, the REST read
 * is made as before: more wanted than the socket sends (then the socket opens without history), or
 * frames missing (fewer than the wanted or the chat's count). The history ends at the pong of the ping
 * sent on open (chat-connection.ts): a frame past the socket's 50 is live, and handed on; a message
 * posted within that round trip of a chat with fewer than 50 counts as history, as one posted just
 * before the socket opened did (the REST read came later still).
 */
export class ChatSequencer {
  private cursor: number | undefined;
  /** A first start's history frames, gathered until the history sent on connect is all in. */
  private readonly firstStart = new FirstStartFrames();
  /** The first live msg_num seen before the first catch-up finished (a first start must not skip it). */
  private firstLive: number | undefined;
  /** The serial queue: an array and one loop draining it (a promise chain cost two promises a frame). */
  private readonly queue: Array<Task | undefined> = [];
  private head = 0;
  private draining: Promise<void> | undefined;
  private waitingFrames = 0;
  private paused = false;
  private stopped = false;
  /** The cursor when a socket with history opened (undefined: no check due), and its history's newest msg_num. */
  private historyAnchor: number | undefined;
  private historyNewest = 0;
  /** Resets done so far, and when the anchor was taken: a check whose anchor predates a reset is void. */
  private resets = 0;
  private anchorResets = 0;
  readonly stats = { delivered: 0, backfilled: 0, duplicates: 0, gapFills: 0, own: 0, resets: 0 };
  /** When the plugins were last done with a message (ms since the epoch): how long a chat has been quiet or stuck. */
  lastHandedAt: number | undefined;

  constructor(private readonly options: SequencerOptions) {
    this.cursor = options.cursor;
  }

  get position(): number | undefined {
    return this.cursor;
  }

  /**
   * Whether a socket opened now should carry the history: with a cursor to sort it by, it replaces a
   * catch-up; without one (a first start), its newest message is the starting position, so a first
   * start costs no REST call (unless more recent messages are wanted than the 50 the socket sends).
   */
  get wantsHistory(): boolean {
    return this.cursor !== undefined || this.options.historyOnFirstStart <= SOCKET_HISTORY;
  }

  /**
   * The socket opened. With `history` its first frames are the catch-up (with a cursor) or give the
   * starting position (a first start); without, catch up by getchathistory before any live message.
   */
  opened(history = false): void {
    // A first start's history of an earlier socket that never ended: this socket's says it again.
    this.firstStart.abandon();
    if (history && this.cursor === undefined) {
      // A first start: the history frames say where the chat is. The position is taken in the queue, so
      // nothing queued after it (a later frame, a stop waiting for idle()) passes it.
      const frames = this.firstStart.begin();
      void this.enqueue(async () => {
        const history = await frames;
        if (history) await this.startFrom(history);
      });
      return;
    }
    if (history && this.cursor !== undefined) {
      // Everything handed on so far was read before the socket opened, so the history it sends reaches
      // at least this far, unless the chat's history went backwards (checked at historyEnded()).
      this.historyAnchor = this.cursor;
      this.anchorResets = this.resets;
      this.historyNewest = 0;
      return;
    }
    this.historyAnchor = undefined;
    this.enqueue(() => this.catchUp());
  }

  /**
   * The history sent on connect is all in. Its newest msg_num below the cursor means the service's
   * history went backwards (a service started again from scratch, a chat made again under the same
   * id): the messages to come would all look handled. Then the chat is reset.
   */
  historyEnded(): void {
    if (this.firstStart.past || this.firstStart.gathering) {
      this.firstStart.finish();
      this.firstStart.past = false;
      return;
    }
    const anchor = this.historyAnchor;
    const newest = this.historyNewest;
    const resets = this.anchorResets;
    this.historyAnchor = undefined;
    if (anchor === undefined || newest >= anchor) return;
    void this.enqueue(async () => {
      if (this.resets !== resets || this.cursor === undefined) return;
      await this.resetNow({ reason: 'behind', previousCursor: this.cursor, newest });
    });
  }

  /** The chat id names a chat other than the cursor's (made again): reset before anything else is taken. */
  recreated(reason: 'recreated' | 'replaced' = 'recreated', previousCursor = this.cursor): Promise<void> {
    return this.enqueue(() => this.resetNow({ reason, previousCursor, newest: undefined }));
  }

  /** Tells the plugins (through the runner), then hands on the new history from its first message. */
  private async resetNow(reset: HistoryReset): Promise<void> {
    if (this.stopped) return;
    this.stats.resets += 1;
    await this.options.reset?.(reset);
    this.setCursor(0);
    // Counted once the cursor is reset: an anchor taken while the plugins were being told is the old cursor.
    this.resets += 1;
    await this.fillFrom(0);
  }

  /** A frame of the socket (`wire`: its text); `fromHistory` when it came in the history sent on connect. */
  live(message: ChatMessage, fromHistory = false, wire?: string): void {
    // A first start keeps the socket's 50 until the history is all in; a frame past them is live.
    if (this.firstStart.gathering && fromHistory && this.firstStart.take(message)) return;
    if (this.firstStart.past) fromHistory = false;
    if (this.cursor === undefined) this.firstLive ??= message.msg_num;
    else if (fromHistory && message.msg_num > this.historyNewest) this.historyNewest = message.msg_num;
    this.waitingFrames += 1;
    if (this.waitingFrames >= PAUSE_AT && !this.paused && this.options.flow) {
      this.paused = true;
      this.options.flow.pause();
    }
    this.push({ live: message, fromHistory, wire });
  }

  /** Looks for messages past the cursor now (to confirm the bot's own posts in a quiet chat). */
  fill(): Promise<void> {
    return this.enqueue(async () => {
      if (this.cursor !== undefined) await this.fillFrom(this.cursor);
    });
  }

  /**
   * The bot's own message, seen stored (its post was confirmed from the history): when it is the very
   * next message it is taken in its place now, so the chain (the logger, the gateways) gets it
   * without waiting for a member to speak. Otherwise a later gap fill brings it, in order.
   */
  ownStored(message: ChatMessage): void {
    void this.enqueue(async () => {
      if (this.isNext(message)) await this.handle(message, true);
    });
  }

  /** Resolves when everything queued has been handed on. */
  idle(): Promise<void> {
    return this.draining ?? Promise.resolve();
  }

  /** Frames received and not yet handed on. */
  get backlog(): number {
    return this.waitingFrames;
  }

  stop(): void {
    this.stopped = true;
    // A first start stopped within the round trip of its history still takes the position once the
    // history is in (the next start is then not a first start, and hands on what was said meanwhile),
    // unless the history does not end soon.
    this.firstStart.abandonAfter(SEEDING_AT_STOP_MS);
  }

  private enqueue(run: () => Promise<void>): Promise<void> {
    return new Promise((done) => this.push({ run, done }));
  }

  private push(task: Task): void {
    this.queue.push(task);
    this.draining ??= this.drain();
  }

  private async drain(): Promise<void> {
    while (this.head < this.queue.length) {
      const task = this.queue[this.head]!;
      this.queue[this.head] = undefined;
      this.head += 1;
      if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      try {
        if (!this.stopped) {
          if (!('live' in task)) await task.run();
          else if (this.isNext(task.live)) {
            // The usual case, kept free of async helpers: one await per message.
            await this.deliverOne(task.live, task.fromHistory, task.wire);
            this.delivered(task.live, task.fromHistory);
          } else await this.onLive(task.live, task.fromHistory, task.wire);
        }
      } catch (error) {
        this.options.log.error({ err: error }, 'chat sequencer task failed');
      } finally {
        if ('live' in task) this.frameDone();
        else task.done();
      }
    }
    this.draining = undefined;
  }

  private frameDone(): void {
    this.waitingFrames -= 1;
    if (this.paused && this.waitingFrames <= RESUME_AT) {
      this.paused = false;
      this.options.flow?.resume();
    }
  }

  private async catchUp(): Promise<void> {
    if (this.cursor !== undefined) {
      await this.fillFrom(this.cursor);
      return;
    }
    // First start: either some recent history, or just the current position.
    const wanted = this.options.historyOnFirstStart;
    const latest = await this.retrying('read the latest messages', () => this.options.fetchLatest(Math.max(1, wanted)));
    if (latest === undefined) return;
    if (wanted === 0) {
      // "From now on" starts when the socket opened: anything it carried is handed on.
      const newest = latest.at(-1)?.msg_num ?? 0;
      this.setCursor(this.firstLive === undefined ? newest : Math.min(newest, this.firstLive - 1));
      this.options.log.info({ cursor: this.cursor }, 'first start: history is not handed on');
      return;
    }
    this.setCursor((latest[0]?.msg_num ?? 1) - 1);
    for (const message of latest) await this.handle(message, true);
  }

  /** A first start placed by the history the socket sent on connect (first-start.ts). */
  private async startFrom(history: ChatMessage[]): Promise<void> {
    if (this.cursor !== undefined) {
      if (this.stopped) return;
      // Placed meanwhile (an earlier socket's history, a reset): these frames are a reconnect's catch-up.
      for (const message of history) await this.onLive(message, true);
      return;
    }
    const plan = planFirstStart(history, this.options.historyOnFirstStart);
    if ('readHistory' in plan) {
      await this.catchUp();
      return;
    }
    this.setCursor(plan.cursor);
    if (plan.handOn.length === 0 && this.options.historyOnFirstStart === 0) this.options.log.info({ cursor: this.cursor }, 'first start: history is not handed on');
    for (const message of plan.handOn) await this.handle(message, true);
  }

  private async onLive(message: ChatMessage, fromHistory: boolean, wire?: string): Promise<void> {
    if (this.cursor === undefined) {
      // Not caught up yet (a frame before the first catch-up): catching up covers it.
      await this.catchUp();
    }
    if (message.msg_num <= this.cursor!) {
      this.stats.duplicates += 1;
      return;
    }
    if (message.msg_num > this.cursor! + 1) {
      this.stats.gapFills += 1;
      await this.fillFrom(this.cursor!, message.msg_num);
      if (message.msg_num <= this.cursor!) return;
    }
    await this.handle(message, fromHistory, wire);
  }

  /** Hands on everything after `after` from history, oldest first (up to `until`, if given). */
  private async fillFrom(after: number, until?: number): Promise<void> {
    await this.retrying('fill in from history', async () => {
      for await (const message of this.options.fetchAfter(this.cursor ?? after)) {
        if (this.stopped) return;
        if (until !== undefined && message.msg_num >= until) break;
        if (message.msg_num <= (this.cursor ?? after)) continue;
        await this.handle(message, true);
      }
    });
  }

  /** Whether a frame is the very next message, to be handed on as it is (no catch-up, no gap). */
  private isNext(message: ChatMessage): boolean {
    return this.cursor !== undefined && message.msg_num === this.cursor + 1;
  }

  private async handle(message: ChatMessage, backfilled: boolean, wire?: string): Promise<void> {
    if (this.stopped) return;
    await this.deliverOne(message, backfilled, wire);
    this.delivered(message, backfilled);
  }

  /**
   * Hands a message to the plugins. The bot's own message is first offered to the outbox (it confirms a
   * post), then handed on too, marked as the bot's (the chain's ctx.own): gateways relay the bot's
   * voice, and the plugins that answer skip it (the bot never answers itself).
   */
  private deliverOne(message: ChatMessage, backfilled: boolean, wire?: string): Promise<void> {
    if (message.user_id === this.options.botUserId) {
      this.stats.own += 1;
      this.options.own(message);
    }
    const created = Date.parse(message.created);
    return this.options.deliver(message, { backfilled, ageMs: Number.isNaN(created) ? 0 : Math.max(0, Date.now() - created), wire });
  }

  /** After the plugins are done with it: counted, and the cursor moves past it (the bot's own too). */
  private delivered(message: ChatMessage, backfilled: boolean): void {
    if (message.user_id !== this.options.botUserId) {
      this.stats.delivered += 1;
      if (backfilled) this.stats.backfilled += 1;
    }
    this.lastHandedAt = Date.now();
    this.setCursor(message.msg_num);
  }

  private setCursor(msgNum: number): void {
    this.cursor = msgNum;
    this.options.saveCursor(msgNum);
  }

  /** History reads are retried until they work or the chat stops: a gap is never skipped. */
  private retrying<T>(what: string, attempt: () => Promise<T>): Promise<T | undefined> {
    return retryUntilStopped(this.options.log, what, attempt, () => this.stopped);
  }
}
