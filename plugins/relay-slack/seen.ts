import type { KeyValueStore } from '../../src/index.js';

/**
 * The Slack events already taken in, by event_id and by channel+ts: a bounded, least-recently-added
 * list kept in the plugin's store, so a Slack retry (same event_id) or the same message delivered on a
 * second connection (same channel and ts) is taken once, across reconnects and restarts.
 */
export class SeenEvents {
  private readonly keys: Set<string>;

  constructor(
    private readonly store: KeyValueStore,
    private readonly max = 5_000,
    private readonly storeKey = 'seen',
  ) {
    this.keys = new Set(store.get<string[]>(storeKey) ?? []);
  }

  /** True when any of `keys` was seen. */
  has(...keys: string[]): boolean {
    return keys.some((key) => this.keys.has(key));
  }

  add(...keys: string[]): void {
    for (const key of keys) {
      this.keys.delete(key);
      this.keys.add(key);
    }
    while (this.keys.size > this.max) this.keys.delete(this.keys.values().next().value!);
    this.store.set(this.storeKey, [...this.keys]);
  }

  get size(): number {
    return this.keys.size;
  }
}
