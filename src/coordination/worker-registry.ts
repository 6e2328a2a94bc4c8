import type { Redis } from 'ioredis';

export interface WorkerInfo {
  id: string;
  pid?: number;
  host?: string;
  opsUrl?: string;
  startedAt?: string;
  [key: string]: unknown;
}

/**
 * The live workers: each has a key `<prefix>:worker:<id>` (its meta, as JSON) that expires unless its
 * heartbeat renews it, and its id in the set `<prefix>:workers`. Expiry is Redis's own clock, so the
 * workers' clocks need not agree; an id whose key expired is taken out of the set by whoever reads.
 */
export class WorkerRegistry {
  private readonly startedAt = new Date().toISOString();

  constructor(private readonly redis: Redis, private readonly prefix: string, private readonly id: string, private readonly ttlMs: number) {}

  private keyOf(id: string): string {
    return `${this.prefix}:worker:${id}`;
  }

  async heartbeat(meta: Record<string, unknown>): Promise<void> {
    await this.redis.multi()
      .set(this.keyOf(this.id), JSON.stringify({ ...meta, id: this.id, startedAt: this.startedAt }), 'PX', this.ttlMs)
      .sadd(`${this.prefix}:workers`, this.id)
      .exec();
  }

  async live(): Promise<WorkerInfo[]> {
    const ids = (await this.redis.smembers(`${this.prefix}:workers`)).sort();
    if (ids.length === 0) return [];
    const values = await this.redis.mget(...ids.map((id) => this.keyOf(id)));
    const gone = ids.filter((_, index) => !values[index]);
    if (gone.length > 0) await this.redis.srem(`${this.prefix}:workers`, ...gone);
    return values.flatMap((value) => {
      if (!value) return [];
      try {
        return [JSON.parse(value) as WorkerInfo];
      } catch {
        return [];
      }
    });
  }

  async leave(): Promise<void> {
    await this.redis.multi().del(this.keyOf(this.id)).srem(`${this.prefix}:workers`, this.id).exec();
  }
}
