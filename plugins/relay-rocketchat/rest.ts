import type { Readable } from 'node:stream';
import { FormData, request } from 'undici';
import { sleep } from '../../src/index.js';

/** What Rocket.Chat answered with a status of 400 or more (or `success: false`). */
export class RocketError extends Error {
  constructor(
    readonly status: number,
    /** The server's error type (`error-too-many-requests`, `error-room-not-found`, ...), when it gave one. */
    readonly errorType: string | undefined,
    message: string,
    /** 429: how long the server asks to wait (X-RateLimit-Reset, else the seconds its message names). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'RocketError';
  }
}

/** The credentials were refused (a wrong or revoked token, a deactivated user, a wrong password): trying again changes nothing. */
export function isRefusal(error: unknown): error is RocketError {
  return error instanceof RocketError && error.status === 401;
}

/** The user id and token every call carries (a personal access token, or what a login gave). */
export interface Credentials {
  userId: string;
  token: string;
}

/**
 * How long a 429 asks to wait: X-RateLimit-Reset is when the window ends (ms since the epoch on
 * Rocket.Chat; seconds since the epoch or seconds from now are read too), else the "wait N seconds"
 * of its `error-too-many-requests` message; 1 s when it says nothing.
 */
export function retryAfterOf(reset: string | undefined, message: string, now = Date.now()): number {
  const value = Number(reset);
  if (Number.isFinite(value) && value > 0) {
    const ms = value > 1e12 ? value - now : value > 1e9 ? value * 1000 - now : value * 1000;
    if (ms > 0) return Math.min(ms, 3_600_000);
  }
  const said = /wait (\d{1,6}) seconds?/i.exec(message.slice(0, 500));
  return said ? Number(said[1]) * 1000 : 1_000;
}

/**
 * Rocket.Chat's REST API (/api/v1) on undici: the user id and token in X-User-Id and X-Auth-Token,
 * every call with a timeout and the relay's stop, its answers as JSON. The server's rate limiter
 * answers X-RateLimit-Remaining and -Reset: once a window is used up the next call waits for its
 * reset, and a 429 says how long (error-too-many-requests).
 */
export class RocketRest {
  credentials: Credentials | undefined;
  /** No call before this time (the rate limit's window was used up). */
  private notBefore = 0;
  calls = 0;

  constructor(
    readonly serverUrl: string,
    private readonly timeoutMs: number,
    private readonly stopping: AbortSignal,
  ) {}

  get<T>(path: string, query: Record<string, string | number | boolean | undefined> = {}, signal?: AbortSignal): Promise<T> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
    const search = params.size > 0 ? `?${params}` : '';
    return this.call<T>('GET', `${path}${search}`, undefined, signal);
  }

  post<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.call<T>('POST', path, body, signal);
  }

  /**
   * A file's bytes from this server (`/file-upload/:id/:name`: the caller checked the path is one),
   * signed with the user id and token. Streamed: the body is handed on as it comes. undici's request
   * follows no redirect: a 3xx is an error, never a fetch elsewhere.
   */
  async download(path: string, signal: AbortSignal): Promise<Readable> {
    const headers: Record<string, string> = { 'user-agent': 'groupwire-relay-rocketchat' };
    if (this.credentials) Object.assign(headers, { 'x-user-id': this.credentials.userId, 'x-auth-token': this.credentials.token });
    this.calls += 1;
    const answer = await request(`${this.serverUrl}${path}`, { headers, signal: AbortSignal.any([this.stopping, signal]) });
    if (answer.statusCode >= 300) {
      await answer.body.dump();
      throw new RocketError(answer.statusCode, undefined, `${answer.statusCode} the file could not be read`);
    }
    return answer.body;
  }

  /** Uploads a file to a room (rooms.media/:rid, multipart `file`): kept by the server as a temporary upload until confirmed. */
  upload(roomId: string, name: string, file: Blob, signal?: AbortSignal): Promise<{ file: { _id: string; url: string } }> {
    const form = new FormData();
    form.append('file', file, name);
    return this.call('POST', `rooms.media/${encodeURIComponent(roomId)}`, form, signal, true, Math.ceil(file.size / 100_000));
  }

  /** Logs in with a user name and password: the user id and the token its calls then carry. */
  async login(username: string, password: string): Promise<Credentials> {
    const answer = await this.call<{ data: { userId: string; authToken: string } }>('POST', 'login', { user: username, password }, undefined, false);
    this.credentials = { userId: answer.data.userId, token: answer.data.authToken };
    return this.credentials;
  }

  /** One call to /api/v1/<path>: its JSON answer, or a RocketError; a network failure or a timeout throws as undici does. */
  async call<T>(method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal, signed = true, extraMs = 0): Promise<T> {
    const wait = this.notBefore - Date.now();
    if (wait > 0) await sleep(wait, this.stopping);
    const signals = [this.stopping, AbortSignal.timeout(this.timeoutMs + extraMs), ...(signal ? [signal] : [])];
    this.calls += 1;
    const headers: Record<string, string> = { 'user-agent': 'groupwire-relay-rocketchat', accept: 'application/json' };
    if (signed && this.credentials) Object.assign(headers, { 'x-user-id': this.credentials.userId, 'x-auth-token': this.credentials.token });
    const form = body instanceof FormData;
    if (body !== undefined && !form) headers['content-type'] = 'application/json';
    const answer = await request(`${this.serverUrl}/api/v1/${path}`, {
      method, headers, signal: AbortSignal.any(signals), ...(body === undefined ? {} : { body: form ? body : JSON.stringify(body) }),
    });
    const text = await answer.body.text();
    const header = (name: string) => {
      const value = answer.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const reset = header('x-ratelimit-reset');
    if (header('x-ratelimit-remaining') === '0' && reset !== undefined) this.notBefore = Date.now() + retryAfterOf(reset, '');
    let data: unknown;
    try {
      data = text === '' ? {} : JSON.parse(text);
    } catch {
      data = text;
    }
    const json = typeof data === 'object' && data !== null ? data as { success?: boolean; error?: unknown; errorType?: string; message?: string; status?: string } : {};
    if (answer.statusCode < 400 && json.success !== false && json.status !== 'error') return data as T;
    const said = typeof json.error === 'string' ? json.error : json.message ?? (typeof data === 'string' ? data.trim().slice(0, 200) : '');
    const errorType = json.errorType ?? /\[([\w-]+)\]\s*$/.exec(said.slice(-120))?.[1];
    const status = answer.statusCode < 400 ? 400 : answer.statusCode;
    const retryAfterMs = status === 429 || errorType === 'error-too-many-requests' ? retryAfterOf(reset, said) : undefined;
    throw new RocketError(status === 400 && errorType === 'error-too-many-requests' ? 429 : status, errorType, `${status} ${said.slice(0, 300)}`, retryAfterMs);
  }
}
