import mattermost from '@mattermost/client';
import type { Options } from '@mattermost/types/client4';
import { sleep } from '../../src/index.js';

const { Client4 } = mattermost;

/** A Mattermost id (of a post, a file, a channel): 26 lowercase letters and digits. */
export const FILE_ID = /^[a-z0-9]{26}$/;

/** What Mattermost answered with a status of 400 or more. */
export class MattermostError extends Error {
  constructor(
    readonly status: number,
    /** The server's error id (`api.context.session_expired.app_error`, ...), when it gave one. */
    readonly errorId: string | undefined,
    message: string,
    /** 429: how long the server asks to wait (Retry-After, else X-RateLimit-Reset). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'MattermostError';
  }
}

/** The token was refused (unknown, revoked, expired, the account deactivated): trying again changes nothing. */
export function isRefusal(error: unknown): error is MattermostError {
  return error instanceof MattermostError && error.status === 401;
}

interface Answer<T> {
  response: Response;
  headers: Map<string, string>;
  data: T;
}

/**
 * Client4's own fetch: its auth header, its routes and its decoding of the answer, but with the status
 * and the headers (its typed calls keep neither for a 429, whose body is plain text) and an abort signal.
 */
type Fetcher = { doFetchWithResponse<T>(url: string, options: Options): Promise<Answer<T>> };

/**
 * The relay's REST side on the official @mattermost/client (Client4): a bot's or a user's token in its
 * Authorization header, every call with a timeout and the relay's stop. Mattermost's rate limiter
 * answers X-RateLimit-Remaining and -Reset on every call: once a window is used up the next call waits
 * for its reset, and a 429 says how long with Retry-After.
 */
export class MattermostRest {
  readonly client: InstanceType<typeof Client4>;
  /** No call before this time (the rate limit's window was used up). */
  private notBefore = 0;
  calls = 0;

  constructor(
    readonly serverUrl: string,
    token: string,
    private readonly timeoutMs: number,
    private readonly stopping: AbortSignal,
  ) {
    this.client = new Client4();
    this.client.setUrl(serverUrl);
    this.client.setToken(token);
    // No cookies in a server process, and a bot's User-Agent of its own.
    this.client.includeCookies = false;
    this.client.setUserAgent('groupwire-relay-mattermost');
  }

  get<T>(url: string, signal?: AbortSignal): Promise<T> {
    return this.call<T>('get', url, undefined, signal);
  }

  /**
   * A file's bytes, streamed: GET /api/v4/files/{id} (Client4's route) on the configured server with
   * the token, no redirect followed (the bytes come from the server itself or not at all).
   */
  async download(fileId: string, signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    if (!FILE_ID.test(fileId)) throw new Error('not a Mattermost file id');
    const url = new URL(this.client.getFileUrl(fileId, 0));
    if (url.origin !== new URL(this.serverUrl).origin) throw new Error('the Mattermost file URL is not on the configured server');
    const { headers } = this.client.getOptions({ method: 'get' });
    this.calls += 1;
    let response: Response;
    try {
      response = await fetch(url, { headers: headers as Record<string, string>, signal: AbortSignal.any([this.stopping, signal]), redirect: 'error' });
    } catch (error) {
      const code = (error as { cause?: { code?: unknown } }).cause?.code;
      throw new Error(`the Mattermost file download failed${typeof code === 'string' ? ` (${code})` : signal.aborted ? ' (aborted)' : ''}`);
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw new MattermostError(response.status, undefined, `the Mattermost file download failed: ${response.status} ${response.statusText}`);
    }
    return response.body;
  }

  /**
   * One call: its JSON answer, or a MattermostError for a status of 400 or more; a network failure or a
   * timeout throws as fetch does. A FormData body goes as multipart (its Blobs streamed), anything else as JSON.
   */
  async call<T>(method: 'get' | 'post' | 'put' | 'delete', url: string, body?: unknown, signal?: AbortSignal, timeoutMs = this.timeoutMs): Promise<T> {
    const wait = this.notBefore - Date.now();
    if (wait > 0) await sleep(wait, this.stopping);
    const signals = [this.stopping, AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])];
    this.calls += 1;
    const encoded = body === undefined ? {} : { body: body instanceof FormData ? body : JSON.stringify(body) };
    const answer = await (this.client as unknown as Fetcher).doFetchWithResponse<unknown>(url, {
      method, ignoreStatus: true, signal: AbortSignal.any(signals), ...encoded,
    });
    const { response, headers } = answer;
    const reset = Number(headers.get('X-Ratelimit-Reset'));
    if (headers.get('X-Ratelimit-Remaining') === '0' && reset > 0) this.notBefore = Date.now() + reset * 1000;
    // Client4 decodes `application/json` exactly; a server or a proxy adding a charset gets its text parsed here.
    const data = typeof answer.data === 'string' && /^application\/json/i.test(headers.get('Content-Type') ?? '') ? JSON.parse(answer.data) as unknown : answer.data;
    if (response.status < 400) return data as T;
    const json = typeof data === 'object' && data !== null ? data as { id?: string; message?: string } : {};
    const message = json.message ?? (typeof data === 'string' && data.trim() !== '' ? data.trim().slice(0, 200) : response.statusText);
    let retryAfterMs: number | undefined;
    if (response.status === 429) {
      const seconds = Number(headers.get('Retry-After') ?? headers.get('X-Ratelimit-Reset'));
      retryAfterMs = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1_000;
    }
    throw new MattermostError(response.status, json.id, `${response.status} ${message}`, retryAfterMs);
  }
}
