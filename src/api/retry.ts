import pRetry, { AbortError } from 'p-retry';
import type { Logger } from 'pino';
import { ArchiveDownloadLimitError, RateLimitError, ServerError, TransportError, type GroupsError } from './errors.js';

/** How calls are retried after a rate limit, a server error or no answer: backoff doubling from a base, capped per wait and in all. */
export interface RetryOptions {
  /** Retries after the first attempt (default 5). */
  retries?: number;
  /** The first backoff's ceiling in ms (default 500); each retry doubles it. */
  baseDelayMs?: number;
  /** No single wait is longer (default 30 s), Retry-After included. */
  maxDelayMs?: number;
  /** Give up once this much time has gone by (default 2 minutes). */
  maxTimeMs?: number;
}

const DEFAULTS: Required<RetryOptions> = { retries: 5, baseDelayMs: 500, maxDelayMs: 30_000, maxTimeMs: 120_000 };

/**
 * Whether a failed call may be sent again. Rate limits and server errors are retried; a GET freely,
 * a POST only when the failure proves it was not applied: a 429 (refused before any work) or a
 * connection that failed before the request went out.
 */
export function isRetryable(error: unknown, method: 'GET' | 'POST'): boolean {
  // A day's wait is no retry: the caller is told when the next download is allowed.
  if (error instanceof ArchiveDownloadLimitError) return false;
  if (error instanceof RateLimitError) return true;
  if (error instanceof TransportError) return !isCertificateProblem(error.cause) && (method === 'GET' || !error.sent);
  if (error instanceof ServerError) return method === 'GET';
  return false;
}

/** Exponential backoff with full jitter, never shorter than the service's Retry-After. */
export function backoffDelay(attempt: number, error: unknown, options: RetryOptions = {}): number {
  const { baseDelayMs, maxDelayMs } = { ...DEFAULTS, ...options };
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
  const jittered = Math.random() * ceiling;
  const retryAfter = (error as GroupsError | undefined)?.retryAfterSeconds;
  return Math.min(maxDelayMs, Math.max(jittered, retryAfter === undefined ? 0 : retryAfter * 1000));
}

/** Runs `attempt` until it succeeds or fails for good, waiting between tries as above. */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  context: { operation: string; method: 'GET' | 'POST'; log: Logger; options?: RetryOptions; signal?: AbortSignal },
): Promise<T> {
  const options = { ...DEFAULTS, ...context.options };
  const started = performance.now();
  return pRetry(
    async () => {
      try {
        return await attempt();
      } catch (error) {
        if (!isRetryable(error, context.method)) throw new AbortError(error as Error);
        throw error;
      }
    },
    {
      retries: options.retries,
      minTimeout: 0, // the waiting is ours, in onFailedAttempt, to honour Retry-After with full jitter
      maxTimeout: 0,
      signal: context.signal,
      onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
        if (retriesLeft <= 0) return;
        const delay = backoffDelay(attemptNumber, error, options);
        if (performance.now() - started + delay > options.maxTimeMs) throw error;
        context.log.debug(
          { operation: context.operation, attempt: attemptNumber, delayMs: Math.round(delay), reason: error.message },
          'retrying',
        );
        await new Promise((resolve) => setTimeout(resolve, delay));
      },
    },
  );
}

/** A certificate the client does not trust will not be trusted on the next try either. */
export function isCertificateProblem(cause: unknown): boolean {
  const code = String((cause as { code?: unknown } | null)?.code ?? (cause as { cause?: { code?: unknown } } | null)?.cause?.code ?? '');
  return /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code);
}
