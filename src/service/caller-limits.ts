import { isIPv4, isIPv6 } from 'node:net';
import type { FastifyRequest } from 'fastify';
import type { ServiceCore } from './core.js';
import { rateLimited } from './errors.js';

/**
 * What every API call meets before anything else: injected faults (admin `faults`), then the
 * per-caller rate limit, and for `login` the limit of login attempts per address.
 */
export async function applyFaultsAndLimits(core: ServiceCore, request: FastifyRequest, operation: string): Promise<void> {
  const delay = core.faults.delay();
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
  const injected = core.faults.errorFor('api', operation);
  if (injected) throw injected;
  // A login proves nothing yet: it is the address's, whatever credentials come with it (a valid
  // cookie of one account must not buy password guesses at another).
  const key = operation === 'login' ? addressKey(request.ip) : callerKey(core, request.headers, request.ip);
  const wait = core.limiter.take(key);
  if (wait > 0) throw rateLimited(wait);
  if (operation === 'login') {
    const loginWait = core.loginLimits.perAddress.take(key);
    if (loginWait > 0) throw rateLimited(loginWait, 'too many logins from this address; wait');
  }
}

/** The headers a caller is known by. */
export interface CallerHeaders {
  authorization?: string;
  cookie?: string;
}

/**
 * The key the per-caller limits count a caller under (REST calls and chat socket upgrades alike): the
 * user the credentials authenticate as, so no rewriting of the same credentials (another cookie pair
 * beside the session's, a password after the token in Basic, text after a Bearer token) and no second
 * session of the same user gives a fresh allowance. Credentials that do not authenticate (none,
 * unknown, expired) count against the address, so junk credentials buy nothing either.
 */
export function callerKey(core: ServiceCore, headers: CallerHeaders, address: string): string {
  const caller = core.auth.identify({ authorization: headers.authorization, cookieHeader: headers.cookie });
  return caller ? `user ${caller.user.id}` : addressKey(address);
}

/**
 * The key of a caller not logged in: the IPv4 address, or the /64 an IPv6 address belongs to (one
 * host commonly holds a whole /64, so single IPv6 addresses would be fresh allowances for the asking).
 */
export function addressKey(address: string): string {
  const plain = address.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(plain);
  if (mapped) return `address ${mapped[1]}`;
  if (isIPv4(plain)) return `address ${plain}`;
  if (isIPv6(plain)) return `address ${ipv6Prefix64(plain)}::/64`;
  return `address ${plain.slice(0, 64)}`;
}

/** The first four groups of an IPv6 address, written out. */
function ipv6Prefix64(address: string): string {
  const [head = '', tail] = address.toLowerCase().split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = Array<string>(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill('0');
  const groups = tail === undefined ? headGroups : [...headGroups, ...zeros, ...tailGroups];
  return groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, '')).join(':');
}
