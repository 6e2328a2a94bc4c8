import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import { UpgradeGate } from '../chat/upgrade-gate.js';
import { configPath, loadBotsConfig, type CoordinationConfig, type LoadedConfig } from '../config/bots-config.js';
import { ConfigError } from '../config/yaml-source.js';
import { planGateways } from '../gateway/gateway-plan.js';
import { RedisStorage } from '../store/redis-storage.js';
import type { Bot } from '../supervisor/bot.js';
import type { FileCounts } from '../gateway/file-intake.js';
import { MediaSetup } from '../supervisor/media-setup.js';
import { mediaDirOf, Supervisor } from '../supervisor/supervisor.js';
import { Coordinator, type StopReason, type UnitLease } from './coordinator.js';
import { connectRedis, redactRedisUrl } from './redis-connection.js';
import { narrowConfig, planUnits, unitDigest, type UnitPlan } from './units.js';
import type { CoordinationStatus } from './coordination-status.js';

export interface WorkerOptions {
  log: Logger;
  /** Where this worker's operations endpoint answers (published for `groupwire status` on any worker). */
  opsUrl?: () => string | undefined;
}

/** A unit this worker runs now: its supervisor and the storage its writes are fenced through. */
interface RunningUnit {
  plan: UnitPlan;
  digest: string;
  supervisor: Supervisor;
  storage: RedisStorage;
  lease: UnitLease;
}

/** How often the placement of every unit is read for /status (one MGET and one HGETALL). */
const PLACEMENT_EVERY_MS = 2_000;

/**
 * One `groupwire run` of a bots.yaml with `coordination:` (docs/scale-out.md): it takes a fair share of
 * the units under leases (the Coordinator), runs one Supervisor per unit it holds, with the unit's state
 * in Redis written under the lease's fence, and hands its units over when it stops.
 */
export class Worker {
  readonly id: string;
  /** The upgrade budget every unit's sockets share, as one process's do. */
  readonly upgradeGate: UpgradeGate;
  private readonly running = new Map<string, RunningUnit>();
  private units: UnitPlan[] = [];
  private digests = new Map<string, string>();
  private readonly coordinator: Coordinator;
  /** The units' state writes; the leases have a connection of their own, so a big batch never delays a renewal. */
  private readonly redis: Redis;
  private readonly leases: Redis;
  private readonly subscriber: Redis;
  private placementTimer: NodeJS.Timeout | undefined;
  /** The process's media store, intake and listener: one for every unit it runs (bots.yaml `media:`). */
  private media!: MediaSetup;
  private lastPlacement: Awaited<ReturnType<Coordinator['placement']>> | undefined;

  private constructor(
    private loaded: LoadedConfig,
    private readonly settings: CoordinationConfig,
    private readonly options: WorkerOptions,
  ) {
    this.id = settings.worker_id ?? `${hostname()}-${process.pid}`;
    const { per_second: perSecond, burst } = loaded.config.service.upgrade_rate;
    this.upgradeGate = new UpgradeGate({ perSecond, burst });
    const log = options.log.child({ component: 'coordination', worker: this.id });
    this.redis = connectRedis(settings.redis, log, 'state');
    this.leases = connectRedis(settings.redis, log, 'leases');
    this.subscriber = connectRedis(settings.redis, log, 'events');
    this.coordinator = new Coordinator({
      redis: this.leases, subscriber: this.subscriber, prefix: settings.prefix, workerId: this.id, log,
      units: () => this.units.map((unit) => unit.id),
      leaseMs: settings.lease_seconds * 1000,
      startUnit: (unit, lease) => this.startUnit(unit, lease),
      stopUnit: (unit, why, deadlineMs) => this.stopUnit(unit, why, deadlineMs),
      meta: () => ({ pid: process.pid, host: hostname(), opsUrl: this.options.opsUrl?.(), units: [...this.running.keys()] }),
    });
  }

  /** Checks bots.yaml whole (every unit's mistakes at once), then joins the workers. */
  static async start(loaded: LoadedConfig, options: WorkerOptions): Promise<Worker> {
    const settings = loaded.config.coordination;
    if (!settings) throw new Error('bots.yaml has no coordination: section');
    const worker = new Worker(loaded, settings, options);
    await worker.plan(loaded);
    worker.media = await MediaSetup.start(loaded.config.media, mediaDirOf(loaded), options.log);
    options.log.info({ worker: worker.id, redis: redactRedisUrl(settings.redis), units: worker.units.length }, 'joining the workers');
    await worker.coordinator.start();
    worker.placementTimer = setInterval(() => void worker.readPlacement(), PLACEMENT_EVERY_MS).unref();
    void worker.readPlacement();
    return worker;
  }

  /** The units of a bots.yaml, or its mistakes (a shard that cannot be, with file:line:col). */
  private async plan(loaded: LoadedConfig): Promise<void> {
    const plugins = await Supervisor.check(loaded);
    const { units, problems } = planUnits(loaded, plugins, planGateways(loaded, plugins).gateways);
    if (problems.length > 0) throw new ConfigError(problems);
    this.loaded = loaded;
    this.units = units;
    this.digests = new Map(units.map((unit) => [unit.id, unitDigest(loaded, unit)]));
  }

  /** The bots of every unit this worker runs now (the status page, metrics and the lag probe read them). */
  get bots(): Bot[] {
    return [...this.running.values()].flatMap((unit) => unit.supervisor.bots);
  }

  get config(): LoadedConfig {
    return this.loaded;
  }

  private async startUnit(id: string, lease: UnitLease): Promise<void> {
    const plan = this.units.find((unit) => unit.id === id);
    if (!plan) throw new Error(`unit ${id} is not in bots.yaml any more`);
    const log = this.options.log.child({ unit: id });
    const storage = await RedisStorage.load({
      redis: this.redis, prefix: this.settings.prefix, unit: id, root: configPath(this.loaded, this.loaded.config.state_dir),
      fence: () => ({
        key: lease.key, value: lease.value, validForMs: () => lease.validForMs(),
        counterKey: `${this.settings.prefix}:fence:${id}`, ttlMs: this.settings.lease_seconds * 1000,
      }), log,
      onRefused: () => this.coordinator.leaseRefused(id),
    });
    const supervisor = await Supervisor.start(narrowConfig(this.loaded, plan), { log, storage, gate: this.upgradeGate, media: this.media });
    this.running.set(id, { plan, digest: this.digests.get(id)!, supervisor, storage, lease });
    log.info({ fence: lease.token, bots: plan.bots.map((bot) => bot.name) }, 'unit started');
  }

  /** Stops a unit's bots (posts flushed within the deadline), then waits until its state is written under the fence. */
  private async stopUnit(id: string, why: StopReason, deadlineMs: number): Promise<void> {
    const unit = this.running.get(id);
    if (!unit) return;
    this.running.delete(id);
    const log = this.options.log.child({ unit: id });
    // Flushing posts may take up to 5 s; less when the lease is about to run out (then the next holder sends them).
    const flushMs = Math.max(0, Math.min(5_000, deadlineMs - 1_000));
    const stopped = unit.supervisor.stop(flushMs).catch((error: unknown) => log.error({ err: error }, 'the unit did not stop cleanly'));
    // A handler still busy (a plugin waiting out its timeout) does not hold the lease past its end: from
    // the deadline on, the storage refuses every write and every effect of the unit (its barrier), so what
    // is left finishes in the background, acting on nothing.
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      stopped.then(() => false),
      new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), Math.max(0, deadlineMs)); }),
    ]);
    clearTimeout(timer);
    await unit.storage.close().catch((error: unknown) => log.warn({ err: error }, 'the unit\'s last writes were refused (its lease was lost): the next holder starts from what Redis has'));
    log.info({ why, fence: unit.lease.token, ...(late ? { finishingFenced: true } : {}) }, 'unit stopped');
  }

  /**
   * Reads bots.yaml again: units that left it are stopped and released, new ones are placed, and a unit
   * whose part of the file changed is handed over (stopped, saved, released) and started again with it.
   */
  async reload(file: string): Promise<{ applied: boolean; changes: string[]; problems: string[] }> {
    let loaded: LoadedConfig;
    try {
      loaded = await loadBotsConfig(file);
      if (JSON.stringify(loaded.config.coordination) !== JSON.stringify(this.loaded.config.coordination)) {
        return { applied: false, changes: [], problems: ['coordination: changed; restart the workers one at a time to apply it'] };
      }
      const before = this.digests;
      await this.plan(loaded);
      const changes: string[] = [];
      for (const [id, digest] of this.digests) if (!before.has(id)) changes.push(`unit ${id} added`);
      for (const id of before.keys()) if (!this.digests.has(id)) changes.push(`unit ${id} removed`);
      for (const [id, unit] of this.running) {
        const digest = this.digests.get(id);
        if (digest !== undefined && digest !== unit.digest) changes.push(`unit ${id} changed: started again`);
      }
      await this.coordinator.refresh(
        [...this.running.values()].filter((unit) => this.digests.get(unit.plan.id) !== unit.digest).map((unit) => unit.plan.id));
      return { applied: true, changes, problems: [] };
    } catch (error) {
      const problems = error instanceof ConfigError ? error.problems : [(error as Error).message];
      return { applied: false, changes: [], problems };
    }
  }

  private async readPlacement(): Promise<void> {
    try {
      this.lastPlacement = await this.coordinator.placement();
    } catch {
      // Redis is down: the status says so through redisUp; the last placement read stays shown.
    }
  }

  /** Which worker holds what, for /status, /metrics and `groupwire status`. */
  status(): CoordinationStatus {
    const placement = this.lastPlacement;
    const botsOf = new Map(this.units.map((unit) => [unit.id, unit.bots.map((bot) => (bot.shard ? `${bot.name}#${bot.shard.index}` : bot.name))]));
    return {
      worker: this.id, prefix: this.settings.prefix, leaseSeconds: this.settings.lease_seconds, redisUp: this.coordinator.redisUp,
      held: [...this.coordinator.held().values()].map((lease) => ({
        unit: lease.unit, token: lease.token, since: new Date(lease.since).toISOString(), validForSeconds: Math.max(0, Math.round(lease.validForMs() / 100) / 10),
      })),
      workers: (placement?.workers ?? []).map((worker) => ({
        ...worker, units: (placement?.units ?? []).filter((unit) => unit.worker === worker.id).map((unit) => unit.unit),
      })),
      units: (placement?.units ?? this.units.map((unit) => ({ unit: unit.id }))).map((unit) => ({ ...unit, bots: botsOf.get(unit.unit) ?? [] })),
      counters: { ...this.coordinator.counters },
    };
  }

  /** Hands every unit over (stopped, saved, released), leaves the workers, and closes Redis. */
  async stop(): Promise<void> {
    clearInterval(this.placementTimer);
    await this.coordinator.stop();
    this.redis.disconnect();
    this.leases.disconnect();
    this.subscriber.disconnect();
    await this.media.close();
  }

  /** What the file intake of every unit counted (/metrics). */
  get fileCounts(): FileCounts {
    return this.media.intake.counts;
  }

  /** The media listener's address, while it listens (ops.json). */
  get mediaUrl(): string | undefined {
    return this.media.url;
  }
}
