import type { Logger } from 'pino';
import { failureFields } from '../api/failure-fields.js';

/** Exponential backoff with full jitter: each wait is random between 0 and a ceiling that doubles. */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly baseMs = 500,
    private readonly maxMs = 30_000,
  ) {}

  /** The next wait, in ms. The first one is at most `baseMs`, so a blip is over in a moment. */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.baseMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.random() * ceiling;
  }

  /** Back to the first, short wait: call it once a connection has proved stable. */
  reset(): void {
    this.attempt = 0;
  }

  /**
   * A connection stayed up `upMs` before it dropped: the next ceiling is at most that long. Without
   * this, a socket dropped every few seconds (short of the stable time that resets the count) climbed
   * to the maximum and then waited up to 30 s after each drop, though every connection had worked (the
   * chaos suite found it). One shorter than the base earns nothing, so a socket that is closed at once
   * after each upgrade still backs off all the way.
   */
  servedFor(upMs: number): void {
    if (upMs < this.baseMs) return;
    this.attempt = Math.min(this.attempt, Math.floor(Math.log2(upMs / this.baseMs)));
  }

  /** How many waits were given since the last reset (capped at 30): for logging a retry's number. */
  get attempts(): number {
    return this.attempt;
  }
}

/** setTimeout as a promise; an abort ends the wait early (resolving, so stop paths stay simple). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Tries `attempt` until it works or `stopped()` says to give up (then undefined), waiting a Backoff
 * (0.5 s doubling to 30 s) between tries, each failure logged at warn with what could not be done.
 */
export async function retryUntilStopped<T>(log: Logger, what: string, attempt: () => Promise<T>, stopped: () => boolean): Promise<T | undefined> {
  const backoff = new Backoff(500, 30_000);
  while (!stopped()) {
    try {
      return await attempt();
    } catch (error) {
      const delay = backoff.next();
      log.warn({ ...failureFields(error), delayMs: Math.round(delay) }, `could not ${what}; trying again`);
      await sleep(delay);
    }
  }
  return undefined;
}
