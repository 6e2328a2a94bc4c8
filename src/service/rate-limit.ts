import type { Clock } from './clock.js';

/** The local service's per-caller request rate (docs/protocol.md "Rate limits"): a token bucket's rate and burst. */
export interface RateLimitConfig {
  /** Sustained requests per second per caller. */
  perSecond: number;
  /** How many may come at once before the sustained rate applies. */
  burst: number;
}

interface Bucket {
  tokens: number;
  updated: number;
}

/**
 * The most callers a limiter remembers at once. Keys are short (a user id, an address, a hash), so
 * this bounds its memory to a few MB, whatever an unauthenticated caller sends.
 */
export const MAX_LIMITER_ENTRIES = 50_000;

/**
 * A token bucket per caller key. `take` answers 0 when allowed, else the seconds until it would be.
 *
 * The table stays bounded: a bucket that has filled up again is the same as no bucket at all, so idle
 * ones are dropped as calls come in; past `maxEntries` the one used longest ago goes (its caller starts
 * afresh, which only the oldest, quietest callers can notice).
 */
export class RateLimiter {
  // Kept in the order of last use (a used bucket is moved to the end), so the idle ones are first.
  private readonly buckets = new Map<string, Bucket>();
  refused = 0;

  constructor(
    private readonly clock: Clock,
    public config: RateLimitConfig | null,
    private readonly maxEntries = MAX_LIMITER_ENTRIES,
  ) {}

  /** How many callers are remembered now. */
  get size(): number {
    return this.buckets.size;
  }

  /** The keys remembered now, least recently used first. */
  keys(): IterableIterator<string> {
    return this.buckets.keys();
  }

  /** Spends one token of `key`: 0 when allowed, else the seconds until a token is there (nothing spent). */
  take(key: string): number {
    const config = this.config;
    if (!config) return 0;
    const bucket = this.refill(key, config);
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    this.evict(config);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    this.refused += 1;
    return (1 - bucket.tokens) / config.perSecond;
  }

  /** Like `take`, without spending: the seconds until `key` may go on, 0 when it may now. */
  wait(key: string): number {
    const config = this.config;
    if (!config) return 0;
    const bucket = this.refill(key, config);
    return bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) / config.perSecond;
  }

  private refill(key: string, config: RateLimitConfig): Bucket {
    const now = this.clock.now();
    const bucket = this.buckets.get(key);
    if (!bucket) return { tokens: config.burst, updated: now };
    bucket.tokens = Math.min(config.burst, bucket.tokens + (Math.max(0, now - bucket.updated) / 1000) * config.perSecond);
    bucket.updated = now;
    return bucket;
  }

  /** Drops buckets that are full again (a few per call, so the cost stays constant), then any past the bound. */
  private evict(config: RateLimitConfig): void {
    const fullAfterMs = (config.burst / config.perSecond) * 1000;
    const now = this.clock.now();
    let checked = 0;
    for (const [key, bucket] of this.buckets) {
      if (checked++ >= 2 || now - bucket.updated < fullAfterMs) break;
      this.buckets.delete(key);
    }
    for (const key of this.buckets.keys()) {
      if (this.buckets.size <= this.maxEntries) break;
      this.buckets.delete(key);
    }
  }
}

/** Parses `PER_SECOND[/BURST]` or `off`, as the CLI takes it. */
export function parseRateLimit(text: string): RateLimitConfig | null {
  if (text === 'off' || text === '0') return null;
  const match = /^(\d+(?:\.\d+)?)(?:\/(\d+))?$/.exec(text.trim());
  if (!match) throw new Error(`rate limit must be PER_SECOND[/BURST] or off, got ${JSON.stringify(text)}`);
  const perSecond = Number(match[1]);
  return { perSecond, burst: match[2] ? Number(match[2]) : Math.max(1, Math.ceil(perSecond * 2)) };
}
