import { afterEach, describe, expect, it, vi } from 'vitest';
import { Backoff, sleep } from '../src/chat/backoff.js';
import { CLOSE, closeAction, type CloseAction } from '../src/chat/close-codes.js';

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('Backoff', () => {
  it('full jitter: every wait is within 0 and min(max, base * 2^n)', () => {
    const ceiling = (n: number) => Math.min(30_000, 500 * 2 ** n);
    const backoff = new Backoff(500, 30_000);
    for (let n = 0; n < 40; n += 1) {
      const wait = backoff.next();
      expect(wait).toBeGreaterThanOrEqual(0);
      expect(wait).toBeLessThanOrEqual(ceiling(n));
    }
    for (const random of [0, 0.25, 0.999999]) {
      vi.spyOn(Math, 'random').mockReturnValue(random);
      const mocked = new Backoff(500, 30_000);
      for (let n = 0; n < 40; n += 1) expect(mocked.next()).toBeCloseTo(random * ceiling(n), 6);
    }
  });

  it('the ceiling doubles from the base and stops at the maximum', () => {
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const backoff = new Backoff(100, 1_000);
    expect(Array.from({ length: 7 }, () => backoff.next())).toEqual([100, 200, 400, 800, 1_000, 1_000, 1_000]);
    expect(backoff.attempts).toBe(7);
  });

  it('the attempt count is capped, so the ceiling never overflows', () => {
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const backoff = new Backoff(500, Number.MAX_VALUE);
    for (let i = 0; i < 100; i += 1) backoff.next();
    expect(backoff.attempts).toBe(30);
    expect(backoff.next()).toBe(500 * 2 ** 30);
  });

  it('reset() starts again from the base; defaults are 500 ms and 30 s', () => {
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const backoff = new Backoff();
    for (let i = 0; i < 10; i += 1) backoff.next();
    expect(backoff.next()).toBe(30_000);
    backoff.reset();
    expect(backoff.attempts).toBe(0);
    expect(backoff.next()).toBe(500);
  });

  it('servedFor(): a connection that stayed up a while caps the next ceiling at about that long; a brief one earns nothing', () => {
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const backoff = new Backoff(500, 30_000);
    for (let i = 0; i < 10; i += 1) backoff.next();
    // Up 3 s after many failures: the next wait is at most 2 s (the largest ceiling not past 3 s), not 30 s.
    backoff.servedFor(3_000);
    expect(backoff.next()).toBe(2_000);
    // Closed at once after the upgrade (shorter than the base): it climbs on.
    backoff.servedFor(100);
    expect(backoff.next()).toBe(4_000);
    // It only ever lowers the count.
    const fresh = new Backoff(500, 30_000);
    fresh.servedFor(60_000);
    expect(fresh.next()).toBe(500);
  });
});

describe('sleep', () => {
  it('resolves after the time', async () => {
    vi.useFakeTimers();
    let done = false;
    void sleep(1_000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
  });

  it('ends early on abort, and at once when already aborted', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    let done = false;
    void sleep(60_000, controller.signal).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(done).toBe(false);
    controller.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    await expect(sleep(60_000, controller.signal)).resolves.toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('removes its abort listener when the time is up', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const remove = vi.spyOn(controller.signal, 'removeEventListener');
    const done = sleep(5, controller.signal);
    await vi.advanceTimersByTimeAsync(5);
    await done;
    expect(remove).toHaveBeenCalledWith('abort', expect.any(Function));
  });
});

describe('closeAction', () => {
  const expected: Record<keyof typeof CLOSE, CloseAction['kind']> = {
    normal: 'backoff',
    goingAway: 'backoff',
    abnormal: 'backoff',
    tooBig: 'backoff',
    serviceRestart: 'backoff',
    chatClosed: 'closed',
    chatDeleted: 'deleted',
    chatSubRemoved: 'rejoin',
    notMember: 'forbidden',
    sessionEnded: 'login',
    slowConsumer: 'backoff',
  };

  it.each(Object.entries(CLOSE) as Array<[keyof typeof CLOSE, number]>)('%s (%i)', (name, code) => {
    const action = closeAction(code);
    expect(action.kind).toBe(expected[name]);
    expect(action.why).toEqual(expect.any(String));
    if (action.kind === 'backoff') expect(action.why).toBe(`closed with ${code}`);
  });

  it('the codes are those of docs/protocol.md', () => {
    expect(CLOSE).toEqual({
      normal: 1000, goingAway: 1001, abnormal: 1006, tooBig: 1009, serviceRestart: 1012,
      chatClosed: 4000, chatDeleted: 4001, chatSubRemoved: 4002, notMember: 4003, sessionEnded: 4004, slowConsumer: 4009,
    });
  });

  it('an unknown code backs off', () => {
    expect(closeAction(4999)).toEqual({ kind: 'backoff', why: 'closed with 4999' });
    expect(closeAction(1011)).toEqual({ kind: 'backoff', why: 'closed with 1011' });
  });
});
