import type { Server as HttpsServer } from 'node:https';
import type { Logger } from 'pino';
import type { ChatHub } from './chat-hub.js';
import type { ConnectionGuard, ConnectionLimits } from './connection-limits.js';
import type { ServiceCore } from './core.js';
import type { IdStyle } from './ids.js';
import type { RateLimitConfig } from './rate-limit.js';
import type { Seed } from './seed.js';
import type { StateFile } from './state-file.js';

/** How a LocalService starts, and what its builder hands back (local-service-build.ts). */
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
  /** Timeouts and the per-address cap on open connections (connection-limits.ts); each left out keeps its default. */
  connectionLimits?: Partial<ConnectionLimits>;
  pingIntervalMs?: number;
  sessionTtlMs?: number;
  adminToken?: string;
  logger?: Logger;
}

export const DEFAULT_RATE_LIMIT: RateLimitConfig = { perSecond: 100, burst: 200 };
export const DEFAULT_UPGRADE_RATE_LIMIT: RateLimitConfig = { perSecond: 20, burst: 50 };

/** What buildLocalService() made, held by a LocalService. */
export interface ServiceParts {
  core: ServiceCore;
  hub: ChatHub;
  connections: ConnectionGuard;
  server: HttpsServer;
  state: StateFile | undefined;
  caFile: string | undefined;
  ca: string;
  adminToken: string;
  host: string;
  port: number;
  log: Logger;
  /** Closes the sockets, the server and the state file, and removes temporary keys. */
  close(): Promise<void>;
}
