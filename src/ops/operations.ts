import { readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { OpsConfig } from '../config/bots-config.js';
import { packageRoot } from '../config/package-root.js';
import type { UpgradeGate } from '../chat/upgrade-gate.js';
import type { CoordinationStatus } from '../coordination/coordination-status.js';
import type { Bot } from '../supervisor/bot.js';
import type { PlannedGateway } from '../gateway/gateway-plan.js';
import type { FileCounts } from '../gateway/file-intake.js';
import { BacklogWatch, backlogSides } from './backlog-watch.js';
import { GatewayWatch } from './gateway-watch.js';
import { LagProbe } from './lag-probe.js';
import { mkdirPrivateSync, writeFilePrivateSync } from '../store/private-files.js';
import { createMetrics } from './metrics.js';
import { eventLoopLag, OpsServer, type OpsServerOptions } from './ops-server.js';
import { splitListen } from './http-listen.js';
import { describePortHolder } from './port-holder.js';
import type { RecentErrors } from './recent-errors.js';
import type { MediaStatus, SnapshotSources, StatusSnapshot } from './status-snapshot.js';

/** `<state_dir>/ops.json`: where a running `groupwire run` answers (`groupwire status` and `reload` read it). */
export const OPS_FILE = 'ops.json';

/** In ops.json while the endpoint cannot listen: `groupwire status` says it instead of an address. */
export interface OpsListenError {
  listen: string;
  code: string;
  /** Who holds the port (EADDRINUSE): another groupwire run by its pid, else the address. */
  holder?: string;
  retry_seconds: number;
}

/** What the endpoint reads: a Supervisor (one process runs every bot) or a Worker (docs/scale-out.md). */
export interface OpsHost {
  readonly bots: readonly Bot[];
  readonly upgradeGate: UpgradeGate;
  /** A worker's placement (which worker holds which unit). */
  status?(): CoordinationStatus;
  /** The gateways as planned now (the status page shows each with its sides). */
  gatewayPlan?(): readonly PlannedGateway[];
  /** What the gateways' file intake counted (/metrics). */
  readonly fileCounts?: FileCounts;
  /** The media listener's address (ops.json's `media_url`), while it listens. */
  readonly mediaUrl?: string;
}

export interface OperationsOptions {
  supervisor: OpsHost;
  /** `false`: no endpoint (ops.json still names the pid, for `groupwire reload`). */
  config: OpsConfig | false;
  log: Logger;
  errors: RecentErrors;
  stateDir: string;
  reload?: () => Promise<unknown>;
  /** Reload counts and the last outcome, as the supervisor keeps them. */
  lastReload?: () => StatusSnapshot['lastReload'] | undefined;
  reloads?: () => { applied: number; refused: number };
  /** A port in use: listen on a free one instead of waiting for it (the demo; ops.json and the log say which). */
  freePortIfTaken?: boolean;
  /** How often /status/events pushes (default 1 s; tests go faster). */
  pushEveryMs?: number;
  /** How often the gateways' sides are sampled for their history (default 5 s; tests go faster). */
  gatewaySampleEveryMs?: number;
}

/** How long to wait before trying a port that was in use again (an old process may still be stopping). */
const RETRY_LISTEN_MS = 10_000;

/**
 * The operations side of `groupwire run`: the endpoint (metrics, health, status page, reload), the lag
 * probe, and ops.json. A port in use is a warning and is tried again: the bots never wait for it.
 */
export class Operations {
  private server: OpsServer | undefined;
  private probe: LagProbe | undefined;
  private retry: NodeJS.Timeout | undefined;
  private serverOptions: OpsServerOptions | undefined;
  private readonly lag = eventLoopLag();
  private readonly startedAt = Date.now();
  private closed = false;
  /** Sides falling behind are said in the log whether or not the endpoint runs. */
  private readonly backlogs: BacklogWatch;
  /** The last listen that failed, while the endpoint waits to try again (ops.json carries it). */
  private listenError: OpsListenError | undefined;
  /** Each gateway's sides and their last 15 minutes, sampled whether or not the endpoint runs (a page opened later draws them). */
  private readonly gatewaySides: GatewayWatch;

  constructor(private readonly options: OperationsOptions) {
    this.backlogs = new BacklogWatch(() => backlogSides(options.supervisor.bots), options.log.child({ component: 'backlog' }));
    const { supervisor } = options;
    this.gatewaySides = new GatewayWatch({ bots: () => supervisor.bots, gateways: () => supervisor.gatewayPlan?.() ?? [] }, options.gatewaySampleEveryMs);
  }

  get url(): string | undefined {
    return this.server?.url;
  }

  /** The open /status/events streams and the bytes waiting in their buffers (none without an endpoint). */
  statusStreams(): { open: number; bufferedBytes: number } {
    return this.server?.streamFigures() ?? { open: 0, bufferedBytes: 0 };
  }

  /** Starts (or, after a reload changed `ops:`, starts again with) the endpoint. */
  async start(config: OpsConfig | false = this.options.config): Promise<void> {
    await this.stopEndpoint();
    this.options.config = config;
    this.writeOpsFile();
    if (!this.closed) {
      this.backlogs.start();
      this.gatewaySides.start();
    }
    if (!config) return;
    const { supervisor, log } = this.options;
    const sources: SnapshotSources = {
      bots: () => supervisor.bots,
      version: version(),
      startedAt: this.startedAt,
      errors: this.options.errors,
      eventLoopLagMs: () => this.lag.read(),
      lastReload: () => this.options.lastReload?.(),
      backlogs: () => this.backlogs.status(),
      gateways: () => this.gatewaySides.status(),
      ...(supervisor.status ? { coordination: () => supervisor.status!() } : {}),
      media: () => mediaStatus(supervisor),
    };
    const metrics = createMetrics({
      ...sources, gate: supervisor.upgradeGate, files: () => supervisor.fileCounts, reloads: () => this.options.reloads?.() ?? { applied: 0, refused: 0 },
    });
    this.probe = new LagProbe(() => supervisor.bots, log.child({ component: 'lag-probe' }), config.lag_probe_seconds * 1000);
    this.serverOptions = { config, log: log.child({ component: 'ops' }), sources, metrics, reload: this.options.reload,
      ...(this.options.pushEveryMs ? { pushEveryMs: this.options.pushEveryMs } : {}) };
    this.server = new OpsServer(this.serverOptions);
    await this.listen(config);
  }

  private async listen(config: OpsConfig): Promise<void> {
    const server = this.server;
    if (!server || this.closed) return;
    try {
      const url = await server.listen();
      this.listenError = undefined;
      this.options.log.info({ url: `${url}/status`, metrics: `${url}/metrics` }, 'operations endpoint listening');
      this.writeOpsFile();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE' && this.options.freePortIfTaken && !config.listen.endsWith(':0')) {
        const free = { ...config, listen: `${config.listen.slice(0, config.listen.lastIndexOf(':'))}:0` };
        this.server = new OpsServer({ ...this.serverOptions!, config: free });
        return this.listen(free);
      }
      // Who holds the port, said in the log and in ops.json, so that `groupwire status` says it too.
      const { host, port } = splitListen(config.listen);
      const holder = code === 'EADDRINUSE' ? await describePortHolder(host, port, config.token) : undefined;
      if (this.closed || this.server !== server) return;
      this.listenError = { listen: config.listen, code: code ?? String(error), ...(holder ? { holder } : {}), retry_seconds: RETRY_LISTEN_MS / 1000 };
      this.writeOpsFile();
      this.options.log.warn({ listen: config.listen, code, holder, retryInSeconds: RETRY_LISTEN_MS / 1000 },
        code === 'EADDRINUSE' ? `the operations endpoint's port ${config.listen} is taken by ${holder}; the bots go on, trying the port again`
          : 'the operations endpoint could not listen; the bots go on, trying again');
      this.retry = setTimeout(() => void this.listen(config), RETRY_LISTEN_MS).unref();
    }
  }

  private async stopEndpoint(): Promise<void> {
    clearTimeout(this.retry);
    this.listenError = undefined;
    this.probe?.stop();
    await this.server?.close();
    this.server = undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.backlogs.stop();
    this.gatewaySides.stop();
    await this.stopEndpoint();
    this.lag.stop();
    rmSync(join(this.options.stateDir, OPS_FILE), { force: true });
  }

  private writeOpsFile(): void {
    const url = this.server?.url;
    // Why there is no url yet: the port is taken (and by what), or another listen error.
    const listenError = url || !this.options.config ? undefined : this.listenError;
    try {
      // Written whole and renamed: a `groupwire status` reading it meanwhile never sees half a file.
      mkdirPrivateSync(this.options.stateDir);
      const path = join(this.options.stateDir, OPS_FILE);
      const mediaUrl = this.options.supervisor.mediaUrl;
      writeFilePrivateSync(`${path}.${process.pid}.tmp`, `${JSON.stringify({ pid: process.pid, ...(url ? { url } : {}), ...(listenError ? { listen_error: listenError } : {}), ...(mediaUrl ? { media_url: mediaUrl } : {}) })}\n`);
      renameSync(`${path}.${process.pid}.tmp`, path);
    } catch (error) {
      this.options.log.warn({ err: error }, `could not write ${OPS_FILE} (groupwire status and reload will not find this process)`);
    }
  }
}

/** The media listener's address and the file counts, for /status.json (none before the host has media). */
function mediaStatus(host: OpsHost): MediaStatus | undefined {
  const counts = host.fileCounts;
  if (!counts) return undefined;
  let refused = 0;
  for (const count of counts.refused.values()) refused += count;
  return { ...(host.mediaUrl ? { url: host.mediaUrl } : {}), stored: counts.stored, bytesStored: counts.bytesStored, refused };
}

let cachedVersion: string | undefined;
function version(): string {
  cachedVersion ??= (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return cachedVersion;
}
