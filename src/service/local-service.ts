import type { ChatHub } from './chat-hub.js';
import type { ConnectionGuard } from './connection-limits.js';
import type { ServiceCore } from './core.js';
import type { IdStyle } from './ids.js';
import type { LocalServiceOptions, ServiceParts } from './local-service-options.js';

export { DEFAULT_RATE_LIMIT, DEFAULT_UPGRADE_RATE_LIMIT, type LocalServiceOptions } from './local-service-options.js';
export type { ConnectionLimits } from './connection-limits.js';

/**
 * `groupwire serve`: the whole described interface over HTTPS and WSS, in this process. This module
 * loads nothing heavy: start() imports the builder (fastify, TLS, routes) when a service starts.
 */
export class LocalService {
  /** The service's data and rules, for tests and fault injection: not a promise to users. @internal */
  readonly core: ServiceCore;
  /** The chat sockets, for tests and fault injection: not a promise to users. @internal */
  readonly hub: ChatHub;
  /** The per-address count of open connections and its refusals (connection-limits.ts), for tests. @internal */
  readonly connections: ConnectionGuard;
  readonly caFile: string | undefined;
  /** PEM of the CA clients should trust. */
  readonly ca: string;
  readonly adminToken: string;
  readonly port: number;

  private constructor(private readonly parts: ServiceParts) {
    this.core = parts.core;
    this.hub = parts.hub;
    this.connections = parts.connections;
    this.caFile = parts.caFile;
    this.ca = parts.ca;
    this.adminToken = parts.adminToken;
    this.port = parts.port;
  }

  /** Where clients reach it: `https://host:port` (the port the listener got when 0 was asked). */
  get baseUrl(): string {
    const host = this.parts.host.includes(':') ? `[${this.parts.host}]` : this.parts.host;
    return `https://${host}:${this.port}`;
  }

  /** How it writes ids (numeric, big or opaque): the style clients must cope with. */
  get idStyle(): IdStyle {
    return this.core.store.idStyle;
  }

  /** Starts a service over HTTPS and WSS (with a local CA and certificate unless `tls` gives one); resolves once it listens. */
  static async start(options: LocalServiceOptions = {}): Promise<LocalService> {
    const { buildLocalService } = await import('./local-service-build.js');
    let service: LocalService | undefined;
    const parts = await buildLocalService(options, () => service!.restart());
    service = new LocalService(parts);
    parts.core.baseUrl = service.baseUrl;
    parts.log.info({ baseUrl: service.baseUrl, idStyle: parts.core.store.idStyle }, 'local service ready');
    return service;
  }

  /**
   * Fault injection: every connection is dropped and the listener opened again on the same port; the
   * data stays.
   */
  async restart(): Promise<void> {
    const { server, host, log } = this.parts;
    // Answer the admin call first, then drop everything (that call's connection included).
    setImmediate(() => {
      this.hub.dropSockets();
      server.close();
      server.closeAllConnections();
      server.listen(this.port, host);
      log.info('listeners restarted (injected fault)');
    });
  }

  /** Closes every chat socket (1001, going away), stops listening and saves the state file when there is one. */
  async close(): Promise<void> {
    await this.parts.close();
  }

  /**
   * Writes the state file now, synchronously: for a process that must exit at once (a second
   * Ctrl-C), so the saved data is never older than what the bots of the process already handled.
   */
  saveStateNow(): void {
    this.parts.state?.saveNow();
  }
}
