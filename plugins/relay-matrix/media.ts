import type { Readable } from 'node:stream';
import { MatrixError } from 'matrix-js-sdk';
import { request, type Dispatcher } from 'undici';

/**
 * Matrix media through the configured homeserver only (spec v1.11 authenticated media): a file said in
 * a room is read with `GET /_matrix/client/v1/media/download/{serverName}/{mediaId}` and the relay's
 * token, whatever server the mxc:// URI names (the homeserver fetches remote media itself), redirects
 * not followed; a file for a room is streamed to `POST /_matrix/media/v3/upload`; the homeserver's
 * limit is `m.upload.size` of `GET /_matrix/client/v1/media/config`. No other host is ever asked.
 */

/** A server name (a host, an IPv4 or [IPv6] literal, a port) and a media id as the spec allows them: nothing that could leave the path. */
const SERVER_NAME = /^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;
const MEDIA_ID = /^[A-Za-z0-9_-]+$/;

/** `mxc://server/mediaId` → its parts; undefined when it is not one (the event's file is not read). */
export function parseMxc(uri: unknown): { server: string; mediaId: string } | undefined {
  if (typeof uri !== 'string' || !uri.startsWith('mxc://')) return undefined;
  const rest = uri.slice('mxc://'.length);
  const slash = rest.indexOf('/');
  if (slash < 0) return undefined;
  const server = rest.slice(0, slash);
  const mediaId = rest.slice(slash + 1);
  return SERVER_NAME.test(server) && MEDIA_ID.test(mediaId) ? { server, mediaId } : undefined;
}

export class MatrixMedia {
  private limitRead: Promise<number | undefined> | undefined;

  constructor(
    private readonly options: {
      /** The relay's `homeserver` option: every media request goes there. */
      homeserver: string;
      token: () => string;
      timeoutMs: number;
    },
  ) {}

  private url(path: string, query: Record<string, string> = {}): string {
    const base = this.options.homeserver.endsWith('/') ? this.options.homeserver : `${this.options.homeserver}/`;
    const url = new URL(path, base);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    return url.toString();
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.options.token()}`, ...extra };
  }

  /** The bytes of an mxc:// file, streamed; a refusal is a MatrixError (the body is not read past the error). */
  async download(mxc: { server: string; mediaId: string }, signal: AbortSignal): Promise<Readable> {
    const path = `_matrix/client/v1/media/download/${encodeURIComponent(mxc.server)}/${encodeURIComponent(mxc.mediaId)}`;
    const answer = await request(this.url(path, { allow_redirect: 'false' }), {
      method: 'GET', headers: this.headers(), signal, headersTimeout: this.options.timeoutMs, bodyTimeout: this.options.timeoutMs,
    });
    if (answer.statusCode !== 200) throw await failure(answer, 'download');
    return answer.body;
  }

  /** Streams a file to the homeserver; answers its mxc:// URI. */
  async upload(bytes: Readable, file: { name: string; contentType: string; size: number }, signal: AbortSignal): Promise<string> {
    const answer = await request(this.url('_matrix/media/v3/upload', { filename: file.name }), {
      method: 'POST', body: bytes, signal, headersTimeout: this.options.timeoutMs, bodyTimeout: this.options.timeoutMs,
      headers: this.headers({ 'content-type': file.contentType, 'content-length': String(file.size) }),
    });
    if (answer.statusCode !== 200) throw await failure(answer, 'upload');
    const uri = ((await answer.body.json()) as { content_uri?: unknown }).content_uri;
    if (!parseMxc(uri)) throw new Error('the homeserver answered an upload without an mxc:// content_uri');
    return uri as string;
  }

  /** The homeserver's largest upload (m.upload.size), read once; undefined when it does not say. */
  limit(signal: AbortSignal): Promise<number | undefined> {
    this.limitRead ??= (async () => {
      const answer = await request(this.url('_matrix/client/v1/media/config'), {
        method: 'GET', headers: this.headers(), signal, headersTimeout: this.options.timeoutMs, bodyTimeout: this.options.timeoutMs,
      });
      if (answer.statusCode !== 200) throw await failure(answer, 'media config');
      const size = ((await answer.body.json()) as Record<string, unknown>)['m.upload.size'];
      return typeof size === 'number' && size > 0 ? size : undefined;
    })();
    // A failed read is asked again next time (the homeserver may have been away).
    this.limitRead.catch(() => (this.limitRead = undefined));
    return this.limitRead;
  }
}

/** A homeserver's refusal as the SDK's MatrixError (so the relay's 401/429/4xx handling applies). */
async function failure(answer: Dispatcher.ResponseData, what: string): Promise<MatrixError> {
  const text = await answer.body.text().catch(() => '');
  let json: { errcode?: string; error?: string; retry_after_ms?: number } = {};
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    json = { error: `${what} answered HTTP ${answer.statusCode}` };
  }
  const headers = new Headers();
  const retryAfter = answer.headers['retry-after'];
  if (typeof retryAfter === 'string') headers.set('retry-after', retryAfter);
  return new MatrixError({ errcode: json.errcode ?? `HTTP_${answer.statusCode}`, error: json.error ?? `${what} answered HTTP ${answer.statusCode}`, ...(json.retry_after_ms !== undefined ? { retry_after_ms: json.retry_after_ms } : {}) }, answer.statusCode, undefined, undefined, headers);
}
