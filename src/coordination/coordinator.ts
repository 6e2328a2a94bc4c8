import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { balance } from './balance.js';
import { LeaseTable, within, type UnitLease } from './lease-table.js';
import { WorkerRegistry, type WorkerInfo } from './worker-registry.js';

export type { UnitLease } from './lease-table.js';
export type StopReason = 'handover' | 'shutdown' | 'lease_lost' | 'redis_unreachable' | 'removed';

export interface CoordinatorOptions {
  redis: Redis;
  /** A second connection for the events channel (a subscribed connection can do nothing else). */
  subscriber?: Redis;
  prefix: string;
  workerId: string;
  log: Logger;
  /** Every unit of bots.yaml, read again each tick (a reload may change them). */
  units(): readonly string[];
  /** Default 10 s; renewed every fifth. */
  leaseMs?: number;
  startUnit(unit: string, lease: UnitLease): Promise<void>;
  stopUnit(unit: string, why: StopReason, deadlineMs: number): Promise<void>;
  meta?(): Record<string, unknown>;
}

/** Below this share of the lease left, a unit whose lease cannot be renewed is stopped (so before it could expire). */
const STOP_BELOW = 0.4;

/**
 * Places units on workers under leases (docs/scale-out.md). Each tick renews this worker's leases,
 * refreshes its heartbeat, and moves toward its fair share: free units are acquired and started;
 * excess units are stopped, saved and released (a handover). A unit is started only after its lease
 * is acquired and released only after it stopped. Without Redis, units are kept while their leases
 * are provably valid and stopped before they could expire; they start again when Redis is back.
 */
export class Coordinator {
  readonly counters = { acquired: 0, handedOver: 0, lost: 0, renewFailures: 0, redisDown: 0 };
  private readonly leases = new Map<string, UnitLease>();
  /** Units started (startUnit resolved) and not stopped since. */
  private readonly running = new Set<string>();
  /** One chain of start/stop work per unit: never two at a time. */
  private readonly work = new Map<string, Promise<void>>();
  private readonly table: LeaseTable;
  private readonly registry: WorkerRegistry;
  private readonly leaseMs: number;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private stopping = false;
  private up = true;

  constructor(private readonly options: CoordinatorOptions) {
    this.leaseMs = options.leaseMs ?? 10_000;
    this.log = options.log;
    this.table = new LeaseTable(options.redis, options.prefix, options.workerId, this.leaseMs);
    this.registry = new WorkerRegistry(options.redis, options.prefix, options.workerId, this.leaseMs);
  }

  get redisUp(): boolean {
    return this.up;
  }

  private get channel(): string {
    return `${this.options.prefix}:events`;
  }

  private get answerWithinMs(): number {
    return Math.max(200, this.leaseMs / 5);
  }

  async start(): Promise<void> {
    const { subscriber } = this.options;
    if (subscriber) {
      subscriber.on('message', (channel: string, message: string) => {
        if (channel === this.channel && !message.endsWith(` ${this.options.workerId}`)) this.tickSoon();
      });
      await subscriber.subscribe(this.channel).catch((error: unknown) => this.log.warn({ err: error }, 'could not subscribe to the workers\' events; placing at each tick only'));
    }
    await this.tick();
    await this.publish(`joined ${this.options.workerId}`);
    this.timer = setInterval(() => this.tickSoon(), this.leaseMs / 5);
  }

  held(): ReadonlyMap<string, UnitLease> {
    return this.leases;
  }

  /** Every live worker, and who holds each unit (for /status). */
  async placement(): Promise<{ workers: WorkerInfo[]; units: Array<{ unit: string; worker?: string; token?: string }> }> {
    const units = this.options.units();
    const [workers, holders] = await within(Promise.all([this.registry.live(), this.table.holders(units)]), this.answerWithinMs);
    return { workers, units: units.map((unit) => ({ unit, ...holders.get(unit) })) };
  }

  /** Hands these units over (stopped, saved, released) so they start again, here or elsewhere (a reload changed them). */
  async refresh(units: readonly string[]): Promise<void> {
    await Promise.all(units.map((unit) => this.handOver(unit, 'handover')));
    this.tickSoon();
  }

  /** A write under the unit's fence was refused: the lease is someone else's already; stop the unit now, not at the next renewal. */
  leaseRefused(unit: string): void {
    const lease = this.leases.get(unit);
    if (!lease) return;
    this.counters.lost += 1;
    this.log.warn({ unit, fence: lease.token }, 'a state write was refused under this lease: stopping the unit');
    this.drop(lease);
    void this.queue(unit, () => this.stopRunning(unit, 'lease_lost', 0));
  }

  private tickSoon(): void {
    if (this.stopping) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = this.tick().finally(() => {
      this.ticking = undefined;
      if (this.again) {
        this.again = false;
        this.tickSoon();
      }
    });
  }

  private async tick(): Promise<void> {
    await Promise.all([...this.leases.values()].map((lease) => this.renew(lease)));
    try {
      // Bounded: while Redis is away commands wait in the offline queue, and the renewals must go on.
      await within(this.registry.heartbeat({ ...this.options.meta?.() }), this.answerWithinMs);
      this.redisIs(true);
    } catch (error) {
      this.redisIs(false, error);
    }
    if (!this.up || this.stopping) return;
    try {
      await this.place();
    } catch (error) {
      this.redisIs(false, error);
    }
  }

  private async renew(lease: UnitLease): Promise<void> {
    const { unit } = lease;
    try {
      const ours = await this.table.renew(lease, this.answerWithinMs);
      if (this.leases.get(unit) !== lease) return;
      this.redisIs(true);
      if (!ours) {
        this.counters.lost += 1;
        this.log.warn({ unit, fence: lease.token }, 'lease lost (it expired, or another worker holds it): stopping the unit');
        this.drop(lease);
        this.queue(unit, () => this.stopRunning(unit, 'lease_lost', 0));
        return;
      }
      // Back after an outage that made us stop it: the lease is still ours, start it again.
      if (!this.running.has(unit) && !this.stopping) this.queue(unit, () => this.startHeld(lease));
    } catch (error) {
      this.counters.renewFailures += 1;
      this.redisIs(false, error);
      const left = lease.validForMs();
      if (left <= 0) {
        this.log.warn({ unit, fence: lease.token }, 'lease no longer provably ours (Redis unreachable): giving it up');
        this.drop(lease);
        this.queue(unit, () => this.stopRunning(unit, 'redis_unreachable', 0));
      } else if (left < this.leaseMs * STOP_BELOW && this.running.has(unit)) {
        this.log.warn({ unit, fence: lease.token, validForMs: Math.round(left) }, 'Redis unreachable: stopping the unit before its lease could expire');
        this.queue(unit, () => this.stopRunning(unit, 'redis_unreachable', Math.max(0, lease.validForMs() - 200)));
      }
    }
  }

  /** Moves toward this worker's share: takes free units, hands excess ones over, drops units bots.yaml no longer has. */
  private async place(): Promise<void> {
    const units = this.options.units();
    const known = new Set(units);
    for (const unit of [...this.leases.keys()]) if (!known.has(unit)) void this.handOver(unit, 'removed');
    const [workers, holders] = await within(Promise.all([this.registry.live(), this.table.holders(units)]), this.answerWithinMs);
    const held = new Set(this.leases.keys());
    const moves = balance({
      units, workers: workers.map((worker) => worker.id), self: this.options.workerId, held,
      holders: new Map([...holders].map(([unit, holder]) => [unit, holder.worker])),
    });
    for (const unit of moves.handOver) void this.handOver(unit, 'handover');
    for (const unit of moves.acquire) {
      if (this.stopping || this.work.has(unit)) continue;
      const lease = await this.table.acquire(unit, this.answerWithinMs);
      if (!lease) continue;
      this.leases.set(unit, lease);
      this.counters.acquired += 1;
      this.log.info({ unit, fence: lease.token }, 'lease acquired');
      this.queue(unit, () => this.startHeld(lease));
    }
  }

  private async startHeld(lease: UnitLease): Promise<void> {
    const { unit } = lease;
    if (this.running.has(unit) || this.leases.get(unit) !== lease || this.stopping || lease.validForMs() <= 0) return;
    try {
      await this.options.startUnit(unit, lease);
      this.running.add(unit);
    } catch (error) {
      this.log.error({ err: error, unit }, 'the unit could not start; its lease is released and it will be tried again');
      this.drop(lease);
      await this.table.release(lease, this.answerWithinMs).catch(() => undefined);
      return;
    }
    // Lost while it was starting: it must not go on.
    if (this.leases.get(unit) !== lease) await this.stopRunning(unit, 'lease_lost', 0);
  }

  private async stopRunning(unit: string, why: StopReason, deadlineMs: number): Promise<void> {
    if (!this.running.has(unit)) return;
    this.running.delete(unit);
    await this.options.stopUnit(unit, why, deadlineMs).catch((error: unknown) => this.log.error({ err: error, unit }, 'the unit did not stop cleanly'));
  }

  /** Stops a unit, then releases its lease (a clean handover: the next holder starts from everything it saved). */
  private handOver(unit: string, why: StopReason): Promise<void> {
    return this.queue(unit, async () => {
      const lease = this.leases.get(unit);
      if (!lease) return;
      await this.stopRunning(unit, why, Math.max(0, Math.min(10_000, lease.validForMs() - 200)));
      this.drop(lease);
      try {
        await this.table.release(lease, this.answerWithinMs);
        if (why === 'handover') this.counters.handedOver += 1;
        this.log.info({ unit, fence: lease.token, why }, 'lease released');
        await this.publish(`released ${unit} ${this.options.workerId}`);
      } catch (error) {
        this.log.warn({ err: error, unit }, 'could not release the lease; it expires by itself');
      }
    });
  }

  private drop(lease: UnitLease): void {
    lease.lose();
    if (this.leases.get(lease.unit) === lease) this.leases.delete(lease.unit);
  }

  private queue(unit: string, task: () => Promise<void>): Promise<void> {
    const next = (this.work.get(unit) ?? Promise.resolve()).then(task).catch((error: unknown) => this.log.error({ err: error, unit }, 'unit work failed'));
    this.work.set(unit, next);
    void next.then(() => {
      if (this.work.get(unit) === next) this.work.delete(unit);
    });
    return next;
  }

  private redisIs(up: boolean, error?: unknown): void {
    if (up === this.up) return;
    this.up = up;
    if (!up) {
      this.counters.redisDown += 1;
      this.log.warn({ err: error }, 'Redis unreachable: keeping units while their leases are provably valid');
    } else this.log.info('Redis reachable again');
  }

  private async publish(message: string): Promise<void> {
    await this.options.redis.publish(this.channel, message).catch(() => undefined);
  }

  /** Leaves: out of the registry first (the others' shares grow), then every unit stopped, saved and released. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    await this.ticking;
    await within(this.registry.leave(), this.answerWithinMs).catch((error: unknown) => this.log.warn({ err: error }, 'could not leave the registry; the entry expires by itself'));
    await this.publish(`leaving ${this.options.workerId}`);
    await Promise.all([...this.leases.keys()].map((unit) => this.handOver(unit, 'shutdown')));
    await Promise.all([...this.work.values()]);
    await this.options.subscriber?.unsubscribe().catch(() => undefined);
  }
}
