import type { DurableQueue, QueueBacklog } from '../../src/index.js';
import { Wakeup } from './timing.js';

/**
 * One direction of the relay: a durable queue and a worker that takes its items oldest first, one
 * at a time, sleeping while the queue is empty. Subclasses say what handling an item means.
 */
export abstract class QueueWorker<T> {
  private readonly wakeup = new Wakeup();
  private readonly stopper = new AbortController();
  private running: Promise<void> | undefined;

  constructor(protected readonly queue: DurableQueue<T>) {}

  get size(): number {
    return this.queue.size;
  }

  get backlog(): QueueBacklog {
    return this.queue.backlog;
  }

  /** Aborted by stop(), for waits inside work(). */
  protected get stopSignal(): AbortSignal {
    return this.stopper.signal;
  }

  /** Queues durably (before returning) and wakes the worker. Throws QueueFullError when full. */
  push(item: T): void {
    this.queue.push(item);
    this.wakeup.poke();
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Stops after the item in hand, if any; what is queued stays for the next start. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.running;
  }

  /**
   * Handles the oldest item: takes it off the queue when done with it, or leaves it for another try
   * (after waiting as it sees fit). Answers false to stop the worker for good.
   */
  protected abstract work(item: T, signal: AbortSignal): Promise<boolean>;

  private async loop(): Promise<void> {
    const signal = this.stopper.signal;
    while (!signal.aborted) {
      const item = this.queue.peek();
      if (!item) {
        await this.wakeup.wait(signal);
        continue;
      }
      if (!(await this.work(item, signal))) return;
    }
  }
}
