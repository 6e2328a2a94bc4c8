import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';

/**
 * A unit's lease as this worker holds it. `value` is the fence every state write is checked against;
 * `validForMs()` is how long the lease is *provably* still ours on this process's monotonic clock:
 * from the moment the last acquire or renew was sent, the lease's time less 1% (clock drift) and 50 ms.
 */
export class UnitLease {
  private validUntil: number;
  private readonly loser = new AbortController();
  /** When it was acquired (ms since the epoch, for /status). */
  readonly since = Date.now();

  constructor(
    readonly unit: string,
    readonly key: string,
    readonly value: string,
    sentAt: number,
    private readonly ttlMs: number,
  ) {
    this.validUntil = provableEnd(sentAt, ttlMs);
  }

  /** The fencing token: grows with every acquisition of the unit. */
  get token(): string {
    return this.value.slice(0, this.value.indexOf(':'));
  }

  validForMs(): number {
    return this.lost.aborted ? 0 : Math.max(0, this.validUntil - performance.now());
  }

  /** Aborted when the lease is known to be someone else's (or gone). */
  get lost(): AbortSignal {
    return this.loser.signal;
  }

  renewed(sentAt: number): void {
    this.validUntil = Math.max(this.validUntil, provableEnd(sentAt, this.ttlMs));
  }

  lose(): void {
    this.loser.abort();
  }
}

function provableEnd(sentAt: number, ttlMs: number): number {
  return sentAt + ttlMs * 0.99 - 50;
}

const ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local token = redis.call('INCR', KEYS[2])
local value = token .. ':' .. ARGV[1] .. ':' .. ARGV[2]
redis.call('SET', KEYS[1], value, 'PX', ARGV[3])
return value`;
const RENEW = `
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
-- Expired while Redis was away and acquired by nobody since (the counter still shows our token): ours again.
local token = string.match(ARGV[1], '^(%d+):')
if held == false and token and redis.call('GET', KEYS[2]) == token then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

type LeaseCommands = {
  gwAcquire(lease: string, fence: string, worker: string, nonce: string, ttl: number): Promise<string | null>;
  gwRenew(lease: string, counter: string, value: string, ttl: number): Promise<number>;
  gwRelease(lease: string, value: string): Promise<number>;
};

/** Leases of units in Redis: `<prefix>:lease:<unit>` with an expiry, tokens from `<prefix>:fence:<unit>` (docs/scale-out.md). */
export class LeaseTable {
  private readonly redis: Redis & LeaseCommands;

  constructor(redis: Redis, private readonly prefix: string, private readonly workerId: string, readonly ttlMs: number) {
    redis.defineCommand('gwAcquire', { numberOfKeys: 2, lua: ACQUIRE });
    redis.defineCommand('gwRenew', { numberOfKeys: 2, lua: RENEW });
    redis.defineCommand('gwRelease', { numberOfKeys: 1, lua: RELEASE });
    this.redis = redis as Redis & LeaseCommands;
  }

  keyOf(unit: string): string {
    return `${this.prefix}:lease:${unit}`;
  }

  /** The unit's fence counter: INCRed by every acquisition, so it shows whether anyone took the unit since. */
  counterOf(unit: string): string {
    return `${this.prefix}:fence:${unit}`;
  }

  /** Takes the unit's lease if nobody holds it; undefined when someone does. */
  async acquire(unit: string, timeoutMs: number): Promise<UnitLease | undefined> {
    const sentAt = performance.now();
    const nonce = randomBytes(6).toString('hex');
    const value = await within(this.redis.gwAcquire(this.keyOf(unit), this.counterOf(unit), this.workerId, nonce, this.ttlMs), timeoutMs);
    return value ? new UnitLease(unit, this.keyOf(unit), value, sentAt, this.ttlMs) : undefined;
  }

  /** Extends a lease; false when it is no longer ours. Throws when Redis does not answer in time. */
  async renew(lease: UnitLease, timeoutMs: number): Promise<boolean> {
    const sentAt = performance.now();
    const renewed = (await within(this.redis.gwRenew(lease.key, this.counterOf(lease.unit), lease.value, this.ttlMs), timeoutMs)) === 1;
    if (renewed) lease.renewed(sentAt);
    return renewed;
  }

  /** Gives a lease up (only if it is still ours). */
  async release(lease: UnitLease, timeoutMs: number): Promise<void> {
    await within(this.redis.gwRelease(lease.key, lease.value), timeoutMs);
  }

  /** Who holds each unit now: unit → { worker, token } (free units absent). */
  async holders(units: readonly string[]): Promise<Map<string, { worker: string; token: string }>> {
    const holders = new Map<string, { worker: string; token: string }>();
    if (units.length === 0) return holders;
    const values = await this.redis.mget(...units.map((unit) => this.keyOf(unit)));
    values.forEach((value, index) => {
      if (!value) return;
      const [token, ...rest] = value.split(':');
      rest.pop();
      holders.set(units[index]!, { worker: rest.join(':'), token: token! });
    });
    return holders;
  }
}

/** A Redis answer, or an error after `ms` (the command itself may still run later: every script checks the fence). */
export function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
