import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { balance } from '../src/coordination/balance.js';
import { Coordinator, type StopReason } from '../src/coordination/coordinator.js';
import { RedisServer } from './helpers/redis-server.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * The coordination engine on a real Redis (docs/scale-out.md): leases with fencing tokens, the fair
 * share, handover, a worker leaving, a worker cut off from Redis, Redis restarting. Units here are
 * plain names; the callbacks keep a timeline of starts and stops, checked for overlaps.
 */
const LEASE_MS = 3_000;
const UNITS = Array.from({ length: 30 }, (_, index) => `unit-${index}`);
const log = pino({ level: process.env.GROUPWIRE_TEST_LOG ?? 'silent' });

let server: RedisServer;
beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(async () => {
  await server.stop();
});

interface Run { unit: string; worker: string; from: number; to?: number; why?: StopReason; token: string }

const runs: Run[] = [];
const made: Array<{ coordinator: Coordinator; redis: Redis; subscriber: Redis }> = [];
let prefix = 'gw0';
let testIndex = 0;

afterEach(async () => {
  for (const { coordinator, redis, subscriber } of made.splice(0)) {
    await coordinator.stop().catch(() => undefined);
    redis.disconnect();
    subscriber.disconnect();
  }
  runs.splice(0);
  prefix = `gw${++testIndex}`;
});

function worker(id: string, units: readonly string[] = UNITS): { coordinator: Coordinator; redis: Redis } {
  const redis = new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
  const subscriber = new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
  redis.on('error', () => undefined);
  subscriber.on('error', () => undefined);
  const coordinator = new Coordinator({
    redis, subscriber, prefix, workerId: id, log, leaseMs: LEASE_MS, units: () => units,
    async startUnit(unit, lease) {
      runs.push({ unit, worker: id, from: performance.now(), token: lease.token });
    },
    async stopUnit(unit, why) {
      const run = runs.findLast((candidate) => candidate.unit === unit && candidate.worker === id && candidate.to === undefined);
      if (run) Object.assign(run, { to: performance.now(), why });
    },
  });
  made.push({ coordinator, redis, subscriber });
  return { coordinator, redis };
}

/**
 * Each worker holds `share` leases and runs exactly those units. Runs alone are not enough: a worker
 * that took more than its share while the other was not registered yet may still be starting some
 * (runs 15, leases 18), and hands them over after the test has moved on.
 */
function settled(a: { coordinator: Coordinator }, b: { coordinator: Coordinator }, share: number): boolean {
  return a.coordinator.held().size === share && b.coordinator.held().size === share && openRuns('a') === share && openRuns('b') === share;
}

const openRuns = (id: string) => runs.filter((run) => run.worker === id && run.to === undefined).length;

function overlaps(): string[] {
  const found: string[] = [];
  for (const a of runs) {
    for (const b of runs) {
      if (a === b || a.unit !== b.unit || a.worker >= b.worker) continue;
      if (a.from < (b.to ?? Infinity) && b.from < (a.to ?? Infinity)) found.push(`${a.unit}: ${a.worker} and ${b.worker}`);
    }
  }
  return found;
}

describe('balance (pure)', () => {
  it('gives floor(N/W), one more to the first N mod W workers, and moves a few units a tick', () => {
    const units = UNITS.slice(0, 10);
    const none = new Map<string, string>();
    expect(balance({ units, workers: ['a', 'b', 'c'], self: 'a', held: new Set(), holders: none }).acquire).toHaveLength(4);
    expect(balance({ units, workers: ['a', 'b', 'c'], self: 'c', held: new Set(), holders: none }).acquire).toHaveLength(3);
    const crowded = balance({ units, workers: ['a', 'b', 'c', 'd'], self: 'a', held: new Set(units), holders: new Map(units.map((u) => [u, 'a'])) });
    expect(crowded.target).toBe(3);
    expect(crowded.handOver).toHaveLength(2);
    // Units someone holds are never taken.
    const taken = balance({ units, workers: ['a', 'b'], self: 'b', held: new Set(), holders: new Map(units.slice(0, 8).map((u) => [u, 'a'])) });
    expect(taken.acquire.sort()).toEqual(units.slice(8).sort());
  });
});

describe('leases on Redis', () => {
  it('three workers take 10 units each, never one unit twice; a fourth takes a share by clean handovers', { timeout: 30_000 }, async () => {
    const [a, b, c] = [worker('a'), worker('b'), worker('c')];
    await Promise.all([a, b, c].map((w) => w.coordinator.start()));
    await waitFor('10 units each', () => ['a', 'b', 'c'].every((id) => openRuns(id) === 10), 15_000);
    const joinedAt = performance.now();
    const d = worker('d');
    await d.coordinator.start();
    await waitFor('7 or 8 units each', () => ['a', 'b', 'c', 'd'].map(openRuns).sort().join() === '7,7,8,8', 15_000);
    expect(overlaps()).toEqual([]);
    // The handovers the join caused (the three also hand units to each other while they start together).
    const handedOver = runs.filter((run) => run.why === 'handover' && run.to! >= joinedAt);
    expect(handedOver.length).toBeGreaterThanOrEqual(7);
    // Each moved unit started on d after its handover stop, with a greater fencing token.
    for (const stopped of handedOver) {
      const next = runs.find((run) => run.unit === stopped.unit && run.worker === 'd');
      expect(next!.from).toBeGreaterThanOrEqual(stopped.to!);
      expect(BigInt(next!.token)).toBeGreaterThan(BigInt(stopped.token));
    }
  });

  it('a worker that stops hands every unit over and releases its leases at once', { timeout: 30_000 }, async () => {
    const [a, b] = [worker('a'), worker('b')];
    await Promise.all([a.coordinator.start(), b.coordinator.start()]);
    await waitFor('15 units each', () => settled(a, b, 15), 15_000);
    const runningOnA = runs.filter((run) => run.worker === 'a' && run.to === undefined);
    await a.coordinator.stop();
    // Released, not left to expire: no lease names a any more the moment stop() resolved.
    const values = await b.redis.mget(...UNITS.map((unit) => `${prefix}:lease:${unit}`));
    expect(values.filter((value) => value?.includes(':a:'))).toEqual([]);
    expect(runningOnA.map((run) => run.why)).toEqual(runningOnA.map(() => 'shutdown'));
    await waitFor('b runs all 30', () => openRuns('b') === 30, 15_000);
    expect(overlaps()).toEqual([]);
  });

  it('a worker cut off from Redis stops its units before its leases expire; the others start them only after', { timeout: 30_000 }, async () => {
    const [a, b] = [worker('a'), worker('b')];
    await Promise.all([a.coordinator.start(), b.coordinator.start()]);
    await waitFor('15 units each', () => settled(a, b, 15), 15_000);
    const runningOnA = runs.filter((run) => run.worker === 'a' && run.to === undefined);
    const cutAt = performance.now();
    made[0]!.redis.disconnect();
    made[0]!.subscriber.disconnect();
    await waitFor('b runs all 30', () => openRuns('b') === 30, 15_000);
    const stoppedByA = runningOnA;
    expect(stoppedByA.every((run) => run.why === 'redis_unreachable')).toBe(true);
    for (const run of stoppedByA) {
      const next = runs.find((candidate) => candidate.unit === run.unit && candidate.worker === 'b' && candidate.from > cutAt)!;
      // a stopped it before its lease could have expired; b could only take it once it had.
      expect(run.to!).toBeLessThan(next.from);
      expect(next.from - cutAt).toBeGreaterThan(LEASE_MS - LEASE_MS / 5 - 100);
    }
    expect(a.coordinator.redisUp).toBe(false);
    expect(overlaps()).toEqual([]);
  });

  it('Redis restarted briefly: no unit stops; down longer than the leases allow: stopped in time, started again', { timeout: 40_000 }, async () => {
    const [a, b] = [worker('a'), worker('b')];
    await Promise.all([a.coordinator.start(), b.coordinator.start()]);
    await waitFor('15 units each', () => settled(a, b, 15), 15_000);
    // Only stops from now on count: on a loaded machine one worker may have started before the other
    // registered and handed its extra units over while settling (legitimate 'handover' stops, before).
    const restartAt = performance.now();
    await server.restart('SIGKILL', 0);
    await waitFor('Redis reachable again for both', async () => {
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS));
      return a.coordinator.redisUp && b.coordinator.redisUp;
    }, 15_000);
    expect(runs.filter((run) => run.to !== undefined && run.to >= restartAt)).toEqual([]);

    const downAt = performance.now();
    await server.halt('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 1.3));
    await server.resumeAfterHalt();
    const stopped = runs.filter((run) => run.to !== undefined && run.to >= downAt);
    expect(stopped).toHaveLength(30);
    expect(stopped.every((run) => run.why === 'redis_unreachable' || run.why === 'lease_lost')).toBe(true);
    // Every stop came before the lease could have expired (it was last renewed before Redis went).
    for (const run of stopped) expect(run.to! - downAt).toBeLessThan(LEASE_MS);
    await waitFor('all 30 running again', () => openRuns('a') + openRuns('b') === 30, 20_000);
    expect(overlaps()).toEqual([]);
  });

  it('a fence: once another worker holds the lease, the old value no longer matches', async () => {
    const redis = new Redis(server.url);
    const { coordinator } = worker('a', ['solo']);
    await coordinator.start();
    const lease = coordinator.held().get('solo')!;
    expect(await redis.get(lease.key)).toBe(lease.value);
    await redis.set(lease.key, `999:b:${'0'.repeat(12)}`);
    expect(await redis.get(lease.key)).not.toBe(lease.value);
    await waitFor('the lease seen as lost', () => coordinator.held().size === 0 && lease.lost.aborted, 10_000);
    expect(runs.at(-1)!.why).toBe('lease_lost');
    redis.disconnect();
  });
});
