import { SocketModeClient } from '@slack/socket-mode';
import type { Logger } from 'pino';
import { classify, type SlackFailure } from './errors.js';
import { slackLogger } from './slack-logger.js';
import { backoff, sleep, within } from './timing.js';

/** One Socket Mode envelope as the SDK hands it on (its `slack_event`). */
export interface Envelope {
  envelope_id?: string;
  type: string;
  body?: unknown;
  retry_num?: number;
  retry_reason?: string;
  ack(response?: Record<string, unknown>): Promise<void>;
}

export interface SocketOptions {
  appToken: string;
  apiUrl: string;
  timeoutMs: number;
  log: Logger;
  onEnvelope(envelope: Envelope): void;
  /** The app token is refused: the link stops for good. */
  onFatal(failure: SlackFailure): void;
  /** Every connection after the first, with how long the relay was without one (ms). */
  onReconnect(downMs: number): void;
  /** apps.connections.open was rate limited. */
  onRateLimited(): void;
}

export type SocketState = 'idle' | 'connecting' | 'open' | 'waiting' | 'stopped' | 'failed';

/** A connection that lasted this long resets the backoff. */
const STABLE_MS = 10_000;

/**
 * The Socket Mode connection, on @slack/socket-mode's SocketModeClient with its own reconnecting off.
 * The SDK's (v2) reconnect waits clientPingTimeout × failures, and when apps.connections.open is
 * refused during a reconnect (a revoked app token) its promise is left unhandled: an unhandled
 * rejection, which ends the whole process under Node's default. So here one loop connects
 * (apps.connections.open, then the socket until `hello`), waits for the connection to end (a
 * `disconnect` envelope — refresh_requested, warning, too_many_websockets, link_disabled — which the
 * SDK answers by closing, or a dropped socket, or missed pongs), and connects again: at once the first
 * time, then with backoff (reset by a connection that lasted). A refused app token stops the loop
 * (onFatal); anything else (rate limits included: Retry-After is at least the backoff) is retried.
 */
export class SocketModeLink {
  state: SocketState = 'idle';
  private readonly client: SocketModeClient;
  private readonly stopper = new AbortController();
  private running: Promise<void> | undefined;
  private closed: (() => void) | undefined;
  private disconnected = false;
  private connections = 0;

  constructor(private readonly options: SocketOptions) {
    this.client = new SocketModeClient({
      appToken: options.appToken,
      autoReconnectEnabled: false,
      logger: slackLogger(options.log),
      clientOptions: {
        slackApiUrl: options.apiUrl,
        retryConfig: { retries: 0 },
        rejectRateLimitedCalls: true,
        timeout: options.timeoutMs,
      },
    });
    this.client.on('slack_event', (envelope: Envelope) => options.onEnvelope(envelope));
    this.client.on('disconnected', () => {
      this.disconnected = true;
      this.closed?.();
    });
  }

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    this.closed?.();
    await this.disconnect();
    await this.running;
    // A connection that was being made when the stop came is closed too.
    await this.disconnect();
    if (this.state !== 'failed') this.state = 'stopped';
  }

  private async run(): Promise<void> {
    const { log } = this.options;
    const signal = this.stopper.signal;
    let attempt = 0;
    /** When the last open connection ended (the gap a reconnect closes starts there). */
    let endedAt = Date.now();
    while (!signal.aborted) {
      let retryAfterMs = 0;
      this.state = 'connecting';
      this.disconnected = false;
      try {
        await this.connect();
        if (signal.aborted) break;
        this.connections += 1;
        if (this.connections > 1) this.options.onReconnect(Date.now() - endedAt);
        this.state = 'open';
        log.info({ connections: this.connections }, 'Socket Mode connected');
        const openedAt = Date.now();
        await this.untilDisconnected();
        endedAt = Date.now();
        if (Date.now() - openedAt >= STABLE_MS) attempt = 0;
        if (signal.aborted) break;
        log.info('Socket Mode connection ended; connecting again');
      } catch (error) {
        if (signal.aborted) break;
        const failure = classify(error);
        if (failure.kind === 'fatal') {
          this.state = 'failed';
          await this.disconnect();
          this.options.onFatal(failure);
          return;
        }
        log.warn({ code: failure.code, err: error instanceof Error ? error.message : String(error) }, 'Socket Mode connection failed; trying again');
        attempt = Math.max(attempt, 1);
        if (failure.kind === 'rate_limited') {
          retryAfterMs = failure.retryAfterMs;
          this.options.onRateLimited();
        }
      }
      this.state = 'waiting';
      const delay = attempt === 0 ? Math.random() * 250 : backoff(attempt, 500, 30_000);
      await sleep(Math.max(delay, retryAfterMs), signal);
      attempt += 1;
    }
  }

  /** apps.connections.open and the socket, until `hello` (bounded: a socket that never says hello is dropped). */
  private async connect(): Promise<void> {
    const started = this.client.start().then(() => true);
    started.catch(() => undefined);
    let hello: boolean | undefined;
    try {
      hello = await within(started, this.options.timeoutMs);
    } catch (error) {
      await this.disconnect();
      throw error ?? new Error('Socket Mode closed before hello');
    }
    if (!hello) {
      await this.disconnect();
      throw new Error('no hello from Socket Mode in time');
    }
  }

  private untilDisconnected(): Promise<void> {
    if (this.disconnected || this.stopper.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      this.closed = () => {
        this.closed = undefined;
        resolve();
      };
    });
  }

  /** Closes the current socket, if any (bounded: a peer that never answers the close is cut off). */
  private async disconnect(): Promise<void> {
    await within(this.client.disconnect().catch(() => undefined), 3_000);
  }
}
