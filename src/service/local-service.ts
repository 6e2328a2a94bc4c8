import { randomBytes } from 'node:crypto';
import type { Server as HttpsServer } from 'node:https';
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { pino, type Logger } from 'pino';
import { mountAdmin } from './admin.js';
import { ChatHub, CLOSE_CODES, refuseUpgrade } from './chat-hub.js';
import { ServiceCore } from './core.js';
import { DEMO_SEED } from './demo-seed.js';
import { answerOnlyWhenSaved } from './durable-answers.js';
import { ApiError } from './errors.js';
import { mountApi, MAX_ATTACHMENT_BYTES, sendError } from './http-api.js';
import type { IdStyle } from './ids.js';
import { ALL_OPERATIONS } from './operations.js';
import type { RateLimitConfig } from './rate-limit.js';
import { mountFiles } from './routes/files.js';
import { applySeed, type Seed } from './seed.js';
import { StateFile } from './state-file.js';
import { Store } from './store.js';
import { localTls, removeTlsDir, temporaryLocalTls } from './tls.js';

export interface LocalServiceOptions {
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  idStyle?: IdStyle;
  /** The data to start with when there is no state file; the demo seed by default. */
  seed?: Seed | 'demo' | 'empty';
  /** Keep the data in this file across restarts of the process. */
  statePath?: string;
  /**
   * A certificate of your own; without one a local CA and certificate are made in `tlsDir` (kept and
   * reused), else beside `statePath` (`<statePath>.tls/`, kept and reused), else for this process only:
   * the key stays in memory and the CA file goes to a temporary directory that close() removes.
   */
  tls?: { cert: string; key: string; caFile?: string };
  tlsDir?: string;
  /** Per-caller request rate; null turns it off. */
  rateLimit?: RateLimitConfig | null;
  upgradeRateLimit?: RateLimitConfig | null;
  pingIntervalMs?: number;
  sessionTtlMs?: number;
  adminToken?: string;
  logger?: Logger;
}

export const DEFAULT_RATE_LIMIT: RateLimitConfig = { perSecond: 100, burst: 200 };
export const DEFAULT_UPGRADE_RATE_LIMIT: RateLimitConfig = { perSecond: 20, burst: 50 };

/** `groupwire serve`: the whole described interface over HTTPS and WSS, in this process. */
export class LocalService {
  private constructor(
    readonly core: ServiceCore,
    readonly hub: ChatHub,
    private readonly app: { server: HttpsServer; close(): Promise<unknown> },
    private readonly state: StateFile | undefined,
    readonly caFile: string | undefined,
    /** PEM of the CA clients should trust. */
    readonly ca: string,
    readonly adminToken: string,
    private readonly host: string,
    readonly port: number,
    private readonly log: Logger,
    /** The temporary directory of the generated CA and key, removed on close. */
    private readonly temporaryTlsDir: string | undefined,
  ) {}

  get baseUrl(): string {
    const host = this.host.includes(':') ? `[${this.host}]` : this.host;
    return `https://${host}:${this.port}`;
  }

  get idStyle(): IdStyle {
    return this.core.store.idStyle;
  }

  static async start(options: LocalServiceOptions = {}): Promise<LocalService> {
    const log = options.logger ?? pino({ level: 'info' }, pino.destination(2));
    const host = options.host ?? '127.0.0.1';
    const saved = options.statePath ? await StateFile.load(options.statePath) : undefined;
    const store = saved ? Store.restore(saved) : new Store(options.idStyle ?? 'numeric');
    if (saved && options.idStyle && saved.idStyle !== options.idStyle) {
      log.warn({ stateIdStyle: saved.idStyle }, 'the state file keeps its own id style; --ids ignored');
    }
    const core = new ServiceCore(store, {
      rateLimit: options.rateLimit === undefined ? DEFAULT_RATE_LIMIT : options.rateLimit,
      upgradeRateLimit: options.upgradeRateLimit === undefined ? DEFAULT_UPGRADE_RATE_LIMIT : options.upgradeRateLimit,
      sessionTtlMs: options.sessionTtlMs,
    });
    if (saved) core.clock.offset = saved.clockOffset;
    else if (options.seed !== 'empty') applySeed(store, core.clock, options.seed === undefined || options.seed === 'demo' ? DEMO_SEED : options.seed);

    const keptTlsDir = options.tlsDir ?? (options.statePath ? `${options.statePath}.tls` : undefined);
    const temporary = options.tls || keptTlsDir ? undefined : await temporaryLocalTls();
    const temporaryDir = temporary?.dir;
    const tls = options.tls ? { ...options.tls, ca: options.tls.cert, caFile: options.tls.caFile } : (temporary ?? await localTls(keptTlsDir!));

    const app = Fastify({
      https: { key: tls.key, cert: tls.cert },
      // Requests are not logged one by one; operations log their own failures.
      logger: false,
      bodyLimit: MAX_ATTACHMENT_BYTES * 2,
      forceCloseConnections: true,
      // A URL fastify cannot even route (bad percent-encoding) still gets the error object.
      frameworkErrors: (error, _request, reply) => {
        void sendError(core, reply as unknown as FastifyReply, new ApiError('bad_request', error.message), log, 'http');
      },
    });
    await app.register(formbody);
    await app.register(multipart, { limits: { fileSize: MAX_ATTACHMENT_BYTES } });
    const hub = new ChatHub(core, log.child({ component: 'chat-hub' }), options.pingIntervalMs ?? 30_000);
    const adminToken = options.adminToken ?? randomBytes(24).toString('base64url');
    let service: LocalService | undefined;
    // The route modules do not care that the server underneath is HTTPS.
    const routes = app as unknown as FastifyInstance;
    // Made before the routes so its hook covers every one of them.
    const state = options.statePath
      ? new StateFile(options.statePath, {
        key: () => `${store.version} ${core.clock.offset}`,
        data: () => store.snapshot(core.clock.offset),
      }, log)
      : undefined;
    if (state) answerOnlyWhenSaved(routes, state, log.child({ component: 'state' }));
    mountApi(routes, core, ALL_OPERATIONS, log.child({ component: 'api' }));
    mountFiles(routes, core, log.child({ component: 'files' }));
    mountAdmin(routes, core, hub, adminToken, { restart: () => service!.restart() });
    // Malformed bodies and the like fail before any route runs: they still get the error object.
    app.setErrorHandler((error, _request, reply) => sendError(core, reply, error, log, 'http'));
    // Every failure is HTTP 400 with the error object (spec 4.1), an unknown path too.
    app.setNotFoundHandler((request, reply) => {
      reply.code(400).header('content-type', 'application/json; charset=utf-8');
      return reply.send({ object: 'error', type: 'bad_request', extra: `no such path ${request.url.split('?')[0]}` });
    });
    app.server.on('upgrade', (request, socket, head) => {
      const url = new URL(request.url ?? '/', 'https://localhost');
      if (url.pathname !== '/api/v1/chatdata') {
        refuseUpgrade(socket, new ApiError('bad_request', `no websocket at ${url.pathname}`));
        return;
      }
      void hub.handleUpgrade(request, socket, head, url);
    });

    try {
      await app.listen({ host, port: options.port ?? 0 });
    } catch (error) {
      // A port that is taken: the caller may try another, and this start's keys must not stay behind.
      if (temporaryDir) await removeTlsDir(temporaryDir);
      throw error;
    }
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : (options.port ?? 0);
    state?.start();
    service = new LocalService(core, hub, app, state, tls.caFile, tls.ca, adminToken, host, port, log, temporaryDir);
    core.baseUrl = service.baseUrl;
    log.info({ baseUrl: service.baseUrl, idStyle: store.idStyle }, 'local service ready');
    return service;
  }

  /**
   * Fault injection: every connection is dropped and the listener opened again on the same port; the
   * data stays.
   */
  async restart(): Promise<void> {
    const server = this.app.server;
    // Answer the admin call first, then drop everything (that call's connection included).
    setImmediate(() => {
      this.hub.dropSockets();
      server.close();
      server.closeAllConnections();
      server.listen(this.port, this.host);
      this.log.info('listeners restarted (injected fault)');
    });
  }

  async close(): Promise<void> {
    this.hub.closeAll(CLOSE_CODES.goingAway, 'service shutting down');
    this.hub.stop();
    await this.app.close();
    await this.state?.stop();
    if (this.temporaryTlsDir) await removeTlsDir(this.temporaryTlsDir);
  }

  /**
   * Writes the state file now, synchronously: for a process that must exit at once (a second
   * Ctrl-C), so the saved data is never older than what the bots of the process already handled.
   */
  saveStateNow(): void {
    this.state?.saveNow();
  }
}
