import { DurableQueue, type Storage } from '../../src/index.js';

/** A POST's first answer, replayed to the same client sending the same Idempotency-Key again. */
export interface Remembered {
  client: string;
  key: string;
  /** When it was answered (ms since the epoch): it is kept for the TTL from then. */
  at: number;
  status: number;
  body: unknown;
}

/** At most this many answers are kept (a client past it gets 503 until older ones expire). */
const MAX_KEPT = 1_000_000;

/**
 * Idempotency keys and their first answers, kept durably for `ttlMs`. Every answer lives as long as
 * the next, so the journal is a FIFO queue (a DurableQueue): expired answers leave from its front.
 */
export class IdempotencyKeys {
  private readonly index = new Map<string, Remembered>();

  private constructor(
    private readonly queue: DurableQueue<Remembered>,
    private readonly ttlMs: number,
  ) {
    for (const entry of queue.all()) this.index.set(IdempotencyKeys.id(entry.client, entry.key), entry);
  }

  static open(path: string, storage: Storage, ttlMs: number): IdempotencyKeys {
    return new IdempotencyKeys(DurableQueue.open<Remembered>(path, { storage, maxItems: MAX_KEPT, window: Number.POSITIVE_INFINITY }), ttlMs);
  }

  private static id(client: string, key: string): string {
    return `${client}\u0000${key}`;
  }

  get size(): number {
    return this.queue.size;
  }

  find(client: string, key: string, now = Date.now()): Remembered | undefined {
    this.expire(now);
    return this.index.get(IdempotencyKeys.id(client, key));
  }

  /** Keeps an answer (written before this returns); throws QueueFullError when too many are kept. */
  remember(entry: Remembered): void {
    this.expire(entry.at);
    const id = IdempotencyKeys.id(entry.client, entry.key);
    if (this.index.has(id)) return;
    this.queue.push(entry);
    this.index.set(id, entry);
  }

  private expire(now: number): void {
    let count = 0;
    for (const entry of this.queue.values()) {
      if (now - entry.at < this.ttlMs) break;
      count += 1;
    }
    if (count === 0) return;
    for (const gone of this.queue.shift(count)) {
      const id = IdempotencyKeys.id(gone.client, gone.key);
      if (this.index.get(id) === gone) this.index.delete(id);
    }
  }
}
