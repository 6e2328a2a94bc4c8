/** Small timing tools of the relay: an abortable sleep, a wake-up signal, backoff with jitter, a token bucket. */

// The supervisor's abortable sleep (resolves early, never rejects, when the signal aborts).
import { sleep } from '../../src/index.js';

export { sleep };

/** Lets a loop sleep until something changed: `notify()` wakes every `wait()` in progress. */
export class Wakeup {
  private waiters: Array<() => void> = [];

  notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves on the next notify(), after `timeoutMs`, or when `signal` is aborted. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.push(done);
    });
  }
}

/**
 * Exponential backoff with jitter: the n-th wait is random between half and all of min·2ⁿ, capped at
 * max. The first retry comes within `minMs`.
 */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
  ) {}

  next(): number {
    const ceiling = Math.min(this.maxMs, this.minMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  reset(): void {
    this.attempt = 0;
  }
}

/** What paces the commands the relay sends: take() resolves true when one may go, false when `signal` was aborted first. */
export interface Pacer {
  take(signal?: AbortSignal): Promise<boolean>;
  /** Takes a token now if one is free and nobody waits (true), without waiting; a pacer without it never does. */
  takeNow?(): boolean;
}

/** `rate: off`: every command may go at once. */
export const UNPACED: Pacer = {
  take: (signal) => Promise.resolve(!signal?.aborted),
  takeNow: () => true,
};

/**
 * A token bucket: `burst` commands at once, then `perSecond`. Takers are served in turn, so two loops
 * sharing it (lines and joins) never exceed it together.
 */
export class TokenBucket implements Pacer {
  private tokens: number;
  private updated = performance.now();
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  /** Resolves true once a token was taken, false when `signal` was aborted first. */
  take(signal?: AbortSignal): Promise<boolean> {
    const mine = this.turn.then(() => this.waitForToken(signal));
    this.turn = mine;
    return mine;
  }

  /** Tokens available now (for stats). */
  get available(): number {
    this.refill();
    return Math.floor(this.tokens);
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.updated) / 1000) * this.perSecond);
    this.updated = now;
  }

  private async waitForToken(signal?: AbortSignal): Promise<boolean> {
    for (;;) {
      if (signal?.aborted) return false;
      this.refill();
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return true;
      }
      await sleep(Math.max(1, ((1 - this.tokens) / this.perSecond) * 1000), signal);
    }
  }
}
