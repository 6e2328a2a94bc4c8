// The supervisor's abortable sleep (resolves early, never rejects, when the signal aborts).
export { sleep } from '../../src/index.js';

/** Exponential backoff with equal jitter: between half and all of min(cap, base·2^attempt). */
export function backoff(attempt: number, baseMs: number, capMs: number): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Wakes a worker loop: `wait()` resolves on the next `poke()` (or one that came since the last wait), or on abort. */
export class Wakeup {
  private pending = false;
  private resolve: (() => void) | undefined;

  poke(): void {
    this.pending = true;
    this.resolve?.();
  }

  wait(signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        this.resolve = undefined;
        this.pending = false;
        resolve();
      };
      this.resolve = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

/** `promise`, or undefined once `ms` have passed (its timer cleared either way). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}
