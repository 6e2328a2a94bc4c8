import { sleep } from '../chat/backoff.js';
import type { DurableQueue, QueueBacklog } from '../store/durable-queue.js';

/**
 * What became of one attempt at the head item: 'done' (delivered, or given up for good: it leaves the
 * queue), 'retry' (tried again after the growing pause), a number (tried again after so many ms: the
 * platform's Retry-After), 'next' (the relay took it from the queue itself, say dropped: on to the new
 * head at once, the pause as it is), or 'stop' (the drain ends).
 */
export type DrainOutcome = 'done' | 'retry' | 'next' | 'stop' | number;

/** How a QueueDrain sends the head item and paces its retries. */
export interface QueueDrainOptions<T> {
  /** One attempt at the head item. The signal aborts when the drain is stopped. */
  send: (item: T, signal: AbortSignal) => Promise<DrainOutcome>;
  /** Called before each pause for a 'retry' or a number (count it, log it), with the pause's length. */
  onRetry: (item: T, waitMs: number) => void;
  /** The pause after a first 'retry' (default 500 ms), doubling up to retryMaxMs (default 30 s); back to this after a 'done'. */
  retryMinMs?: number;
  retryMaxMs?: number;
  /**
   * A number outcome: 'exactly' waits that long and leaves the growing pause as it is; 'at-least' waits
   * that long or the growing pause, whichever is longer, and the pause grows as for a 'retry'.
   */
  retryAfter?: 'exactly' | 'at-least';
  /** Gives each attempt a signal of its own, linked to the stop and unlinked after the attempt. */
  signalPerAttempt?: boolean;
  /** The note the queue's shift of a delivered item sets (DurableQueue.shift): undefined leaves it. */
  shiftNote?: () => unknown;
  /** A head that may not go yet waits, like an empty queue, for the next wake(). */
  ready?: (item: T) => boolean;
  /** The pause itself (tests); an abort must end it. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * A relay's outbound loop over a durable queue: the head item is sent, one at a time (so the order
 * holds through retries), and leaves the queue only once its attempt says 'done'. A push wakes an idle
 * drain; stop() ends it (nothing is sent after it) and waits for the attempt under way.
 */
export class QueueDrain<T> {
  private poke: () => void = () => {};
  private running: Promise<void> | undefined;
  private readonly stopper = new AbortController();

  constructor(
    private readonly queue: DurableQueue<T>,
    private readonly options: QueueDrainOptions<T>,
  ) {}

  /** Items waiting in the queue, the one being sent included. */
  get size(): number {
    return this.queue.size;
  }

  /** The queue's backlog (depth, oldest, pushed and taken), in O(1): a relay's PluginStatus.backlogs. */
  get backlog(): QueueBacklog {
    return this.queue.backlog;
  }

  /** Queues an item (written before this returns) and wakes the drain. */
  push(item: T): void {
    this.queue.push(item);
    this.wake();
  }

  /** Wakes a drain waiting on an empty queue or on a head that was not ready. */
  wake(): void {
    this.poke();
  }

  /** Starts the loop (once: a second call does nothing); items already queued go first. */
  start(): void {
    this.running ??= this.loop();
  }

  /** Ends the loop: the attempt under way is aborted and awaited, nothing is sent after; the queue keeps what is left. */
  async stop(): Promise<void> {
    this.stopper.abort();
    this.wake();
    await this.running;
  }

  private async loop(): Promise<void> {
    const signal = this.stopper.signal;
    const { retryMinMs = 500, retryMaxMs = 30_000, retryAfter = 'exactly' } = this.options;
    const pause = this.options.sleep ?? sleep;
    let attempts = 0;
    while (!signal.aborted) {
      const item = this.queue.peek();
      if (item === undefined || this.options.ready?.(item) === false) {
        await new Promise<void>((done) => {
          this.poke = done;
        });
        continue;
      }
      const outcome = await this.attempt(item, signal);
      if (outcome === 'stop') return;
      if (outcome === 'next') continue;
      if (outcome === 'done') {
        // The relay may have taken it already (a platform that confirms delivery on its own).
        if (this.queue.peek() === item) this.queue.shift(1, this.options.shiftNote?.());
        attempts = 0;
        continue;
      }
      const growing = Math.min(retryMaxMs, retryMinMs * 2 ** Math.min(attempts, 30));
      let waitMs = growing;
      if (typeof outcome === 'number') waitMs = retryAfter === 'exactly' ? outcome : Math.max(outcome, growing);
      if (typeof outcome !== 'number' || retryAfter === 'at-least') attempts += 1;
      this.options.onRetry(item, waitMs);
      await pause(waitMs, signal);
    }
  }

  private async attempt(item: T, signal: AbortSignal): Promise<DrainOutcome> {
    if (!this.options.signalPerAttempt) return await this.options.send(item, signal);
    const attempt = new AbortController();
    const abort = () => attempt.abort();
    signal.addEventListener('abort', abort, { once: true });
    return await this.options.send(item, attempt.signal).finally(() => signal.removeEventListener('abort', abort));
  }
}
