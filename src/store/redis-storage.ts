import { relative, sep } from 'node:path';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { LeaseLostError, type Journal, type Storage } from './storage.js';

/** The lease a unit's writes are fenced by: its key, the exact value it must hold, how long it is provably ours. */
export interface Fence {
  key: string;
  value: string;
  /** How long the lease is still provably held, in ms (0 or less: a write must not go). */
  validForMs(): number;
  /** The unit's fence counter and the lease's time: a lease that expired unseen while Redis was away is taken back (APPLY). */
  counterKey?: string;
  ttlMs?: number;
}

/** What a unit's Redis storage writes with: the connection, the unit's keys and the lease that fences its writes. */
export interface RedisStorageOptions {
  redis: Redis;
  prefix: string;
  unit: string;
  /** state_dir: a store's path is named in Redis by its path relative to it. */
  root: string;
  /** The unit's lease as it is now: read before each batch of writes. */
  fence: () => Fence;
  log: Logger;
  /** Told once when a batch is refused (the lease is another's): the owner stops the unit. */
  onRefused?: () => void;
}

/**
 * Applies one turn's writes, all or none, only while the lease holds exactly the fence's value, and
 * only once: a batch resent after a lost reply (its number not above the unit's last) changes nothing.
 * An op is [kind, key, values]: 'a' appends lines to a list, 'r' replaces a list, 's' sets a string,
 * 'd' deletes the key (and drops it from the unit's keys).
 */
const APPLY = `
local held = redis.call('GET', KEYS[1])
if held ~= ARGV[1] then
  -- Expired while Redis was away, and nobody acquired the unit since (its fence counter still shows our
  -- token): nobody else can have written, so the lease is taken back and the writes go on in order.
  local token = string.match(ARGV[1], '^(%d+):')
  if held == false and token and redis.call('GET', KEYS[4]) == token then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
  else
    return redis.error_reply('FENCED the unit\\'s lease is held by another worker or expired')
  end
end
if tonumber(redis.call('GET', KEYS[3]) or '0') >= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[3], ARGV[2])
local ops = cjson.decode(ARGV[3])
for _, op in ipairs(ops) do
  local key = op[2]
  if op[1] == 'd' then
    redis.call('SREM', KEYS[2], key)
  else
    redis.call('SADD', KEYS[2], key)
  end
  if op[1] ~= 'a' then redis.call('DEL', key) end
  if op[1] == 's' then
    redis.call('SET', key, op[3])
  elseif op[1] ~= 'd' then
    local values = op[3]
    for i = 1, #values, 1000 do redis.call('RPUSH', key, unpack(values, i, math.min(i + 999, #values))) end
  end
end
return #ops`;

type Op = ['a' | 'r', string, string[]] | ['s' | 'd', string, string];
type ApplyCommand = { gwApply(fence: string, keys: string, seq: string, counter: string, fenceValue: string, batch: string, ops: string, ttl: string): Promise<number> };

/**
 * A unit's state in Redis (docs/scale-out.md): read whole when the unit starts, served from memory,
 * written through a batch per event-loop turn that the lease fences. Journals are lists of JSON lines,
 * documents strings, under `<prefix>:state:<unit>:<path relative to state_dir>`.
 */
export class RedisStorage implements Storage {
  readonly kind = 'redis' as const;
  private readonly lists = new Map<string, string[]>();
  private readonly strings = new Map<string, string>();
  private pending: Op[] = [];
  private scheduled = false;
  private last: Promise<void> = Promise.resolve();
  private refused: Error | undefined;
  private seq = 0;
  private readonly redis: Redis & ApplyCommand;

  private constructor(private readonly options: RedisStorageOptions) {
    options.redis.defineCommand('gwApply', { numberOfKeys: 4, lua: APPLY });
    this.redis = options.redis as Redis & ApplyCommand;
  }

  /** Loads every key of the unit (listed in its `_keys` set). */
  static async load(options: RedisStorageOptions): Promise<RedisStorage> {
    const storage = new RedisStorage(options);
    const { redis } = options;
    const keys = await redis.smembers(storage.keysKey);
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.type(key);
    const types = (await pipeline.exec()) ?? [];
    const reads = redis.pipeline();
    keys.forEach((key, index) => {
      if (types[index]?.[1] === 'list') reads.lrange(key, 0, -1);
      else reads.get(key);
    });
    const values = (await reads.exec()) ?? [];
    keys.forEach((key, index) => {
      const value = values[index]?.[1];
      if (Array.isArray(value)) storage.lists.set(key, value as string[]);
      else if (typeof value === 'string') storage.strings.set(key, value);
    });
    storage.seq = Number((await redis.get(storage.seqKey)) ?? 0);
    return storage;
  }

  private get base(): string {
    return `${this.options.prefix}:state:${this.options.unit}:`;
  }

  private get keysKey(): string {
    return `${this.base}_keys`;
  }

  private get seqKey(): string {
    return `${this.base}_seq`;
  }

  private keyOf(path: string): string {
    return this.base + relative(this.options.root, path).split(sep).join('/');
  }

  readText(path: string): string {
    const lines = this.lists.get(this.keyOf(path));
    return lines && lines.length > 0 ? `${lines.join('\n')}\n` : '';
  }

  forEachLine(path: string, what: string, visit: (entry: unknown, handle: number) => void): { lines: number; complete: boolean } {
    const key = this.keyOf(path);
    const lines = this.lists.get(key) ?? [];
    lines.forEach((line, index) => {
      let entry: unknown;
      try {
        entry = JSON.parse(line);
      } catch (error) {
        throw new Error(`${key}: unreadable ${what} at line ${index + 1} (${(error as Error).message})`);
      }
      visit(entry, index);
    });
    // A list's entries are whole: nothing is ever cut short.
    return { lines: lines.length, complete: true };
  }

  readLine(path: string, handle: number): string {
    const line = this.lists.get(this.keyOf(path))?.[handle];
    if (line === undefined) throw new Error(`${this.keyOf(path)}: no line ${handle}`);
    return line;
  }

  journal(path: string, entries: readonly unknown[]): Journal {
    const journal = this.resume(path, 0);
    journal.rewrite(entries);
    return journal;
  }

  resume(path: string, lines: number): Journal {
    const key = this.keyOf(path);
    let count = lines;
    const storage = this;
    return {
      get lines() {
        return count;
      },
      append(entry) {
        this.appendLine(entry);
      },
      appendLine(entry) {
        const line = JSON.stringify(entry);
        const list = storage.lists.get(key) ?? storage.lists.set(key, []).get(key)!;
        list.push(line);
        storage.write('a', key, [line]);
        count += 1;
        return list.length - 1;
      },
      readLine: (handle) => storage.readLine(path, handle),
      withLines(use) {
        return use((handle) => this.readLine(handle));
      },
      rewrite(all) {
        this.rewriteTexts(all.map((entry) => JSON.stringify(entry)));
      },
      rewriteTexts(texts, placed) {
        const lines = [...texts];
        lines.forEach((_, index) => placed?.(index));
        storage.lists.set(key, [...lines]);
        storage.write('r', key, lines);
        count = lines.length;
      },
    };
  }

  readDocument<T>(path: string, fallback: T, what: string): T {
    const text = this.strings.get(this.keyOf(path));
    if (text === undefined) return fallback;
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new Error(`${this.keyOf(path)}: unreadable ${what} (${(error as Error).message})`);
    }
  }

  writeDocument(path: string, value: unknown): void {
    const key = this.keyOf(path);
    const text = JSON.stringify(value);
    this.strings.set(key, text);
    this.write('s', key, text);
  }

  remove(path: string): void {
    const key = this.keyOf(path);
    // Only what the unit has: every key was read at load, so an unknown one is not in Redis either.
    if (!this.strings.delete(key) && !this.lists.delete(key)) return;
    this.write('d', key, '');
  }

  private write(kind: 'a' | 'r' | 's' | 'd', key: string, value: string[] | string): void {
    if (this.refused) throw this.refused;
    const previous = this.pending.at(-1);
    // Consecutive appends to one list (a cursor per message) go as one op.
    if (kind === 'a' && previous && previous[0] === 'a' && previous[1] === key) previous[2].push(...(value as string[]));
    else if (kind === 's' || kind === 'd') {
      // A document set twice in one turn: only the last counts (the batch is applied whole anyway).
      this.pending = this.pending.filter((op) => !(op[0] === 's' && op[1] === key));
      this.pending.push([kind, key, value as string]);
    } else this.pending.push([kind, key, [...(value as string[])]] as Op);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.send());
    }
  }

  /** Sends what this turn wrote as one fenced batch; batches go in order on one connection. */
  private send(): Promise<void> {
    this.scheduled = false;
    if (this.pending.length === 0) return this.last;
    const ops = this.pending;
    this.pending = [];
    const fence = this.options.fence();
    this.seq += 1;
    const sent = this.redis.gwApply(fence.key, this.keysKey, this.seqKey, fence.counterKey ?? `${fence.key}:none`, fence.value, String(this.seq), JSON.stringify(ops), String(fence.ttlMs ?? 0)).then(() => undefined, (error: Error) => {
      if (!this.refused) {
        this.refused = new LeaseLostError(`unit ${this.options.unit}: a state write was refused (${error.message}); the unit's lease is no longer this worker's`);
        this.options.log.error({ unit: this.options.unit, err: { message: error.message } }, 'state write refused: the lease is lost; nothing more is written or done for this unit');
        this.options.onRefused?.();
      }
      throw this.refused;
    });
    // Each batch's own outcome; the next one does not wait for it (order is kept by the connection).
    this.last = this.last.catch(() => undefined).then(() => sent);
    // A batch nobody awaits must not fail as an unhandled rejection: its refusal is kept in `refused`.
    this.last.catch(() => undefined);
    return this.last;
  }

  durable(): Promise<void> {
    if (this.refused) return Promise.reject(this.refused);
    return this.withinLease(this.send());
  }

  /** Every write sent and acknowledged (or the refusal), within what is left of the lease. */
  close(): Promise<void> {
    return this.durable();
  }

  /**
   * The acknowledgement, if it comes while the lease is provably ours: with Redis away, writes wait in
   * the connection's queue, and a unit being stopped must not wait past its lease for them.
   */
  private withinLease(acknowledged: Promise<void>): Promise<void> {
    const left = this.options.fence().validForMs();
    const lost = () => new LeaseLostError(`unit ${this.options.unit}: its lease cannot be proved valid any more`);
    if (left <= 0) return Promise.reject(lost());
    let timer: NodeJS.Timeout | undefined;
    const expiry = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(lost()), left);
    });
    // Checked again at the answer: a process paused past its lease (SIGSTOP, a frozen VM) may find
    // both the answer and the timer due when it wakes, and must not take the answer.
    return Promise.race([acknowledged, expiry]).finally(() => clearTimeout(timer)).then(() => {
      if (this.options.fence().validForMs() <= 0) throw lost();
    });
  }
}
