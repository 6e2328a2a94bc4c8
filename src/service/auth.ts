import { randomBytes, randomInt, scryptSync, timingSafeEqual } from 'node:crypto';
import type { Clock } from './clock.js';
import { ApiError, rateLimited } from './errors.js';
import { accountKey, normaliseEmail, type LoginLimits } from './login-limits.js';
import type { Session, User } from './model.js';
import type { Store } from './store.js';
import { verifyTotp } from './totp.js';

export const SESSION_COOKIE = 'groupsio';
export const DEFAULT_SESSION_TTL_MS = 14 * 24 * 3600 * 1000;
/** Our decision: the live sessions one user may hold; the login past it ends that user's oldest session. */
export const MAX_SESSIONS_PER_USER = 1000;
/** A session past its lifetime still answers `expired` this long, then it is forgotten. */
const EXPIRED_SESSION_KEPT_MS = DEFAULT_SESSION_TTL_MS;

export interface Caller {
  user: User;
  session: Session;
}

export interface Credentials {
  authorization?: string;
  cookieHeader?: string;
}

/** Told when a session ends (logout), so whatever lives on it (chat sockets) can end too. */
export type SessionEndedListener = (session: Session) => void;

/** Logins, sessions and tokens: spec part 5 and our decisions in docs/protocol.md ("Authentication"). */
export class Auth {
  private readonly sessionEndedListeners = new Set<SessionEndedListener>();
  /** Password hashes computed by logins, for tests: every refused login costs exactly one, as a right one does. */
  passwordHashes = 0;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly loginLimits: LoginLimits,
    readonly sessionTtlMs = DEFAULT_SESSION_TTL_MS,
  ) {}

  /**
   * Checks a login. Whether the account exists or not, it costs one password hash of the same cost (an
   * unknown address is checked against a dummy hash), so the time taken tells nothing. Wrong passwords
   * and two-factor codes count against the account (its normalised e-mail address, existing or not);
   * past the limit every attempt is `rate_limit`, the right password included, before any hashing.
   */
  login(email: string | undefined, password: string | undefined, twofactor: string | undefined, wantToken: boolean) {
    const account = accountKey(email ?? '');
    const wait = this.loginLimits.perAccount.wait(account);
    if (wait > 0) throw rateLimited(wait, 'too many failed logins for this account; wait');
    const user = email ? this.store.usersByEmail.get(normaliseEmail(email)) : undefined;
    this.passwordHashes += 1;
    const matches = verifyPassword(user?.passwordHash ?? DUMMY_HASH, password ?? '');
    if (!user || password === undefined || !matches) {
      this.loginLimits.perAccount.take(account);
      throw new ApiError('unauthorized_error', 'incorrect e-mail address or password');
    }
    if (user.twoFactorSecret) {
      if (!twofactor) throw new ApiError('unauthorized_error', 'two_factor_required');
      if (!verifyTotp(user.twoFactorSecret, twofactor, this.clock.now())) {
        this.loginLimits.perAccount.take(account);
        throw new ApiError('unauthorized_error', 'invalid twofactor');
      }
    }
    return this.openSession(user, wantToken);
  }

  /** A new session for a user: the cookie, a csrf token and (when asked) an API token. */
  openSession(user: User, withToken: boolean): Session {
    const now = this.clock.now();
    this.makeRoomFor(user, now);
    return this.store.addSession({
      id: randomBytes(12).toString('hex'),
      userId: user.id,
      cookie: randomBytes(24).toString('base64url'),
      token: withToken ? randomBytes(32).toString('hex') : undefined,
      // A decimal string too large for a JSON number, as the real service's csrf_token is.
      csrf: String(BigInt(randomInt(1, 2 ** 47)) * 1_000_000n + BigInt(randomInt(0, 1_000_000))),
      created: now,
      expires: now + this.sessionTtlMs,
    });
  }

  /**
   * Ends a session at once (logout): its cookie, its token and its csrf no longer authenticate, and the
   * listeners are told (the chat hub closes the session's sockets).
   */
  endSession(session: Session): void {
    this.forget(session);
    session.expires = Math.min(session.expires, this.clock.now());
    for (const listener of this.sessionEndedListeners) listener(session);
  }

  /**
   * Keeps the session table bounded, since logins with the demo's public passwords are open to anyone:
   * sessions long past their lifetime are forgotten, and a user at the cap loses the oldest live one
   * (ended, so its sockets close too). One pass over the table per login.
   */
  private makeRoomFor(user: User, now: number): void {
    const live: Session[] = [];
    // Deleting while iterating a Map is safe; the table is in order of creation.
    for (const session of this.store.sessions.values()) {
      if (session.expires + EXPIRED_SESSION_KEPT_MS <= now) this.forget(session);
      else if (session.userId === user.id && session.expires > now) live.push(session);
    }
    for (const oldest of live.slice(0, Math.max(0, live.length - MAX_SESSIONS_PER_USER + 1))) this.endSession(oldest);
  }

  private forget(session: Session): void {
    // The store has no removal of its own for sessions; the three indexes are all there is.
    this.store.sessions.delete(session.id);
    this.store.sessionsByCookie.delete(session.cookie);
    if (session.token) this.store.sessionsByToken.delete(session.token);
    this.store.touch();
  }

  /** Calls `listener` with every session that ends from now on; answers the function that unsubscribes. */
  onSessionEnded(listener: SessionEndedListener): () => void {
    this.sessionEndedListeners.add(listener);
    return () => this.sessionEndedListeners.delete(listener);
  }

  /** Who is calling, or undefined when the credentials do not authenticate (none, unknown, expired). */
  identify(credentials: Credentials): Caller | undefined {
    try {
      return this.authenticate(credentials);
    } catch (error) {
      if (error instanceof ApiError) return undefined;
      throw error;
    }
  }

  /**
   * Who is calling. An Authorization header (Basic with the token as user name, or Bearer) is tried
   * first; otherwise the session cookie. No credentials, or unknown ones, is `authentication`; known but
   * out of date is `expired`.
   */
  authenticate(credentials: Credentials): Caller {
    const session = this.findSession(credentials);
    if (!session) throw new ApiError('authentication', 'not logged in');
    if (session.expires <= this.clock.now()) throw new ApiError('expired', 'session or token expired; log in again');
    const user = this.store.users.get(session.userId);
    if (!user) throw new ApiError('authentication', 'unknown user');
    return { user, session };
  }

  private findSession(credentials: Credentials): Session | undefined {
    const header = credentials.authorization?.trim();
    if (header) {
      const [scheme = '', value = ''] = header.split(/\s+/, 2);
      let token = '';
      if (scheme.toLowerCase() === 'bearer') token = value;
      else if (scheme.toLowerCase() === 'basic') {
        const decoded = Buffer.from(value, 'base64').toString('utf8');
        token = decoded.includes(':') ? decoded.slice(0, decoded.indexOf(':')) : decoded;
      } else throw new ApiError('authentication', `unsupported authorization scheme ${scheme}`);
      const session = this.store.sessionsByToken.get(token);
      if (!session) throw new ApiError('authentication', 'unknown token');
      return session;
    }
    const cookie = parseCookies(credentials.cookieHeader ?? '')[SESSION_COOKIE];
    return cookie ? this.store.sessionsByCookie.get(cookie) : undefined;
  }

  checkCsrf(caller: Caller, csrf: string | undefined): void {
    if (!csrf) throw new ApiError('bad_csrf', 'csrf missing');
    if (!sameSecret(caller.session.csrf, csrf)) throw new ApiError('bad_csrf', 'csrf incorrect');
  }

  /** Fault injection: every session and token is out of date from now on. */
  expireAll(): number {
    const now = this.clock.now();
    let count = 0;
    for (const session of this.store.sessions.values()) {
      if (session.expires > now) {
        session.expires = now;
        count += 1;
      }
    }
    this.store.touch();
    return count;
  }

  /** The cookies a browser must drop once its session ended (logout): the same names, expired. */
  endedCookies(): string[] {
    return [
      `${SESSION_COOKIE}=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax`,
      'haslogin=; Path=/; Max-Age=0; Secure; SameSite=Lax',
    ];
  }

  sessionCookie(session: Session): string[] {
    const maxAge = Math.max(0, Math.floor((session.expires - this.clock.now()) / 1000));
    return [
      `${SESSION_COOKIE}=${session.cookie}; Path=/; Max-Age=${maxAge}; Secure; HttpOnly; SameSite=Lax`,
      `haslogin=y; Path=/; Max-Age=${maxAge}; Secure; SameSite=Lax`,
    ];
  }
}

export function parseCookies(header: string): Record<string, string> {
  const cookies: Record<string, string> = {};
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index <= 0) continue;
    cookies[part.slice(0, index).trim()] = part.slice(index + 1).trim();
  }
  return cookies;
}

function sameSecret(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

// A sandbox does not need slow hashing, only that the state file holds no password.
const SCRYPT_OPTIONS = { N: 1024, r: 8, p: 1 };

/**
 * What a login for an unknown e-mail address is checked against: a hash of the same scheme and cost as
 * every account's, of a password nobody knows.
 */
const DUMMY_HASH = hashPassword(randomBytes(18).toString('base64url'));

export function hashPassword(password: string): string {
  const salt = randomBytes(16).toString('base64url');
  return `scrypt$${salt}$${scryptSync(password, salt, 32, SCRYPT_OPTIONS).toString('base64url')}`;
}

function verifyPassword(stored: string, password: string): boolean {
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  return sameSecret(hash, scryptSync(password, salt, 32, SCRYPT_OPTIONS).toString('base64url'));
}
