import { AuthenticationError, ExpiredError } from './errors.js';
import type { Transport } from './transport.js';
import type { LoginResult, User } from './types.js';

/** How the client proves who it is (spec part 5). */
export type Credentials =
  | {
      email: string;
      password: string;
      /** A two-factor code, or a function that produces a fresh one at each login. */
      twofactor?: string | (() => string | Promise<string>);
    }
  | {
      token: string;
      /** Basic (the token as user name, empty password; the default) or Bearer. */
      scheme?: 'basic' | 'bearer';
    };

/**
 * The client's login state: the session cookie (kept like a browser keeps it), the csrf token and
 * the user. Logins and csrf refreshes are shared, so concurrent calls that all find the session
 * expired cause one login, not many.
 */
export class Session {
  private readonly cookies = new Map<string, string>();
  private pendingLogin: Promise<void> | undefined;
  csrf: string | undefined;
  user: User | undefined;
  /** The API token a login with `token: true` returned. */
  token: string | undefined;
  /** Counts logins, so a call that failed on an old session retries on the new one without logging in again. */
  generation = 0;

  constructor(
    private readonly transport: Transport,
    private current: Credentials | undefined,
  ) {}

  get credentials(): Credentials | undefined {
    return this.current;
  }

  /** Logs in with other credentials from now on (a bot's login fixed in bots.yaml); the old session is dropped. */
  useCredentials(credentials: Credentials): void {
    this.current = credentials;
    this.forget();
    this.user = undefined;
    this.token = undefined;
  }

  /** True when the client can log in again by itself (it holds an e-mail address and password). */
  get canLogIn(): boolean {
    return this.credentials !== undefined && 'email' in this.credentials;
  }

  get isLoggedIn(): boolean {
    return this.cookies.size > 0 || (this.credentials !== undefined && 'token' in this.credentials);
  }

  /** The headers that authenticate a request. */
  headers(): Record<string, string> {
    const credentials = this.credentials;
    if (credentials && 'token' in credentials) {
      return credentials.scheme === 'bearer'
        ? { authorization: `Bearer ${credentials.token}` }
        : { authorization: `Basic ${Buffer.from(`${credentials.token}:`).toString('base64')}` };
    }
    if (this.cookies.size === 0) return {};
    return { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') };
  }

  /** Logs in with the e-mail address and password (shared by concurrent callers). */
  login(options: { token?: boolean } = {}): Promise<void> {
    this.pendingLogin ??= this.doLogin(options).finally(() => {
      this.pendingLogin = undefined;
    });
    return this.pendingLogin;
  }

  private async doLogin(options: { token?: boolean }): Promise<void> {
    const credentials = this.credentials;
    if (!credentials || !('email' in credentials)) {
      throw new AuthenticationError({ type: 'authentication', extra: 'no e-mail address and password to log in with', status: 0, operation: 'login' });
    }
    const twofactor = typeof credentials.twofactor === 'function' ? await credentials.twofactor() : credentials.twofactor;
    const response = await this.transport.send('login', 'POST', {
      email: credentials.email, password: credentials.password, twofactor, token: options.token ? 'true' : undefined,
    }, {});
    this.cookies.clear();
    this.storeCookies(response.headers['set-cookie']);
    const result = (await this.transport.readJson('login', response)) as LoginResult;
    this.user = result.user;
    this.csrf = String(result.user.csrf_token);
    this.token = result.token;
    this.generation += 1;
  }

  /** The session is gone: the next call logs in afresh (inside its retries). */
  forget(): void {
    this.cookies.clear();
    this.csrf = undefined;
  }

  /** Cookies from a Set-Cookie header; an expired or emptied cookie is dropped. */
  storeCookies(header: string | string[] | undefined): void {
    for (const line of ([] as string[]).concat(header ?? [])) {
      const [pair = '', ...attributes] = line.split(';');
      const index = pair.indexOf('=');
      if (index <= 0) continue;
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age\s*=\s*0\s*$/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  /** Whether an error means the login is gone and a fresh one may help. */
  static isLoginLost(error: unknown): boolean {
    return error instanceof ExpiredError || error instanceof AuthenticationError;
  }
}
