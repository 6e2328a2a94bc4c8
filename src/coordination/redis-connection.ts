import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** A Redis URL as it may be logged: the password (and user) replaced. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    if (parsed.username && parsed.password) parsed.username = '***';
    return parsed.toString();
  } catch {
    return 'redis://(unparsable URL)';
  }
}

/**
 * A connection for a long-running worker: it reconnects forever (backoff up to 2 s), queues commands
 * while Redis is away (the state writes must keep their order, not fail), and says once at warn when
 * Redis goes and at info when it is back. Commands that must finish in time (lease renewals) race their
 * own timeout (see LeaseTable).
 */
export function connectRedis(url: string, log: Logger, name: string): Redis {
  const redis = new Redis(url, {
    connectionName: `groupwire-${name}`,
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
    lazyConnect: false,
  });
  let down = false;
  redis.on('error', (error: Error) => {
    if (down) return;
    down = true;
    log.warn({ redis: redactRedisUrl(url), connection: name, err: { message: error.message } }, 'Redis unreachable; trying again');
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    log.info({ redis: redactRedisUrl(url), connection: name }, 'Redis reachable again');
  });
  return redis;
}
