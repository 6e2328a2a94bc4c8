import { AtomicJsonFile } from './atomic-file.js';
import type { Storage } from './storage.js';

/** Where a store's changes go: a coalesced file (the default), or a storage's document (Redis: one write a turn). */
interface KeyValueSink {
  scheduleWrite(snapshot: () => Record<string, unknown>): void;
  flush(): Promise<void>;
}

/**
 * A small durable key-value store (one per plugin and bot): values are JSON, kept in memory and
 * written atomically to disk shortly after each change and on close.
 */
export class KeyValueStore {
  private data: Record<string, unknown> = {};

  private constructor(private readonly file: KeyValueSink) {}

  /** Opens the store kept at `path` (empty when missing), in files or in the given storage (Redis with coordination). */
  static async open(path: string, storage?: Storage): Promise<KeyValueStore> {
    if (storage && storage.kind !== 'files') {
      const store = new KeyValueStore({
        scheduleWrite: (snapshot) => storage.writeDocument(path, snapshot()),
        // Nothing to wait for: the write is in this turn's batch, applied in order with what follows it
        // and made durable by the barrier before any effect. Waiting here would split a mark and the post
        // it guards (the responder's answered mark, then its reply) into two batches, and a lease lost
        // between them would lose the answer; in one batch they land together or not at all.
        flush: () => Promise.resolve(),
      });
      store.data = storage.readDocument<Record<string, unknown>>(path, {}, 'key-value store');
      return store;
    }
    const file = new AtomicJsonFile<Record<string, unknown>>(path);
    const store = new KeyValueStore(file);
    store.data = (await file.read()) ?? {};
    return store;
  }

  /** An in-memory store (for tests and `groupwire check`). */
  static memory(): KeyValueStore {
    return new KeyValueStore(new AtomicJsonFile<Record<string, unknown>>(undefined));
  }

  /** The value of a key as last set (the type parameter is the caller's promise, not checked). */
  get<T = unknown>(key: string): T | undefined {
    return this.data[key] as T | undefined;
  }

  /** Sets a key to a JSON value; written shortly after (flush() waits for it). */
  set(key: string, value: unknown): void {
    this.data[key] = value;
    this.file.scheduleWrite(() => this.data);
  }

  /** Removes a key; written as set() is. */
  delete(key: string): void {
    delete this.data[key];
    this.file.scheduleWrite(() => this.data);
  }

  /** Every key, in the order they were first set. */
  keys(): string[] {
    return Object.keys(this.data);
  }

  /** Resolves once every change so far is durable. */
  flush(): Promise<void> {
    return this.file.flush();
  }
}
