import type { Clock } from './clock.js';

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

/** A token bucket per caller key. `take` answers 0 when allowed, else the seconds until it would be. */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  refused = 0;

  constructor(
    private readonly clock: Clock,
    public config: RateLimitConfig | null,
  ) {}

  take(key: string): number {
    const config = this.config;
    if (!config) return 0;
    const now = this.clock.now();
    const bucket = this.buckets.get(key) ?? { tokens: config.burst, updated: now };
    bucket.tokens = Math.min(config.burst, bucket.tokens + ((now - bucket.updated) / 1000) * config.perSecond);
    bucket.updated = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    this.refused += 1;
    return (1 - bucket.tokens) / config.perSecond;
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
