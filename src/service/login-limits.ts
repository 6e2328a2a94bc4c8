import { createHash } from 'node:crypto';
import type { Clock } from './clock.js';
import { RateLimiter, type RateLimitConfig } from './rate-limit.js';

/**
 * Our decision (docs/protocol.md "Rate limits"): login attempts per address, whatever the result, since
 * each costs a password hash; a burst for many bots starting at once from one machine.
 */
export const DEFAULT_LOGIN_PER_ADDRESS: RateLimitConfig = { perSecond: 2, burst: 100 };
/** Our decision: failed logins per account (wrong password or two-factor code): 10 at once, then 2 a minute. */
export const DEFAULT_LOGIN_FAILURES_PER_ACCOUNT: RateLimitConfig = { perSecond: 1 / 30, burst: 10 };

/**
 * The two limits on logins, apart from the per-caller limit every call meets. Both tables are bounded
 * RateLimiters; an account's key is a hash of the normalised e-mail address, so a caller sending
 * ever-new, ever-longer addresses grows nothing but the bounded count of short keys.
 */
export class LoginLimits {
  readonly perAddress: RateLimiter;
  readonly perAccount: RateLimiter;

  constructor(clock: Clock, maxEntries?: number) {
    this.perAddress = new RateLimiter(clock, DEFAULT_LOGIN_PER_ADDRESS, maxEntries);
    this.perAccount = new RateLimiter(clock, DEFAULT_LOGIN_FAILURES_PER_ACCOUNT, maxEntries);
  }
}

/** The form of an e-mail address accounts are found by (the store keys them so). */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The per-account key: the same for every spelling of one address, whether the account exists or not. */
export function accountKey(email: string): string {
  return createHash('sha256').update(normaliseEmail(email)).digest('base64url');
}
