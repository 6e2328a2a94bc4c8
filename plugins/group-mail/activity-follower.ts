import type { Logger } from 'pino';
import type { ActivityLogEntry, GroupsClient, KeyValueStore } from '../../src/index.js';

/** Where one activity family was read up to: the newest `created` handed on and the ids seen at that time. */
interface ActivityCursor {
  created: string;
  ids: string[];
}

const time = (iso: string) => Date.parse(iso) || 0;

/**
 * Follows a group's activity log (one `filter_by` family, e.g. `mod`) the way ArchiveFollower follows its
 * messages, by time and id (activity ids are opaque and entries have no number): newest first until the
 * position, handed on oldest first, the position written after each entry. The first start begins at
 * the newest entry.
 */
export class ActivityFollower {
  constructor(
    private readonly group: string,
    private readonly family: 'member' | 'message' | 'mod' | 'pay',
    private readonly deps: {
      client: GroupsClient;
      store: KeyValueStore;
      log: Logger;
      hand: (entry: ActivityLogEntry) => Promise<void>;
    },
  ) {}

  private get key(): string {
    return `activity:${this.group}:${this.family}`;
  }

  async poll(signal: AbortSignal): Promise<number> {
    const cursor = this.deps.store.get<ActivityCursor>(this.key);
    const fresh = new Map<string, ActivityLogEntry>();
    const params = { group_name: this.group, filter_by: this.family, sort_field: 'created', sort_dir: 'desc', limit: cursor ? 100 : 1 } as const;
    for await (const page of this.deps.client.paginate<ActivityLogEntry>('getactivitylog', params).pages()) {
      if (!cursor) {
        const newest = page.data[0];
        this.deps.store.set(this.key, newest ? { created: newest.created, ids: [newest.id] } : { created: '', ids: [] });
        await this.deps.store.flush();
        return 0;
      }
      let reached = false;
      for (const entry of page.data) {
        const created = time(entry.created);
        if (created > time(cursor.created) || (created === time(cursor.created) && !cursor.ids.includes(entry.id))) fresh.set(entry.id, entry);
        else reached = true;
      }
      if (reached || signal.aborted) break;
    }
    const ordered = [...fresh.values()].sort((a, b) => time(a.created) - time(b.created));
    for (const entry of ordered) {
      if (signal.aborted) break;
      await this.deps.hand(entry);
      const now = this.deps.store.get<ActivityCursor>(this.key)!;
      this.deps.store.set(this.key, time(entry.created) > time(now.created)
        ? { created: entry.created, ids: [entry.id] }
        : { created: now.created, ids: [...now.ids, entry.id].slice(-100) });
    }
    await this.deps.store.flush();
    return ordered.length;
  }
}
