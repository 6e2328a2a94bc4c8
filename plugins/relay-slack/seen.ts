import { RecentIdsFile, type KeyValueStore, type Storage } from '../../src/index.js';

/** Where versions before #32 kept the list, in the plugin's key-value store (read once, then removed). */
const STORE_KEY = 'seen';

/**
 * The Slack events already taken in, by event_id and by channel+ts: a bounded list, oldest first out
 * (`seen-events.json`, a journal: see RecentIdsFile), so a Slack retry (same event_id) or the same
 * message delivered on a second connection (same channel and ts) is taken once, across reconnects and
 * restarts.
 */
export class SeenEvents {
  private constructor(private readonly ids: RecentIdsFile) {}

  static open(path: string, store: KeyValueStore, storage?: Storage, max = 5_000): SeenEvents {
    const earlier = store.get<string[]>(STORE_KEY) ?? [];
    const seen = new SeenEvents(RecentIdsFile.open(path, max, storage, earlier));
    if (store.get(STORE_KEY) !== undefined) store.delete(STORE_KEY);
    return seen;
  }

  /** True when any of `keys` was seen. */
  has(...keys: string[]): boolean {
    return keys.some((key) => this.ids.has(key));
  }

  add(...keys: string[]): void {
    for (const key of keys) this.ids.add(key);
  }

  get size(): number {
    return this.ids.size;
  }
}
