import { describe, expect, it } from 'vitest';
import { DEFAULT_UPGRADE_PACE, UpgradeGate, type GateClock } from '../src/chat/upgrade-gate.js';

/**
 * The gate on a hand-driven clock: time moves only when the test says so, so every figure below is
 * the gate's arithmetic (clock readings), never the machine's speed.
 */
class ManualClock implements GateClock {
  time = 0;
  private timers: Array<{ at: number; wake: () => void }> = [];

  now(): number {
    return this.time;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = { at: this.time + ms, wake: resolve };
      this.timers.push(timer);
      signal?.addEventListener('abort', () => {
        this.timers = this.timers.filter((t) => t !== timer);
        resolve();
      }, { once: true });
    });
  }

  /** Moves time forward, waking each sleeper at its own moment (in order) and letting it run. */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    await settle();
    for (;;) {
      const next = this.timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.time = Math.max(this.time, next.at);
      next.wake();
      await settle();
    }
    this.time = until;
    await settle();
  }
}

/** Lets promise chains run to their next wait. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Queues `count` takes; `passed` holds the clock reading at which each got through, in order. */
function takeMany(gate: UpgradeGate, clock: ManualClock, count: number, signal?: AbortSignal) {
  const passed: number[] = [];
  const tickets: number[] = [];
  for (let i = 0; i < count; i += 1) {
    void gate.take(signal).then((ticket) => {
      passed.push(clock.now());
      tickets.push(ticket);
    });
  }
  return { passed, tickets };
}

describe('UpgradeGate pacing', () => {
  it('lets half the burst through at once (the rest is the service\'s headroom), then one every 1/per_second, in turn', async () => {
    const clock = new ManualClock();
    const gate = new UpgradeGate({ perSecond: 10, burst: 20 }, clock);
    const { passed, tickets } = takeMany(gate, clock, 13);
    await clock.advance(0);
    expect(passed).toHaveLength(10);
    await clock.advance(1_000);
    expect(passed.slice(10)).toEqual([100, 200, 300]);
    expect(tickets).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
  });

  it('refills over a quiet time, never beyond the burst', async () => {
    const clock = new ManualClock();
    const gate = new UpgradeGate({ perSecond: 10, burst: 4 }, clock);
    await clock.advance(60_000);
    const { passed } = takeMany(gate, clock, 3);
    await clock.advance(0);
    expect(passed).toEqual([60_000, 60_000]);
    await clock.advance(100);
    expect(passed).toEqual([60_000, 60_000, 60_100]);
  });

  it('defaults to the local service\'s limit, 20 a second in bursts of 50', () => {
    expect(new UpgradeGate().ceiling).toEqual({ perSecond: 20, burst: 50 });
    expect(DEFAULT_UPGRADE_PACE).toEqual({ perSecond: 20, burst: 50 });
    expect(new UpgradeGate().pace).toBe(20);
  });

  it('refuses a pace that could never let anything through', () => {
    expect(() => new UpgradeGate({ perSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => new UpgradeGate({ perSecond: 1, burst: 0 })).toThrow(RangeError);
  });

  it('a caller that gave up gets through at once, without taking a token', async () => {
    const clock = new ManualClock();
    const gate = new UpgradeGate({ perSecond: 1, burst: 1 }, clock);
    await gate.take();
    const stop = new AbortController();
    const gaveUp = takeMany(gate, clock, 1, stop.signal);
    const next = takeMany(gate, clock, 1);
    await clock.advance(0);
    stop.abort();
    await clock.advance(0);
    expect(gaveUp.passed).toEqual([0]);
    await clock.advance(1_000);
    // The token that refilled in that second went to the next caller.
    expect(next.passed).toEqual([1_000]);
  });
});

describe('UpgradeGate adapting to the service\'s refusals', () => {
  it('a 429 halves the pace and empties the bucket for every socket already waiting', async () => {
    const clock = new ManualClock();
    const gate = new UpgradeGate({ perSecond: 10, burst: 8 }, clock);
    const first = takeMany(gate, clock, 4);
    await clock.advance(0);
    const waiting = takeMany(gate, clock, 3);
    await clock.advance(50); // half a token has come back meanwhile
    gate.refused(first.tickets[0]!);
    expect(gate.pace).toBe(5);
    await clock.advance(1_000);
    // From the refusal at 50 ms: a whole token at the new pace takes 200 ms each.
    expect(waiting.passed).toEqual([250, 450, 650]);
    expect(gate.stats).toMatchObject({ refused: 1, cuts: 1 });
  });

  it('refusals of upgrades let through before the cut (in flight at the old pace) count once', async () => {
    const clock = new ManualClock();
    const gate = new UpgradeGate({ perSecond: 40, burst: 20 }, clock);
    const burst = takeMany(gate, clock, 10);
    await clock.advance(0);
    for (const ticket of burst.tickets.slice(0, 6)) gate.refused(ticket);
    expect(gate.pace).toBe(20);
    expect(gate.stats).toMatchObject({ refused: 6, cuts: 1 });
    // One let through after the cut and refused too: the service is slower still.
    const after = takeMany(gate, clock, 1);
    await clock.advance(100);
    gate.refused(after.tickets[0]!);
    expect(gate.pace).toBe(10);
    expect(gate.stats.cuts).toBe(2);
  });

  it('the bucket shrinks with the pace: a slowed gate does not burst at its old size', async () => {
    const clock = new ManualClock();
    const gate = new UpgradeGate({ perSecond: 10, burst: 20 }, clock);
    const [ticket] = (await Promise.all([gate.take()]));
    gate.refused(ticket!);
    await clock.advance(60_000);
    const { passed } = takeMany(gate, clock, 12);
    await clock.advance(0);
    // Half of the halved bucket (10 at the ceiling's pace, 5 at half of it).
    expect(passed).toHaveLength(5);
  });

  it('upgrades that go through bring the pace back up to the ceiling, a tenth of it per second, not beyond', async () => {
    const clock = new ManualClock();
    const gate = new UpgradeGate({ perSecond: 20, burst: 20 }, clock);
    gate.refused(await gate.take());
    expect(gate.pace).toBe(10);
    await clock.advance(2_000);
    gate.accepted();
    expect(gate.pace).toBe(14);
    await clock.advance(2_000);
    gate.accepted();
    expect(gate.pace).toBe(18);
    await clock.advance(10_000);
    gate.accepted();
    expect(gate.pace).toBe(20);
    expect(gate.stats.accepted).toBe(3);
  });

  it('does not climb without successes, and never drops below one upgrade in ten seconds', async () => {
    const clock = new ManualClock();
    const gate = new UpgradeGate({ perSecond: 1, burst: 1 }, clock);
    for (let i = 0; i < 8; i += 1) {
      const ticket = gate.take();
      await clock.advance(20_000);
      gate.refused(await ticket);
    }
    expect(gate.pace).toBe(0.1);
    await clock.advance(60_000);
    expect(gate.pace).toBe(0.1);
    const { passed } = takeMany(gate, clock, 2);
    await clock.advance(0);
    expect(passed).toHaveLength(1);
    await clock.advance(10_000);
    expect(passed).toHaveLength(2);
  });
});
