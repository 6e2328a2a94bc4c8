import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { pino } from 'pino';
import { acceptMultipart } from '../media/multipart-parts.js';
import { mountAdmin } from './admin.js';
import { ChatHub, CLOSE_CODES, refuseUpgrade } from './chat-hub.js';
import { ConnectionGuard, DEFAULT_CONNECTION_LIMITS, serverTimeoutOptions } from './connection-limits.js';
import { ServiceCore } from './core.js';
import { DEMO_SEED } from './demo-seed.js';
import { answerOnlyWhenSaved } from './durable-answers.js';
import { ApiError } from './errors.js';
import { mountApi, MAX_ATTACHMENT_BYTES, sendError } from './http-api.js';
import { DEFAULT_RATE_LIMIT, DEFAULT_UPGRADE_RATE_LIMIT, type LocalServiceOptions, type ServiceParts } from './local-service-options.js';
import { ALL_OPERATIONS } from './operations.js';
import { mountFiles } from './routes/files.js';
import { applySeed } from './seed.js';
import { StateFile } from './state-file.js';
import { Store } from './store.js';
import { localTls, removeTlsDir, temporaryLocalTls } from './tls.js';

/**
 * Everything LocalService.start() builds: the store, the HTTPS server with every route, the chat hub,
 * the state file and the keys. A module of its own, imported only when a service starts, so that the
 * public entry point (which exports LocalService) loads none of fastify, the TLS tooling or the routes
 * in a bot that talks to a remote service (#20).
 */
export async function buildLocalService(options: LocalServiceOptions, restart: () => Promise<void>): Promise<ServiceParts> {
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

  const connectionLimits = { ...DEFAULT_CONNECTION_LIMITS, ...options.connectionLimits };
  const app = Fastify({
    https: { key: tls.key, cert: tls.cert, ...serverTimeoutOptions(connectionLimits) },
    // Requests are not logged one by one; operations log their own failures.
    logger: false,
    bodyLimit: MAX_ATTACHMENT_BYTES * 2,
    forceCloseConnections: true,
    // A URL fastify cannot even route (bad percent-encoding) still gets the error object.
    frameworkErrors: (error, _request, reply) => {
      void sendError(core, reply as unknown as FastifyReply, new ApiError('bad_request', error.message), log, 'http');
    },
  });
  const connections = new ConnectionGuard(connectionLimits, log.child({ component: 'connections' }));
  connections.attach(app.server);
  const hub = new ChatHub(core, log.child({ component: 'chat-hub' }), options.pingIntervalMs ?? 30_000);
  const adminToken = options.adminToken ?? randomBytes(24).toString('base64url');
  // The route modules do not care that the server underneath is HTTPS.
  const routes = app as unknown as FastifyInstance;
  // addattachments reads its multipart body itself, part by part (multipart-upload.ts).
  acceptMultipart(routes);
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
  mountAdmin(routes, core, hub, adminToken, { restart });
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
    // A chat socket the hub takes leaves the per-address count: its own caps are per user.
    void hub.handleUpgrade(request, socket, head, url).then((granted) => {
      if (granted) connections.exempt(request.socket);
    });
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
  return {
    core, hub, connections, server: app.server, state, caFile: tls.caFile, ca: tls.ca, adminToken, host, port, log,
    async close() {
      hub.closeAll(CLOSE_CODES.goingAway, 'service shutting down');
      hub.stop();
      await app.close();
      await state?.stop();
      if (temporaryDir) await removeTlsDir(temporaryDir);
    },
  };
}
