import { closeHttp, listenHttp } from './http-listen.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { OpsConfig } from '../config/bots-config.js';
import { OpsAuth } from './ops-auth.js';
import { readiness } from './readiness.js';
import type { OpsMetrics } from './metrics.js';
import { statusPage } from './status-page.js';
import { takeSnapshot, type SnapshotSources } from './status-snapshot.js';
import { MAX_STATUS_STREAMS, STREAM_RETRY_AFTER_SECONDS, StatusStreams } from './status-streams.js';

export interface OpsServerOptions {
  config: OpsConfig;
  log: Logger;
  sources: SnapshotSources;
  metrics: OpsMetrics;
  /** POST /reload: re-reads bots.yaml and answers what changed (or why not). */
  reload?: () => Promise<unknown>;
  /** How often the status page's stream sends a snapshot (default 1 s). */
  pushEveryMs?: number;
}

/** How stale the event loop's heartbeat may be before /healthz says the process is stuck. */
const STUCK_AFTER_MS = 5_000;

/**
 * The operations endpoint of `groupwire run` (docs/operations.md): /metrics, /healthz, /readyz,
 * /status (a live page), /status.json, /status/events (server-sent events) and POST /reload. On
 * node:http, not the local service's fastify: it is a handful of read-only routes, and a bot against a
 * remote service should not load a web framework for them.
 */
export class OpsServer {
  private server: Server | undefined;
  private readonly auth: OpsAuth;
  private readonly streams = new StatusStreams();
  private heartbeat = Date.now();
  private readonly ticker: NodeJS.Timeout;
  private pusher: NodeJS.Timeout | undefined;
  private address: string | undefined;

  constructor(private readonly options: OpsServerOptions) {
    this.auth = new OpsAuth(options.config.token);
    this.ticker = setInterval(() => {
      this.heartbeat = Date.now();
    }, 1_000).unref();
  }

  /** The URL it answers on (after listen()). */
  get url(): string | undefined {
    return this.address;
  }

  /** Listens; rejects with the socket error (EADDRINUSE, EACCES) for the caller to say and retry. */
  async listen(): Promise<string> {
    const server = createServer((request, response) => void this.answer(request, response));
    server.keepAliveTimeout = 5_000;
    this.address = await listenHttp(server, this.options.config.listen);
    this.server = server;
    return this.address;
  }

  /** The open status streams and the bytes queued for them, not yet taken by the kernel or the client. */
  streamFigures(): { open: number; bufferedBytes: number } {
    return { open: this.streams.size, bufferedBytes: this.streams.bufferedBytes() };
  }

  async close(): Promise<void> {
    clearInterval(this.ticker);
    clearInterval(this.pusher);
    this.streams.endAll();
    const server = this.server;
    this.server = undefined;
    await closeHttp(server);
  }

  private async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://ops.invalid');
    response.setHeader('cache-control', 'no-store');
    response.setHeader('x-content-type-options', 'nosniff');
    const refusal = this.auth.refuse(request, url);
    if (refusal) return json(response, refusal.status, { error: refusal.why });
    const route = `${request.method} ${url.pathname}`;
    try {
      switch (route) {
        case 'GET /healthz': return this.health(response);
        case 'GET /readyz': {
          const ready = readiness(this.snapshot());
          return json(response, ready.ready ? 200 : 503, ready);
        }
        case 'GET /metrics': {
          const text = await this.options.metrics.scrape();
          response.writeHead(200, { 'content-type': this.options.metrics.registry.contentType });
          response.end(text);
          return;
        }
        case 'GET /':
        case 'GET /status':
          response.writeHead(200, {
            'content-type': 'text/html; charset=utf-8',
            // The page is self-contained: its own script and style only, no request leaves this endpoint.
            'content-security-policy': "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:",
          });
          response.end(statusPage());
          return;
        case 'GET /status.json': return json(response, 200, this.snapshot());
        case 'GET /status/events': return this.stream(response);
        case 'POST /reload':
          if (!this.options.reload) return json(response, 404, { error: 'this process does not reload bots.yaml (groupwire demo); restart it to apply changes' });
          return json(response, 200, await this.options.reload());
        default:
          return json(response, 404, { error: `no ${url.pathname} here: try /status, /metrics, /healthz, /readyz` });
      }
    } catch (error) {
      this.options.log.error({ err: error, route }, 'ops endpoint failed to answer');
      if (!response.headersSent) json(response, 500, { error: 'internal error; see the log' });
      else response.end();
    }
  }

  private snapshot() {
    return takeSnapshot(this.options.sources);
  }

  private health(response: ServerResponse): void {
    const stale = Date.now() - this.heartbeat;
    const lag = this.options.sources.eventLoopLagMs();
    const alive = stale < STUCK_AFTER_MS;
    json(response, alive ? 200 : 503, {
      alive, eventLoopLagMs: Math.round(lag * 100) / 100, heartbeatAgeMs: stale,
      uptimeSeconds: Math.round((Date.now() - this.options.sources.startedAt) / 1000),
    });
  }

  /**
   * Server-sent events: the whole snapshot (`status`) now, then every second the snapshot when it
   * changed or a `tick` with the clock and process figures (status-streams.ts); the ticks also keep
   * proxies from timing out. At most MAX_STATUS_STREAMS at once.
   */
  private stream(response: ServerResponse): void {
    if (this.streams.full) {
      response.setHeader('retry-after', String(STREAM_RETRY_AFTER_SECONDS));
      return json(response, 503, { error: `too many status streams open (${MAX_STATUS_STREAMS}); try again in ${STREAM_RETRY_AFTER_SECONDS} s` });
    }
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    response.write('retry: 2000\n\n');
    this.streams.add(response);
    this.streams.push(this.snapshot(), response);
    this.pusher ??= setInterval(() => {
      if (this.streams.size === 0) {
        clearInterval(this.pusher);
        this.pusher = undefined;
        return;
      }
      this.streams.push(this.snapshot());
    }, this.options.pushEveryMs ?? 1_000).unref();
  }
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  response.end(`${JSON.stringify(body)}\n`);
}

/**
 * The event loop's delay: how late a 500 ms timer fires, the worst of the last 5 s, in ms. (perf_hooks'
 * monitorEventLoopDelay reports the sampling interval itself in its mean, which reads as a constant lag.)
 */
export function eventLoopLag(): { read(): number; stop(): void } {
  const EVERY_MS = 500;
  const recent: number[] = [];
  let expected = performance.now() + EVERY_MS;
  const timer = setInterval(() => {
    const now = performance.now();
    recent.push(Math.max(0, now - expected));
    if (recent.length > 10) recent.shift();
    expected = now + EVERY_MS;
  }, EVERY_MS).unref();
  return {
    read: () => (recent.length === 0 ? 0 : Math.max(...recent)),
    stop: () => clearInterval(timer),
  };
}
