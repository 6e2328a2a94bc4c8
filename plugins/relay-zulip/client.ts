import { FormData, request } from 'undici';
import type { Readable } from 'node:stream';
import { sleep } from '../../src/index.js';

/** What Zulip answered with `result: "error"` or a status of 400 or more. */
export class ZulipError extends Error {
  constructor(
    readonly status: number,
    /** Zulip's error code (`BAD_EVENT_QUEUE_ID`, `RATE_LIMIT_HIT`, `UNAUTHORIZED`, ...), when it gave one. */
    readonly code: string | undefined,
    message: string,
    /** 429: how long the server asks to wait (`retry-after` in the body, else the Retry-After header). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ZulipError';
  }
}

/** The email or API key was refused (wrong, regenerated, the bot deactivated): trying again changes nothing. */
export function isRefusal(error: unknown): error is ZulipError {
  return error instanceof ZulipError && error.status === 401;
}

/** The event queue is gone (expired after about 10 minutes unpolled, or the server restarted): register again. */
export function isLostQueue(error: unknown): boolean {
  return error instanceof ZulipError && error.code === 'BAD_EVENT_QUEUE_ID';
}

type Params = Record<string, string | number | boolean | undefined>;

/**
 * A thin client of Zulip's REST API (`/api/v1`) over undici, which groupwire already uses: HTTP basic
 * auth with the bot's email and API key, parameters as a query (GET, DELETE) or a form body (POST,
 * PATCH; JSON values such as `narrow` encoded by the caller), every call with a timeout and the relay's
 * stop. Not zulip-js: its last release is years old, it pulls isomorphic-fetch, form-data and babel's
 * runtime, and it gives neither the status nor the headers of an error (a 429's Retry-After).
 */
export class ZulipClient {
  private readonly auth: string;
  /** No call before this time (a 429 said how long). */
  private notBefore = 0;
  calls = 0;

  constructor(
    readonly serverUrl: string,
    email: string,
    apiKey: string,
    private readonly timeoutMs: number,
    private readonly stopping: AbortSignal,
  ) {
    this.auth = `Basic ${Buffer.from(`${email}:${apiKey}`).toString('base64')}`;
  }

  get<T>(path: string, params: Params = {}, options: { signal?: AbortSignal; extraMs?: number } = {}): Promise<T> {
    return this.call<T>('GET', path, params, options);
  }

  /**
   * An uploaded file's bytes (`/user_uploads/{realm_id_str}/{filename}`, a path of this server only),
   * by Zulip's documented temporary-URL flow (Zulip 3.0+): GET /api/v1/user_uploads/… with the key
   * answers a `url` good for a minute, which is read without the key. That URL must be on this server
   * too: anything else is refused, never fetched. Streamed: the body is handed on as it comes.
   */
  async download(path: string, signal: AbortSignal): Promise<Readable> {
    const { url } = await this.get<{ url: string }>(path, {}, { signal });
    const origin = new URL(this.serverUrl).origin;
    const target = new URL(url, `${origin}/`);
    // undici's request follows no redirect: a 3xx is an error below, not a fetch elsewhere.
    if (target.origin !== origin || !target.pathname.startsWith('/user_uploads/')) throw new ZulipError(502, undefined, 'the temporary URL Zulip gave is not on its own server: not fetched');
    const answer = await request(target, {
      headers: { 'user-agent': 'groupwire-relay-zulip' }, signal: AbortSignal.any([this.stopping, signal]),
    });
    if (answer.statusCode >= 300) {
      await answer.body.dump();
      throw new ZulipError(answer.statusCode, undefined, `${answer.statusCode} the file could not be read`);
    }
    return answer.body;
  }

  /** Uploads a file (POST /user_uploads, multipart): its path on the server (`url`, Zulip 9.0+; `uri` before). */
  async upload(name: string, file: Blob, signal: AbortSignal): Promise<string> {
    const wait = this.notBefore - Date.now();
    if (wait > 0) await sleep(wait, this.stopping);
    const form = new FormData();
    form.append('filename', file, name);
    this.calls += 1;
    const answer = await request(`${this.serverUrl}/api/v1/user_uploads`, {
      method: 'POST', headers: { authorization: this.auth, 'user-agent': 'groupwire-relay-zulip' }, body: form,
      signal: AbortSignal.any([this.stopping, signal, AbortSignal.timeout(this.timeoutMs + Math.ceil(file.size / 100_000))]),
    });
    const json = await this.answerOf<{ url?: string; uri?: string }>(answer.statusCode, answer.headers, await answer.body.text());
    const path = json.url ?? json.uri;
    if (typeof path !== 'string') throw new ZulipError(502, undefined, 'Zulip took the upload but named no url');
    return path;
  }

  /**
   * One call: its JSON answer, or a ZulipError; a network failure or a timeout throws as undici does.
   * `atStop`: a call made as the relay stops (deleting its event queues), which the stop does not cut
   * short: it has a timeout of its own, and does not wait out a 429's pause.
   */
  async call<T>(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, params: Params = {},
    options: { signal?: AbortSignal; extraMs?: number; atStop?: { timeoutMs: number } } = {},
  ): Promise<T> {
    const wait = this.notBefore - Date.now();
    if (wait > 0 && !options.atStop) await sleep(wait, this.stopping);
    const form = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) if (value !== undefined) form.set(name, String(value));
    const inQuery = method === 'GET' || method === 'DELETE';
    const query = inQuery && [...form.keys()].length > 0 ? `?${form.toString()}` : '';
    const signal = options.atStop ? AbortSignal.timeout(options.atStop.timeoutMs)
      : AbortSignal.any([this.stopping, AbortSignal.timeout(this.timeoutMs + (options.extraMs ?? 0)), ...(options.signal ? [options.signal] : [])]);
    this.calls += 1;
    const answer = await request(`${this.serverUrl}/api/v1${path}${query}`, {
      method,
      headers: {
        authorization: this.auth,
        'user-agent': 'groupwire-relay-zulip',
        ...(inQuery ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      },
      ...(inQuery ? {} : { body: form.toString() }),
      signal,
    });
    return this.answerOf<T>(answer.statusCode, answer.headers, await answer.body.text());
  }

  private answerOf<T>(statusCode: number, headers: Record<string, string | string[] | undefined>, text: string): T {
    const answer = { statusCode, headers };
    let json: Record<string, unknown> | undefined;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      json = undefined;
    }
    if (answer.statusCode < 400 && json !== undefined && json.result !== 'error') return json as T;
    const code = typeof json?.code === 'string' ? json.code : undefined;
    const message = typeof json?.msg === 'string' ? json.msg : text.trim().slice(0, 200) || `HTTP ${answer.statusCode}`;
    let retryAfterMs: number | undefined;
    if (answer.statusCode === 429 || code === 'RATE_LIMIT_HIT') {
      const header = answer.headers['retry-after'];
      const seconds = Number(json?.['retry-after'] ?? (Array.isArray(header) ? header[0] : header));
      retryAfterMs = Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds * 1000) : 1_000;
      this.notBefore = Date.now() + retryAfterMs;
    }
    throw new ZulipError(answer.statusCode, code, `${answer.statusCode} ${message}`, retryAfterMs);
  }
}
