import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableQueue, QueueDrain, type DrainOutcome } from '../src/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function openQueue(): { queue: DurableQueue<string>; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'queue-drain-'));
  dirs.push(dir);
  const path = join(dir, 'queue.json');
  return { queue: DurableQueue.open<string>(path), path };
}

/** A promise and the function that resolves it. */
function signal<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** A send answering these outcomes in turn, calling `finished` with the last. */
function scripted(outcomes: DrainOutcome[], finished: () => void): () => Promise<DrainOutcome> {
  return async () => {
    const outcome = outcomes.shift()!;
    if (outcomes.length === 0) finished();
    return outcome;
  };
}

/** A pause that only notes its length. */
function recorded(pauses: number[]): (ms: number) => Promise<void> {
  return async (ms) => {
    pauses.push(ms);
  };
}

describe('QueueDrain', () => {
  it('sends in order, one at a time, and takes each item from the durable queue once done', async () => {
    const { queue, path } = openQueue();
    const sent: string[] = [];
    let inFlight = 0;
    let most = 0;
    const finished = signal();
    const drain = new QueueDrain(queue, {
      send: async (item) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        sent.push(item);
        await new Promise((done) => setImmediate(done));
        inFlight -= 1;
        if (item === 'c') finished.resolve();
        return 'done';
      },
      onRetry: () => {},
    });
    drain.push('a');
    drain.push('b');
    drain.push('c');
    drain.start();
    await finished.promise;
    await drain.stop();
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(most).toBe(1);
    expect(DurableQueue.read<string>(path)).toEqual([]);
  });

  it('pauses longer after each retry, up to the maximum, and starts over after a success', async () => {
    const { queue } = openQueue();
    const outcomes: DrainOutcome[] = ['retry', 'retry', 'retry', 'retry', 'done', 'retry', 'done'];
    const pauses: number[] = [];
    const retried: Array<[string, number]> = [];
    const finished = signal();
    const drain = new QueueDrain(queue, {
      send: scripted(outcomes, finished.resolve),
      onRetry: (item, waitMs) => retried.push([item, waitMs]),
      retryMinMs: 100,
      retryMaxMs: 500,
      sleep: recorded(pauses),
    });
    drain.push('a');
    drain.push('b');
    drain.start();
    await finished.promise;
    await drain.stop();
    expect(pauses).toEqual([100, 200, 400, 500, 100]);
    expect(retried).toEqual([['a', 100], ['a', 200], ['a', 400], ['a', 500], ['b', 100]]);
    expect(queue.size).toBe(0);
  });

  it('waits what a numeric outcome says: exactly (the pause kept) or at least (the pause grows)', async () => {
    for (const [retryAfter, expected] of [['exactly', [50, 100, 200]], ['at-least', [100, 2000, 400]]] as const) {
      const { queue } = openQueue();
      const outcomes: DrainOutcome[] = [50, 'retry', 'retry', 'done'];
      if (retryAfter === 'at-least') outcomes.splice(0, 3, 'retry', 2000, 'retry');
      const pauses: number[] = [];
      const finished = signal();
      const drain = new QueueDrain(queue, {
        send: scripted(outcomes, finished.resolve),
        onRetry: () => {},
        retryMinMs: 100,
        retryMaxMs: 10_000,
        retryAfter,
        sleep: recorded(pauses),
      });
      drain.push('a');
      drain.start();
      await finished.promise;
      await drain.stop();
      expect(pauses).toEqual(expected);
    }
  });

  it("'next' goes on to the new head at once, the pause as it is; a 'done' for an item the relay took shifts nothing more", async () => {
    const { queue } = openQueue();
    const pauses: number[] = [];
    const sent: string[] = [];
    const finished = signal();
    const drain = new QueueDrain(queue, {
      send: async (item) => {
        sent.push(item);
        if (item === 'a' && sent.length === 1) return 'retry';
        if (item === 'a' || item === 'c') {
          // The relay takes it itself (a drop, a confirmation of its own).
          queue.shift();
          return item === 'a' ? 'next' : 'done';
        }
        if (item === 'd') finished.resolve();
        return item === 'b' && pauses.length === 1 ? 'retry' : 'done';
      },
      onRetry: () => {},
      retryMinMs: 100,
      sleep: recorded(pauses),
    });
    drain.push('a');
    drain.push('b');
    drain.push('c');
    drain.push('d');
    drain.start();
    await finished.promise;
    await drain.stop();
    expect(sent).toEqual(['a', 'a', 'b', 'b', 'c', 'd']);
    expect(pauses).toEqual([100, 200]);
    expect(queue.size).toBe(0);
  });

  it('stops promptly during a pause, and sends nothing more', async () => {
    const { queue } = openQueue();
    let sends = 0;
    const retried = signal();
    const drain = new QueueDrain(queue, {
      send: async () => {
        sends += 1;
        return 'retry';
      },
      onRetry: () => retried.resolve(),
      // An hour: the test finishes only because stop() ends the pause.
      retryMinMs: 3_600_000,
    });
    drain.push('a');
    drain.start();
    await retried.promise;
    await drain.stop();
    drain.push('b');
    await new Promise((done) => setImmediate(done));
    expect(sends).toBe(1);
    expect(queue.all()).toEqual(['a', 'b']);
  });

  it('a push wakes an idle drain; a head not ready waits for wake()', async () => {
    const { queue } = openQueue();
    const sent: string[] = [];
    let ready = false;
    let next = signal<string>();
    const drain = new QueueDrain(queue, {
      send: async (item) => {
        sent.push(item);
        next.resolve(item);
        return 'done';
      },
      onRetry: () => {},
      ready: (item) => item !== 'held' || ready,
    });
    drain.start();
    await new Promise((done) => setImmediate(done));
    drain.push('first');
    expect(await next.promise).toBe('first');
    next = signal<string>();
    drain.push('held');
    await new Promise((done) => setImmediate(done));
    expect(sent).toEqual(['first']);
    ready = true;
    drain.wake();
    expect(await next.promise).toBe('held');
    await drain.stop();
  });

  it('gives each attempt its own signal when asked, aborted by stop', async () => {
    const { queue } = openQueue();
    const signals: AbortSignal[] = [];
    const second = signal();
    const drain = new QueueDrain(queue, {
      send: async (_item, attemptSignal) => {
        signals.push(attemptSignal);
        if (signals.length === 1) return 'retry';
        second.resolve();
        await new Promise((done) => attemptSignal.addEventListener('abort', done, { once: true }));
        return 'stop';
      },
      onRetry: () => {},
      signalPerAttempt: true,
      sleep: async () => {},
    });
    drain.push('a');
    drain.start();
    await second.promise;
    await drain.stop();
    expect(signals[0]).not.toBe(signals[1]);
    expect(signals[0]!.aborted).toBe(false);
    expect(signals[1]!.aborted).toBe(true);
    expect(queue.all()).toEqual(['a']);
  });
});
