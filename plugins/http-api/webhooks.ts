import { createHash, createHmac } from 'node:crypto';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { request } from 'undici';
import { appendFilePrivateSync, DurableQueue, failureFields, mkdirPrivateSync, QueueDrain, sleep, type DrainOutcome, type Storage } from '../../src/index.js';
import type { LinePayload } from './line.js';
import type { WebhookOptions } from './options.js';

/** A line waiting for one webhook. */
interface WebhookItem {
  line: LinePayload;
  /** When it was queued (ms): past `dead_letter_after` from then it is given up. */
  queued_at: number;
}

export interface WebhookCounters {
  webhook_delivered: number;
  webhook_retries: number;
  webhook_dropped: number;
  dead_lettered: number;
}

/** The longest a Retry-After is honoured (a receiver asking for more is asked again after this). */
const RETRY_AFTER_MAX_MS = 3_600_000;

/** The value of X-Groupwire-Signature (after `sha256=`): HMAC-SHA256 of `<timestamp>.<body>` with the webhook's secret. */
export function webhookSignature(secret: string, timestamp: string, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** A webhook's files are named after its URL, so reordering `webhooks:` keeps each queue with its receiver. */
export function webhookId(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 12);
}

function retryAfterMs(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  const ms = /^\d+$/.test(text.trim()) ? Number(text) * 1000 : Date.parse(text) - now;
  return Number.isFinite(ms) ? Math.min(RETRY_AFTER_MAX_MS, Math.max(0, ms)) : undefined;
}

type Outcome = { done: true } | { done: false; dead: true; reason: string; status?: number } | { done: false; dead: false; waitMs?: number; reason: string };

/**
 * Lines to one webhook: a durable queue, POSTed oldest first, one at a time (the head holds up the
 * rest, so the receiver gets them in order). A 2xx delivers; a 4xx but 408 and 429 will never be
 * taken, so the line goes to the dead-letter file at once; anything else (5xx, 408, 429, a timeout, a
 * network failure) is tried again after a pause doubling from `retry_min_ms` to `retry_max_ms`, or
 * after Retry-After when the receiver gives one. A line still not taken `dead_letter_after` after it
 * was queued goes to the dead-letter file. Every POST carries the line's id as Idempotency-Key, so a
 * receiver keeps one copy of a line sent again after a lost answer or a crash.
 */
export class WebhookDelivery {
  readonly id: string;
  private readonly queue: DurableQueue<WebhookItem>;
  private readonly deadFile: string;
  private readonly drain: QueueDrain<WebhookItem>;
  /** Why the last attempt failed, for the retry's log line. */
  private failure = '';
  /** For logs: never the URL itself (a path or query may hold a secret). */
  private readonly where: { webhook: string; host: string };

  constructor(
    private readonly webhook: WebhookOptions,
    private readonly options: {
      dataDir: string;
      storage: Storage;
      max: number;
      log: Logger;
      counters: WebhookCounters;
      retryMinMs: number;
      retryMaxMs: number;
    },
  ) {
    this.id = webhookId(webhook.url);
    this.where = { webhook: this.id, host: new URL(webhook.url).host };
    this.deadFile = join(options.dataDir, `dead-${this.id}.jsonl`);
    this.queue = DurableQueue.open<WebhookItem>(join(options.dataDir, `webhook-${this.id}.json`), {
      storage: options.storage,
      maxItems: options.max,
      onHighWater: (size, max) => options.log.warn({ ...this.where, size, max }, 'the queue to a webhook is filling up: the receiver is not taking lines'),
    });
    this.drain = new QueueDrain(this.queue, {
      send: (item, signal) => this.send(item, signal),
      onRetry: (item, waitMs) => {
        options.counters.webhook_retries += 1;
        options.log.warn({ ...this.where, line: item.line.id, reason: this.failure, retry_in_ms: waitMs }, 'a webhook did not take a line; trying again');
      },
      retryMinMs: options.retryMinMs,
      retryMaxMs: options.retryMaxMs,
      // Retry-After is a floor: the pause still grows under it.
      retryAfter: 'at-least',
    });
  }

  get size(): number {
    return this.queue.size;
  }

  wants(channel: string): boolean {
    return this.webhook.channels === undefined || this.webhook.channels.includes(channel);
  }

  /** Queues a line (written before this returns); a full queue drops it for this webhook, loudly. */
  push(line: LinePayload): void {
    try {
      this.drain.push({ line, queued_at: Date.now() });
    } catch (error) {
      this.options.counters.webhook_dropped += 1;
      this.options.log.error({ ...this.where, line: line.id, ...failureFields(error) }, 'the queue to a webhook is full: a line is dropped for it');
    }
  }

  start(): void {
    this.drain.start();
  }

  async stop(): Promise<void> {
    await this.drain.stop();
  }

  /** The head line, tried until it is delivered, dead-lettered or to be tried again later. */
  private async send(item: WebhookItem, signal: AbortSignal): Promise<DrainOutcome> {
    for (;;) {
      const outcome = await this.attempt(item, signal);
      if (outcome !== 'kept') return outcome;
      // The dead-letter file could not be written: the line stays at the head.
      await sleep(this.options.retryMaxMs, signal);
      if (signal.aborted) return 'stop';
    }
  }

  /** One attempt; 'kept' when the line was to be dead-lettered but could not be. */
  private async attempt(item: WebhookItem, signal: AbortSignal): Promise<DrainOutcome | 'kept'> {
    if (Date.now() - item.queued_at > this.webhook.dead_letter_after) {
      return this.deadLetter(item, `not delivered within ${this.webhook.dead_letter_after} ms`) ? 'done' : 'kept';
    }
    try {
      // A worker whose unit moved elsewhere sends nothing (docs/scale-out.md).
      await this.options.storage.durable();
    } catch (error) {
      this.options.log.warn({ ...this.where, ...failureFields(error) }, 'the bot\'s unit is no longer this worker\'s: posting nothing more to the webhook');
      return 'stop';
    }
    const outcome = await this.post(item.line, signal);
    if (signal.aborted) return 'stop';
    if (outcome.done) {
      this.options.counters.webhook_delivered += 1;
      return 'done';
    }
    if (outcome.dead) return this.deadLetter(item, outcome.reason, outcome.status) ? 'done' : 'kept';
    this.failure = outcome.reason;
    return outcome.waitMs ?? 'retry';
  }

  /**
   * One POST, the whole exchange (connecting, the request, the answer's headers and its body) within
   * `timeout_ms`. The timer is our own and held here until the exchange ends: a timeout signal held only
   * by `AbortSignal.any` can be garbage collected before it fires (Node 20), and the attempt then hung
   * until undici's own 300 s timeouts, holding up the whole queue (#31 item 8). undici's headers and body
   * timeouts are set to `timeout_ms` as well, a second guard on the same bound.
   */
  private async post(line: LinePayload, signal: AbortSignal): Promise<Outcome> {
    const body = JSON.stringify(line);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const timeoutMs = this.webhook.timeout_ms;
    const exchange = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      exchange.abort(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const stop = () => exchange.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    try {
      const answer = await request(this.webhook.url, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'groupwire-http-api',
          'idempotency-key': line.id,
          'x-groupwire-timestamp': timestamp,
          'x-groupwire-signature': `sha256=${webhookSignature(this.webhook.secret, timestamp, body)}`,
        },
        signal: exchange.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      // The answer's body is not needed, but must be read for the connection to be reused; an answer
      // whose body does not end within the timeout is no answer (the line is tried again, same key).
      await answer.body.dump({ limit: 128 * 1024, signal: exchange.signal }).catch(() => undefined);
      if (timedOut) return { done: false, dead: false, reason: `no answer within ${timeoutMs} ms` };
      const status = answer.statusCode;
      if (status >= 200 && status < 300) return { done: true };
      if (status >= 400 && status < 500 && status !== 408 && status !== 429) return { done: false, dead: true, reason: `refused with ${status}`, status };
      const waitMs = status === 429 || status === 503 ? retryAfterMs(answer.headers['retry-after'], Date.now()) : undefined;
      return { done: false, dead: false, reason: `answered ${status}`, ...(waitMs !== undefined ? { waitMs } : {}) };
    } catch (error) {
      const name = error instanceof Error ? error.name : '';
      const late = timedOut || name === 'HeadersTimeoutError' || name === 'BodyTimeoutError';
      return { done: false, dead: false, reason: late && !signal.aborted ? `no answer within ${timeoutMs} ms` : (error instanceof Error ? error.message : String(error)) };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
    }
  }

  /** Written to the webhook's dead-letter file (one JSON line each), then taken from the queue. */
  private deadLetter(item: WebhookItem, reason: string, status?: number): boolean {
    const record = { dead_at: new Date().toISOString(), reason, ...(status !== undefined ? { status } : {}), queued_at: new Date(item.queued_at).toISOString(), line: item.line };
    try {
      mkdirPrivateSync(dirname(this.deadFile));
      appendFilePrivateSync(this.deadFile, `${JSON.stringify(record)}\n`);
    } catch (error) {
      // Kept in the queue (and tried again) rather than lost: the disk is the operator's to fix.
      this.options.log.error({ ...this.where, file: this.deadFile, ...failureFields(error) }, 'could not write the dead-letter file; the line stays queued');
      return false;
    }
    this.queue.shift();
    this.options.counters.dead_lettered += 1;
    this.options.log.error({ ...this.where, line: item.line.id, reason, file: this.deadFile }, 'a line was given up for a webhook and written to its dead-letter file');
    return true;
  }
}
