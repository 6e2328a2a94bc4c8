import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { KeyValueStore } from '../../src/index.js';
import { classify, failureReason } from './errors.js';
import { NEW_MESSAGE_SUBTYPES } from './intake.js';
import type { Envelope } from './socket.js';
import { sleep } from './timing.js';

/** What catch-up reads of a Slack message (conversations.history / .replies). */
export interface HistoryMessage {
  type?: string;
  subtype?: string;
  ts?: string;
  thread_ts?: string;
  reply_count?: number;
  /** On a thread's parent: the ts of its newest reply. */
  latest_reply?: string;
  [field: string]: unknown;
}

export interface CatchUpSettings {
  enabled: boolean;
  after_gap_seconds: number;
  requests_per_minute: number;
  page_size: number;
}

export interface CatchUpOptions {
  web: WebClient;
  store: KeyValueStore;
  log: Logger;
  settings: CatchUpSettings;
  /** The channel ids to catch up (those known by id now). */
  channels(): string[];
  /** A message read from history, oldest first: taken through the same intake and dedupe as a live event. */
  take(channel: string, message: HistoryMessage): void;
  /** A live new message held back while its channel was read, taken now (false: it could not be queued). */
  takeHeld(envelope: Envelope): boolean;
  counters: { caught_up: number; catch_up_requests: number; rate_limited: number; failed: number };
  signal: AbortSignal;
}

const MARKS = 'catch-up-marks';
const THREADS = 'catch-up-threads';
/** Threads kept per channel whose replies are read on a catch-up (the most recently active). */
const THREADS_KEPT = 50;
/** A call that keeps failing (not a rate limit) ends this catch-up of the channel; the next one starts from the same mark. */
const TRIES = 5;

/**
 * Slack → gateways after the relay was away: Slack retries an event it could not deliver only three
 * times (at once, after a minute, after five), so what was said while the relay was stopped, or
 * disconnected for longer, is read back from the channel's history. Per channel the relay keeps the ts
 * of the newest message it took (`catch-up-marks` in its store, durable like its queues). At start, and
 * after a reconnect that followed a gap longer than `after_gap_seconds`, it reads conversations.history
 * after that ts, page by page (newest first, so every page is read before anything is handed on), and
 * conversations.replies of the threads it knows, of those the read found and of those among the page
 * before the mark answered since; then takes the messages
 * oldest first through the same intake and dedupe as live events (seen channel+ts), so one that also
 * comes as a (retried) event is taken once. Calls are paced to `requests_per_minute` and wait out a
 * 429's Retry-After. Live new messages of a channel being read are held back until it is done, so the
 * order holds. A first start reads nothing of the past: the mark starts at now.
 */
export class SlackCatchUp {
  private readonly marks: Record<string, string>;
  private readonly threads: Record<string, string[]>;
  private readonly reading = new Set<string>();
  /** Live new messages of channels being read back, by channel: taken once the read is done. */
  private readonly held = new Map<string, Envelope[]>();
  private lastCall = 0;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: CatchUpOptions) {
    this.marks = { ...(options.store.get<Record<string, string>>(MARKS) ?? {}) };
    this.threads = { ...(options.store.get<Record<string, string[]>>(THREADS) ?? {}) };
  }

  /**
   * A live new message of a channel whose history is being read is held back (and may be acknowledged:
   * were the relay to stop first, the next read finds it), so that it follows what was said before it.
   * Answers whether it was held.
   */
  hold(envelope: Envelope): boolean {
    const event = (envelope.body as { event?: { type?: string; subtype?: string; channel?: string } } | undefined)?.event;
    if (envelope.type !== 'events_api' || event?.type !== 'message' || !event.channel || !NEW_MESSAGE_SUBTYPES.has(event.subtype)) return false;
    if (!this.reading.has(event.channel)) return false;
    const held = this.held.get(event.channel) ?? [];
    held.push(envelope);
    this.held.set(event.channel, held);
    return true;
  }

  /** A new message was taken (live or read): the channel's mark moves to it; a reply's thread is remembered. */
  taken(channel: string, ts: string, threadTs?: string): void {
    if (!this.marks[channel] || compareTs(ts, this.marks[channel]!) > 0) {
      this.marks[channel] = ts;
      this.options.store.set(MARKS, this.marks);
    }
    if (threadTs) this.noteThread(channel, threadTs);
  }

  /** Reads every channel's history since its mark (after the catch-ups already running). */
  start(): Promise<void> {
    if (!this.options.settings.enabled) return Promise.resolve();
    const channels = this.options.channels();
    for (const channel of channels) this.reading.add(channel);
    // all() catches what a channel's read throws: the chain never rejects.
    this.running = this.running.then(() => this.all(channels));
    return this.running;
  }

  /** The Socket Mode link is open again after `downMs`: a catch-up when the gap was longer than Slack's retries cover. */
  reconnected(downMs: number): void {
    if (downMs >= this.options.settings.after_gap_seconds * 1000) void this.start();
  }

  private async all(channels: string[]): Promise<void> {
    for (const channel of channels) {
      try {
        if (!this.options.signal.aborted) await this.channel(channel);
      } catch (error) {
        this.options.log.warn({ channel, code: classify(error).code, reason: failureReason(error) }, 'reading a Slack channel\'s history failed; the next catch-up starts from the same message');
      } finally {
        this.reading.delete(channel);
        this.release(channel);
      }
    }
  }

  private async channel(channel: string): Promise<void> {
    const mark = this.marks[channel];
    if (mark === undefined) {
      this.taken(channel, nowTs());
      return;
    }
    const byTs = new Map<string, HistoryMessage>();
    const parents = new Set(this.threads[channel] ?? []);
    for await (const message of this.pages('conversations.history', { channel, oldest: mark })) {
      if (!message.ts) continue;
      byTs.set(message.ts, message);
      if ((message.reply_count ?? 0) > 0 || message.thread_ts === message.ts) parents.add(message.ts);
    }
    // Threads of older messages answered while away: history finds a parent by its own ts, so one from
    // before the mark whose thread the relay never saw a reply in shows only in the page before the
    // mark, with its latest_reply after it (one call: the last page_size messages before the mark).
    for (const message of await this.page('conversations.history', { channel, latest: mark, inclusive: 'true' })) {
      if (message.ts && (message.reply_count ?? 0) > 0 && typeof message.latest_reply === 'string' && compareTs(message.latest_reply, mark) > 0) parents.add(message.ts);
    }
    for (const parent of parents) {
      for await (const message of this.pages('conversations.replies', { channel, ts: parent, oldest: mark })) {
        if (message.ts && message.ts !== parent && compareTs(message.ts, mark) > 0) byTs.set(message.ts, message);
      }
    }
    const read = [...byTs.values()].sort((a, b) => compareTs(a.ts!, b.ts!));
    for (const message of read) {
      if (this.options.signal.aborted) return;
      this.options.take(channel, message);
      this.options.counters.caught_up += 1;
    }
    // The bot's own posts and others' not relayed move the mark too: they need not be read again.
    const newest = read.at(-1)?.ts;
    if (newest) this.taken(channel, newest);
    if (read.length > 0) this.options.log.info({ channel, read: read.length, since: mark }, 'read what the Slack channel said while the relay was away');
  }

  /** The channel was read back: what came live meanwhile is taken now, oldest first (what the read took is seen already). */
  private release(channel: string): void {
    const held = this.held.get(channel) ?? [];
    this.held.delete(channel);
    const tsOf = (envelope: Envelope) => String((envelope.body as { event?: { ts?: string } }).event?.ts ?? '');
    for (const envelope of held.sort((a, b) => compareTs(tsOf(a), tsOf(b)))) {
      let taken = false;
      try {
        taken = this.options.takeHeld(envelope);
      } catch (error) {
        this.options.log.debug({ err: error, channel }, 'a held Slack message failed');
      }
      if (!taken) {
        this.options.counters.failed += 1;
        this.options.log.error({ channel }, 'a Slack message held during a catch-up could not be queued; the next catch-up reads it again');
      }
    }
  }

  /** The first page of a method's answer only (paced, a 429 waited out). */
  private async page(method: 'conversations.history', args: Record<string, string>): Promise<HistoryMessage[]> {
    const answer = await this.call(method, { ...args, limit: String(this.options.settings.page_size) });
    return (answer?.messages ?? []) as HistoryMessage[];
  }

  /** Every message of a paged method, page by page, each call paced and a 429 waited out. */
  private async *pages(method: 'conversations.history' | 'conversations.replies', args: Record<string, string>): AsyncGenerator<HistoryMessage> {
    let cursor: string | undefined;
    do {
      const answer = await this.call(method, { ...args, limit: String(this.options.settings.page_size), ...(cursor ? { cursor } : {}) });
      if (!answer) return;
      yield* (answer.messages ?? []) as HistoryMessage[];
      cursor = answer.has_more ? (answer.response_metadata as { next_cursor?: string } | undefined)?.next_cursor || undefined : undefined;
    } while (cursor);
  }

  private async call(method: string, args: Record<string, string>): Promise<Record<string, unknown> | undefined> {
    const { signal, counters, settings } = this.options;
    for (let tries = 0; !signal.aborted;) {
      // At most requests_per_minute calls: Slack counts per method, the relay counts both together.
      const gapMs = 60_000 / settings.requests_per_minute;
      await sleep(Math.max(0, this.lastCall + gapMs - Date.now()), signal);
      if (signal.aborted) return undefined;
      this.lastCall = Date.now();
      counters.catch_up_requests += 1;
      try {
        return (await this.options.web.apiCall(method, args)) as unknown as Record<string, unknown>;
      } catch (error) {
        const failure = classify(error);
        if (failure.kind === 'rate_limited') {
          counters.rate_limited += 1;
          this.options.log.warn({ method, retryAfterMs: failure.retryAfterMs }, 'Slack rate limit while reading history: waiting');
          await sleep(failure.retryAfterMs, signal);
          continue;
        }
        tries += 1;
        if (failure.kind === 'fatal' || failure.kind === 'permanent' || tries >= TRIES) throw error;
        await sleep(1_000 * 2 ** tries, signal);
      }
    }
    return undefined;
  }

  private noteThread(channel: string, threadTs: string): void {
    const list = (this.threads[channel] ?? []).filter((ts) => ts !== threadTs);
    list.push(threadTs);
    this.threads[channel] = list.slice(-THREADS_KEPT);
    this.options.store.set(THREADS, this.threads);
  }
}

/** Now as a Slack ts. */
function nowTs(): string {
  const micros = Date.now() * 1000;
  return `${Math.floor(micros / 1e6)}.${String(micros % 1e6).padStart(6, '0')}`;
}

/** Orders two Slack ts exactly (as numbers they would lose the last microseconds). */
export function compareTs(a: string, b: string): number {
  const [aSeconds = '0', aMicros = ''] = a.split('.');
  const [bSeconds = '0', bMicros = ''] = b.split('.');
  if (aSeconds.length !== bSeconds.length) return aSeconds.length < bSeconds.length ? -1 : 1;
  if (aSeconds !== bSeconds) return aSeconds < bSeconds ? -1 : 1;
  const am = aMicros.padEnd(6, '0');
  const bm = bMicros.padEnd(6, '0');
  return am === bm ? 0 : am < bm ? -1 : 1;
}
