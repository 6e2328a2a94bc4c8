import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { UpgradeGate } from '../chat/upgrade-gate.js';
import { configPath, type BotConfig, type LoadedConfig } from '../config/bots-config.js';
import { loadPlugins, type LoadedPlugin } from '../config/plugin-loader.js';
import { ConfigError } from '../config/yaml-source.js';
import { LocalService } from '../service/local-service.js';
import { join } from 'node:path';
import { describeEndpoint, planGateways, type PlannedGateway } from '../gateway/gateway-plan.js';
import { GatewayRouter } from '../gateway/gateway-router.js';
import { MessageMap } from '../store/message-map.js';
import { FILE_STORAGE, type Storage } from '../store/storage.js';
import { Bot } from './bot.js';
import type { LoginRefusal } from './login-wait.js';
import { MediaSetup } from './media-setup.js';
import { reloadSupervisor, type ReloadHost } from './reload-apply.js';
import type { ReloadOutcome } from './reload-plan.js';

export interface SupervisorOptions {
  log: Logger;
  /** How long a bot whose login was refused waits when bots.yaml does not change (default 15 minutes). */
  loginRetryMs?: number;
  /** Where the bots' state is kept (default: files under state_dir; a worker's unit: Redis, docs/scale-out.md). */
  storage?: Storage;
  /** An upgrade budget shared with other supervisors of the process (a worker's units). */
  gate?: UpgradeGate;
  /** The process's media, shared with other supervisors of the process (a worker's units): not stopped with this one. */
  media?: MediaSetup;
}

/** The gateways' message map in the state dir (what each side's copy of a line is; docs/gateways.md). */
export const GATEWAY_MAP_FILE = 'gateway-map.jsonl';

/**
 * Runs the bots of a bots.yaml in one process: the embedded local service when asked for, then every
 * bot, each on its own. A bot, a chat or a plugin that fails is logged and does not stop the others.
 */
export class Supervisor {
  readonly bots: Bot[] = [];
  /** What the last reload did (or why not), for /status. */
  lastReload: ReloadOutcome | undefined;
  private service: LocalService | undefined;
  private current!: { loaded: LoadedConfig; plugins: LoadedPlugin[][] };
  private gateways: GatewayRouter | undefined;
  private messageMap: MessageMap | undefined;
  /** The process's media store, file intake and listener (bots.yaml `media:`). */
  private media!: MediaSetup;
  /** The media was started here (not given by a worker): stopped with the supervisor. */
  private ownsMedia = false;
  private startOptions!: { service: { baseUrl: string; ca?: string | Buffer }; stateDir: string; loginRetryMs?: number; storage: Storage };
  private stopping = false;
  /** The reload under way: a second one waits for it. */
  private reloading: Promise<unknown> = Promise.resolve();
  private everyRefusal: ((refusals: LoginRefusal[]) => void) | undefined;
  private readonly allRefused = new Promise<LoginRefusal[]>((resolve) => {
    this.everyRefusal = resolve;
  });

  private constructor(
    private readonly log: Logger,
    /** The upgrade budget all sockets of the process share (`pace` now, `stats` of accepted, refused, cuts). */
    readonly upgradeGate: UpgradeGate,
  ) {}

  /** Checks everything that can be checked without connecting (config, plugins and their options). */
  static async check(loaded: LoadedConfig): Promise<LoadedPlugin[][]> {
    const all: LoadedPlugin[][] = [];
    const problems: string[] = [];
    for (let index = 0; index < loaded.config.bots.length; index += 1) {
      try {
        all.push(await loadPlugins(loaded, index));
      } catch (error) {
        if (error instanceof ConfigError) problems.push(...error.problems);
        else throw error;
      }
    }
    if (problems.length > 0) throw new ConfigError(problems);
    const plan = planGateways(loaded, all);
    if (plan.problems.length > 0) throw new ConfigError(plan.problems);
    return all;
  }

  static async start(loaded: LoadedConfig, options: SupervisorOptions): Promise<Supervisor> {
    const plugins = await Supervisor.check(loaded);
    const { config } = loaded;
    // One upgrade budget for every socket of the process: a reconnect storm is spread out, and slowed when refused.
    const { per_second: perSecond, burst } = config.service.upgrade_rate;
    const gate = options.gate ?? new UpgradeGate({ perSecond, burst });
    const supervisor = new Supervisor(options.log, gate);
    let service: { baseUrl: string; ca?: string | Buffer };
    if (config.service.base_url === 'embedded') {
      const embedded = config.service.embedded;
      supervisor.service = await LocalService.start({
        port: embedded?.port ?? 0,
        idStyle: embedded?.ids,
        // The seed reader is the service's: loaded only for an embedded service (#20).
        seed: embedded?.seed ? await (await import('../service/seed.js')).readSeedFile(configPath(loaded, embedded.seed)) : 'demo',
        statePath: embedded?.state ? configPath(loaded, embedded.state) : undefined,
        logger: options.log.child({ component: 'local-service' }),
      });
      service = { baseUrl: supervisor.service.baseUrl, ca: supervisor.service.ca };
    } else {
      service = {
        baseUrl: config.service.base_url,
        ca: config.service.ca_file ? await readFile(configPath(loaded, config.service.ca_file)) : undefined,
      };
    }
    supervisor.current = { loaded, plugins };
    supervisor.startOptions = { service, stateDir: configPath(loaded, config.state_dir), loginRetryMs: options.loginRetryMs, storage: options.storage ?? FILE_STORAGE };
    supervisor.ownsMedia = options.media === undefined;
    supervisor.media = options.media ?? await MediaSetup.start(config.media, mediaDirOf(loaded), options.log);
    supervisor.gateways = supervisor.routerFor(planGateways(loaded, plugins).gateways);
    config.bots.forEach((botConfig, index) => supervisor.bots.push(supervisor.makeBot(botConfig, plugins[index]!)));
    // Each bot starts on its own; one that cannot reach the service yet keeps trying without holding up the others.
    for (const bot of supervisor.bots) void bot.start();
    return supervisor;
  }

  /** The bots.yaml in use: the one started with, or the last one a reload applied. */
  get loaded(): LoadedConfig {
    return this.current.loaded;
  }

  private makeBot(config: BotConfig, plugins: LoadedPlugin[]): Bot {
    const { loaded } = this.current;
    return new Bot({
      config, plugins, service: this.startOptions.service, stateDir: this.startOptions.stateDir, configDir: loaded.dir, gate: this.upgradeGate,
      log: this.log.child({ bot: config.name }),
      configFile: loaded.source.file, loginRetryMs: this.startOptions.loginRetryMs,
      onLoginRefused: () => this.noteLoginRefused(),
      gateways: this.gateways, storage: this.startOptions.storage, media: this.media.store,
    });
  }

  /** The gateways' router for a plan (none without gateways); a new plan keeps the message map and the counters. */
  private routerFor(plan: PlannedGateway[]): GatewayRouter | undefined {
    if (plan.length === 0) return undefined;
    const { config } = this.current.loaded;
    this.messageMap ??= MessageMap.open(join(this.startOptions.stateDir, GATEWAY_MAP_FILE), {
      maxRecords: config.message_map.max_lines, maxAgeMs: config.message_map.max_age_days * 24 * 3600 * 1000,
    }, this.startOptions.storage);
    const router = new GatewayRouter(plan, this.messageMap, this.log.child({ component: 'gateways' }), this.media.intake);
    if (this.gateways) Object.assign(router.counters, this.gateways.counters);
    this.log.info({ gateways: plan.map((g) => ({ name: g.name, endpoints: g.endpoints.map(describeEndpoint) })) }, 'gateways');
    return router;
  }

  /**
   * Reads bots.yaml again and applies what changed to the running bots (see reload-apply.ts and
   * docs/bots.md "Reload"); a file with a mistake changes nothing. Reloads run one at a time.
   */
  reload(file: string): Promise<ReloadOutcome> {
    const run = this.reloading.then(() => reloadSupervisor(this.reloadHost(), file)).then((outcome) => {
      this.lastReload = outcome;
      return outcome;
    });
    this.reloading = run.catch(() => undefined);
    return run;
  }

  private reloadHost(): ReloadHost {
    const self = this;
    return {
      log: this.log, bots: this.bots,
      get stopping() { return self.stopping; },
      get loaded() { return self.current.loaded; },
      set loaded(loaded) { self.current.loaded = loaded; },
      get plugins() { return self.current.plugins; },
      set plugins(plugins) { self.current.plugins = plugins; },
      get gateways() { return self.gateways; },
      set gateways(router) { self.gateways = router; },
      check: (loaded) => Supervisor.check(loaded),
      makeBot: (config, plugins) => this.makeBot(config, plugins),
      routerFor: (plan) => this.routerFor(plan),
    };
  }

  /** The gateways as planned now (none without gateways): the status page shows each with its sides. */
  gatewayPlan(): readonly PlannedGateway[] {
    return this.gateways?.gateways ?? [];
  }

  /** The media listener's address (bots.yaml `media.listen`), while it listens. */
  get mediaUrl(): string | undefined {
    return this.media.url;
  }

  /** What the file intake counted (files stored, bytes, refusals by reason): /metrics. */
  get fileCounts(): MediaSetup['intake']['counts'] {
    return this.media.intake.counts;
  }

  /** The embedded service, when bots.yaml asked for one. */
  get localService(): LocalService | undefined {
    return this.service;
  }

  /**
   * Resolves, with each bot's refusal, once every bot waits for a fix to a refused login at the same
   * time: nothing will work until someone edits bots.yaml or the accounts (`groupwire run` exits then).
   */
  everyLoginRefused(): Promise<LoginRefusal[]> {
    return this.allRefused;
  }

  private noteLoginRefused(): void {
    const refusals = this.bots.map((bot) => bot.loginRefusal);
    if (refusals.every((refusal) => refusal !== undefined)) this.everyRefusal?.(refusals);
  }

  /** Resolves when every bot has finished starting (tests and the demo wait on it). */
  ready(): Promise<void> {
    return Promise.all(this.bots.map((bot) => bot.start())).then(() => undefined);
  }

  /** Resolves when every bot's chats have their sockets open. */
  connected(): Promise<void> {
    return Promise.all(this.bots.map((bot) => bot.connected())).then(() => undefined);
  }

  async stop(flushMs = 5_000): Promise<void> {
    this.stopping = true;
    this.log.info('stopping');
    // A reload under way finishes first (a reload asked for from now on is refused).
    await this.reloading;
    await Promise.all(this.bots.map((bot) => bot.stop(flushMs).catch((error: unknown) => {
      this.log.error({ err: error, bot: bot.name }, 'bot did not stop cleanly');
    })));
    if (this.ownsMedia) await this.media.close();
    await this.service?.close();
    this.log.info('stopped');
  }

  stats() {
    return Object.fromEntries(this.bots.map((bot) => [bot.name, bot.stats()]));
  }
}

/** The media store's folder: bots.yaml's `media.dir`, else `<state_dir>/media`. */
export function mediaDirOf(loaded: LoadedConfig): string {
  const { media, state_dir: stateDir } = loaded.config;
  return media.dir ? configPath(loaded, media.dir) : join(configPath(loaded, stateDir), 'media');
}
