import type { IrcMessage } from 'irc-framework';
import type { Logger } from 'pino';
import { DurableQueue, type QueueBacklog, type Storage } from '../../src/index.js';
import { ChannelOutbox, queueFile, warnAboutOrphanQueues, type QueuedLine } from './channel-outbox.js';
import { DeliveryTracker } from './delivery.js';
import { alreadyTaken, HistoryReplay, type ReplayedLine } from './history-replay.js';
import type { ConfirmMode, IrcLink } from './irc-link.js';
import { OutboxRing } from './outbox-ring.js';
import { ircLower, type ChannelToJoin } from './routes.js';
import { Wakeup, type Pacer } from './timing.js';

export type { QueuedLine } from './channel-outbox.js';

export interface OutboundSettings {
  dataDir: string;
  /** Where the queues are kept (env.storage), and the barrier before a line goes out. */
  storage?: Storage;
  /** The nick we asked for (ours in a channel's history, with the one we have now and `nick_` forms). */
  nick: string;
  channels: ChannelToJoin[];
  maxLines: number;
  warnAt: number;
  inFlight: number;
  maxAttempts: number;
  /** A line unconfirmed this long means the server stopped answering: reconnect. */
  confirmTimeoutMs: number;
  /** The server confirmed the first PRIVMSG of gateway line `line` with its msgid (for the message map). */
  onPosted?(line: string, channel: string, msgid: string): void;
  /**
   * Lines about to leave their queue (delivered, shown taken by the channel's history, or dropped after
   * refusals): their gateway lines are remembered here (SentKeys), durably, before the queue forgets
   * them. While a line waits, its queue's key says it was queued; so a line is always known to one of
   * the two, and remembering it costs nothing before it is written to IRC (#32 part 1).
   */
  remember?(lines: readonly QueuedLine[]): void;
}

/** How long a joined channel's lines wait for its history replay to be read, at most. */
const SETTLE_TIMEOUT_MS = 10_000;

/**
 * In barrier mode, a PING after this many unconfirmed lines at the latest, even when `in_flight` allows
 * more: at any pace a line then waits for its confirmation no longer than 20 lines' worth of pacing,
 * which the confirmation timeout (index.ts) allows for.
 */
const BARRIER_WINDOW_MAX = 20;

/**
 * How long a clean stop waits for the server to confirm the lines in flight. Unconfirmed lines stay
 * queued and are sent again by the next start (or the worker taking the unit over), which on a server
 * without history doubles them; a PONG took over 1.5 s (the old wait) under a loaded machine.
 * A healthy server answers in milliseconds: the wait is this long only when the server is stuck.
 */
export const STOP_DRAIN_MS = 5_000;

/**
 * Chat lines on their way to IRC. Each channel has a durable queue (lines survive a restart of
 * groupwire); one pump sends from them in turn while the link is up and the channel joined, paced by
 * the token bucket, with at most `inFlight` lines per channel awaiting confirmation. A line leaves its
 * queue only once the server confirmed it (DeliveryTracker); after a reconnect whatever was not
 * confirmed is sent again, in order, except what the channel's history (when the server replays one
 * on join) shows it took already. A line the server keeps refusing is dropped after `maxAttempts`,
 * with an error in the log.
 */

export class Outbound {
  private readonly outboxes: OutboxRing;
  private readonly tracker: DeliveryTracker;
  private readonly history: HistoryReplay;
  private readonly wakeup = new Wakeup();
  private readonly stopper = new AbortController();
  private running: Promise<void> | undefined;
  private stopping = false;
  readonly counters = { delivered_lines: 0, resent_lines: 0, taken_before_lines: 0, refused_lines: 0, dropped_refused: 0, high_water_warnings: 0, confirm_pings: 0 };

  constructor(
    private readonly settings: OutboundSettings,
    private readonly link: IrcLink,
    private readonly bucket: Pacer,
    private readonly log: Logger,
  ) {
    this.outboxes = new OutboxRing(settings.channels.map((channel) => this.openBox(channel)));
    this.tracker = new DeliveryTracker({
      delivered: (ticket, msgid) => this.confirm((entry) => entry.ticket === ticket, msgid),
      deliveredUpTo: (ticket) => this.confirm((entry) => entry.ticket <= ticket),
      refused: (where, reason) => this.refused(where, reason),
    });
    this.history = new HistoryReplay((nick) => this.isOwn(nick));
    warnAboutOrphanQueues(settings.dataDir, settings.channels, log);
  }

  /**
   * Queues lines for a channel (written to disk before it returns), and writes the first of them to
   * IRC at once when nothing stands in its way (sendNow). Throws QueueFullError when full.
   */
  enqueue(channelKey: string, lines: QueuedLine[]): void {
    if (lines.length === 0) return;
    const box = this.outboxes.get(channelKey);
    box.queue.push(...lines);
    this.sendNow(box, lines.length);
    this.wakeup.notify();
  }

  /** Whether lines of this gateway line are still waiting (a line handed on again after a crash). */
  holds(channelKey: string, key: string): boolean {
    // A look-up in the queue's key counts, not a pass over what waits (#32 part 3: this runs per line).
    return this.outboxes.get(channelKey).queue.hasKey(key);
  }

  /** Whether the channel has a queue. */
  has(channelKey: string): boolean {
    return this.outboxes.has(channelKey);
  }

  /** A queue for a channel that came up after the start (a gateway line for a channel not joined at first). */
  addChannel(channel: ChannelToJoin): void {
    if (!this.has(channel.key)) this.outboxes.add(this.openBox(channel));
  }

  get queued(): number {
    return this.outboxes.queued;
  }

  get inFlight(): number {
    return this.outboxes.inFlight;
  }

  /** Each channel's queue (lines in flight included) by its name: depth, oldest, pushed and taken, in O(1) a channel. */
  backlogs(): Record<string, QueueBacklog> {
    return Object.fromEntries(this.outboxes.boxes.map((box) => [box.channel.name, box.queue.backlog]));
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Sends nothing new, waits up to `drainMs` for lines in flight to be confirmed, then ends the pump. */
  async stop(drainMs = STOP_DRAIN_MS): Promise<void> {
    this.stopping = true;
    this.wakeup.notify();
    const deadline = Date.now() + drainMs;
    while (this.inFlight > 0 && this.link.ready && Date.now() < deadline) await this.wakeup.wait(50);
    this.stopper.abort();
    await this.running;
    // The queues' journals let their descriptors go now (a change after this opens the file again).
    for (const box of this.outboxes.boxes) box.queue.close();
  }

  onReady(mode: ConfirmMode): void {
    this.tracker.reset(mode);
    this.history.reset();
    this.forgetFlights();
  }

  onDown(): void {
    this.tracker.reset('barrier');
    this.history.reset();
    this.forgetFlights();
  }

  /**
   * We are in a channel (again): before sending there, read what its history replays, to leave out
   * lines the server took before the last connection died. Only servers that confirm lines with ids
   * (labeled echoes with msgid) can tell; the others' channels are settled at once.
   */
  onJoined(channelKey: string): void {
    const box = this.outboxes.find(channelKey);
    if (!box) return;
    box.settled = this.link.mode !== 'labeled' || box.queue.size === 0 || box.lastDelivered === undefined;
    if (!box.settled && !this.link.send(this.history.begin(channelKey))) box.settled = true;
    // A server that never answers the PING must not hold the channel's lines for ever: they go after this.
    box.settleBy = Date.now() + SETTLE_TIMEOUT_MS;
    this.wakeup.notify();
  }

  onLeft(channelKey: string): void {
    const box = this.outboxes.find(channelKey);
    if (box) box.settled = false;
    this.wakeup.notify();
  }

  onServerMessage(message: IrcMessage): void {
    this.tracker.onMessage(message);
    const replayed = this.history.onMessage(message);
    if (replayed) this.settle(replayed.channelKey, replayed.lines);
  }

  wake(): void {
    this.wakeup.notify();
  }

  private openBox(channel: ChannelToJoin): ChannelOutbox {
    return new ChannelOutbox(channel, DurableQueue.open<QueuedLine>(queueFile(this.settings.dataDir, channel.key), {
      storage: this.settings.storage,
      keyOf: (line) => line.key ?? '',
      maxItems: this.settings.maxLines,
      highWater: this.settings.warnAt,
      onHighWater: (size, max) => {
        this.counters.high_water_warnings += 1;
        this.log.warn({ channel: channel.name, queued: size, max }, `IRC queue for ${channel.name} is filling up: ${size} of ${max} lines waiting`);
      },
    }));
  }

  /** The channel's history was read: lines it shows were taken leave the queue, the rest go out. */
  private settle(channelKey: string, replay: ReplayedLine[]): void {
    const box = this.outboxes.find(channelKey);
    if (!box || box.settled) return;
    box.settled = true;
    this.wakeup.notify();
    if (box.flight.length > 0) return; // sent on this connection meanwhile: the history is older than that
    const taken = alreadyTaken(box.queue.head(replay.length).map((line) => line.text), replay, box.lastDelivered);
    if (taken.count === 0) return;
    this.settings.remember?.(box.queue.head(taken.count));
    box.delivered(taken.count, taken.last);
    this.counters.taken_before_lines += taken.count;
    this.counters.delivered_lines += taken.count;
    this.log.info({ channel: box.channel.name, lines: taken.count }, 'the channel\'s history shows lines sent before the connection died were taken; they are not sent again');
  }

  private isOwn(nick: string): boolean {
    const folded = ircLower(nick);
    const wanted = ircLower(this.settings.nick);
    return folded === ircLower(this.link.nick) || folded === wanted || /^_+$/.test(folded.slice(wanted.length)) && folded.startsWith(wanted);
  }

  /** Unconfirmed lines go out again on the next connection, in order. */
  private forgetFlights(): void {
    for (const box of this.outboxes.boxes) {
      this.counters.resent_lines += box.flight.filter((entry) => !entry.done).length;
      box.flight.length = 0;
    }
    this.wakeup.notify();
  }

  /**
   * The first of `queued` lines written now, within the call that queued them, when nothing stands in
   * its way: every line before it was sent, the channel takes lines now (sendable), the pacing has a
   * token free without waiting (`rate: off`), and the storage is files (durable once written; Redis
   * waits for its lease's proof: the pump's way). The line was queued durably before; the pump goes
   * on with what follows (the confirming PING, the next lines) as ever. A gateway's hop between
   * relays then does not wait for the rest of the event loop's turn (#32 part 1).
   */
  private sendNow(box: ChannelOutbox, queued: number): void {
    if (this.stopping || (this.settings.storage !== undefined && this.settings.storage.kind !== 'files')) return;
    if (box.unsent !== queued || !this.sendable(box) || !this.bucket.takeNow?.()) return;
    this.sendHead(box);
  }

  /** Writes the box's first line not sent yet on this connection, with its ticket. */
  private sendHead(box: ChannelOutbox): void {
    const line = box.queue.head(box.flight.length + 1)[box.flight.length]!;
    const { ticket, command } = this.tracker.line(box.channel.name, line.text, this.link.clientTags ? line.replyTo : undefined);
    if (this.link.send(command)) box.flight.push({ ticket, done: false, sentAt: Date.now() });
  }

  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    while (!signal.aborted) {
      if (!this.link.ready) {
        await this.wakeup.wait(1000, signal);
        continue;
      }
      this.checkConfirmations();
      const generation = this.link.generation;
      const box = this.stopping ? undefined : this.outboxes.next((b) => this.sendable(b));
      // In barrier mode: one PING per window of lines or when the lines stop (DeliveryTracker.barrierDue).
      const barrier = this.tracker.barrierDue(Math.min(this.settings.inFlight, BARRIER_WINDOW_MAX), !box);
      if (barrier !== 'none') {
        if (barrier === 'paced' && !(await this.bucket.take(signal))) break;
        if (this.link.generation === generation && this.link.send(this.tracker.barrier())) this.counters.confirm_pings += 1;
        continue;
      }
      if (!box) {
        await this.wakeup.wait(this.outboxes.retryWaitMs(), signal);
        continue;
      }
      if (!(await this.bucket.take(signal))) break;
      if (!(await this.durable())) break;
      // Things may have changed while waiting for the token: a reconnect, a confirmation, a kick.
      if (this.link.generation !== generation || !this.sendable(box)) continue;
      this.sendHead(box);
    }
  }

  /**
   * Every state write so far durable under the bot's unit's lease (files: at once). False once the unit
   * belongs to another worker (docs/scale-out.md): then no line leaves, the next holder sends them.
   */
  private async durable(): Promise<boolean> {
    try {
      await this.settings.storage?.durable();
      return true;
    } catch (error) {
      this.log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: sending nothing more to IRC');
      return false;
    }
  }

  /** The server answers everything in order and soon; a line left unanswered means a stuck connection. */
  private checkConfirmations(): void {
    const oldest = Math.min(...this.outboxes.boxes.flatMap((box) => box.flight.filter((entry) => !entry.done).map((entry) => entry.sentAt)));
    if (Date.now() - oldest < this.settings.confirmTimeoutMs) return;
    this.log.error({ waitedMs: Date.now() - oldest, inFlight: this.inFlight }, 'the IRC server has not confirmed lines sent to it; reconnecting to send them again');
    this.link.reconnect('no confirmation of lines sent');
  }

  private sendable(box: ChannelOutbox): boolean {
    return this.link.ready && this.link.isJoined(box.channel.key) && (box.settled || Date.now() > box.settleBy) && box.unsent > 0 &&
      box.flight.length < this.settings.inFlight && box.retryAt <= Date.now();
  }

  private confirm(matches: (entry: { ticket: number }) => boolean, msgid?: string): void {
    for (const box of this.outboxes.boxes) {
      for (const entry of box.flight) {
        if (!matches(entry)) continue;
        entry.done = true;
        entry.msgid = msgid;
      }
      let done = 0;
      while (done < box.flight.length && box.flight[done]!.done) done += 1;
      if (done === 0) continue;
      const confirmed = box.flight.splice(0, done);
      const lines = box.queue.head(done);
      this.settings.remember?.(lines);
      this.tellPosted(box, lines, confirmed);
      box.delivered(done, confirmed.at(-1)!.msgid);
      box.failures = 0;
      this.counters.delivered_lines += done;
    }
    this.wakeup.notify();
  }

  /** Each gateway line's first PRIVMSG confirmed with a msgid: the map learns its id in this channel. */
  private tellPosted(box: ChannelOutbox, lines: QueuedLine[], confirmed: Array<{ msgid?: string }>): void {
    lines.forEach((line, index) => {
      const msgid = confirmed[index]?.msgid;
      if (line.line !== undefined && msgid !== undefined) this.settings.onPosted?.(line.line, box.channel.name, msgid);
    });
  }

  private refused(where: { ticket?: number; channelKey?: string }, reason: string): void {
    const box = where.ticket !== undefined
      ? this.outboxes.boxes.find((b) => b.flight.some((entry) => entry.ticket === where.ticket))
      : this.outboxes.boxes.find((b) => b.channel.key === where.channelKey);
    // Answers about lines already given up on (after an earlier refusal or a reconnect) change nothing.
    if (!box || box.flight.length === 0) return;
    box.failures += 1;
    this.counters.refused_lines += 1;
    const head = box.queue.peek();
    if (box.failures >= this.settings.maxAttempts) {
      this.log.error({ channel: box.channel.name, reason, attempts: box.failures, text: head?.text }, 'the IRC server keeps refusing a line; it is dropped');
      if (head) this.settings.remember?.([head]);
      box.queue.shift(1);
      this.counters.dropped_refused += 1;
      box.failures = 0;
    } else {
      this.log.warn({ channel: box.channel.name, reason, attempt: box.failures }, 'the IRC server refused a line; joining again and sending it again');
    }
    this.counters.resent_lines += box.flight.length;
    box.flight.length = 0;
    box.retryAt = Date.now() + 1000 * box.failures;
    this.link.ensureJoined(box.channel.key);
    this.wakeup.notify();
  }
}
