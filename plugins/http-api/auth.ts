import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { ClientOptions } from './options.js';

/** How far X-Timestamp may be from the server's clock (a signed request replayed later is refused). */
export const SIGNATURE_WINDOW_S = 300;

export type Verdict = { client: ClientOptions } | { status: 401; error: string };

/** The headers auth reads, lower-cased as node gives them. */
type Headers = Record<string, string | string[] | undefined>;

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Constant time whatever the lengths: both sides are hashed to 32 bytes first. */
function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** The hex HMAC-SHA256 a client sends in X-Signature-256 (after `sha256=`). */
export function requestSignature(secret: string, timestamp: string, content: string): string {
  return createHmac('sha256', secret).update(`v0:${timestamp}:${content}`).digest('hex');
}

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Who is calling: `Authorization: Bearer <token>` against the clients with a token, or
 * `X-Signature-256: sha256=<hex>` with `X-Timestamp: <unix seconds>` against those with an
 * hmac_secret, the HMAC taken over `v0:<timestamp>:<content>` (content: the raw body of a POST; the
 * path with its query for a GET, which has no body). Every candidate is compared, each in constant
 * time, so the answer's timing says nothing about which secret came close.
 */
export function authenticate(clients: readonly ClientOptions[], headers: Headers, content: string, nowMs = Date.now()): Verdict {
  const authorization = header(headers, 'authorization');
  if (authorization !== undefined) {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
    if (bearer === undefined) return { status: 401, error: 'Authorization must be "Bearer <token>"' };
    let found: ClientOptions | undefined;
    for (const client of clients) if ('token' in client && sameSecret(bearer, client.token) && !found) found = client;
    return found ? { client: found } : { status: 401, error: 'unknown token' };
  }
  const signature = header(headers, 'x-signature-256');
  if (signature !== undefined) {
    const timestamp = header(headers, 'x-timestamp') ?? '';
    if (!/^\d{1,12}$/.test(timestamp)) return { status: 401, error: 'X-Timestamp must be the request\'s time in Unix seconds' };
    if (Math.abs(nowMs / 1000 - Number(timestamp)) > SIGNATURE_WINDOW_S) return { status: 401, error: `X-Timestamp is more than ${SIGNATURE_WINDOW_S} s away from the server's clock` };
    const given = /^sha256=([0-9a-f]{64})$/i.exec(signature.trim())?.[1]?.toLowerCase();
    if (given === undefined) return { status: 401, error: 'X-Signature-256 must be "sha256=<64 hex digits>"' };
    let found: ClientOptions | undefined;
    for (const client of clients) {
      if ('hmac_secret' in client && sameSecret(given, requestSignature(client.hmac_secret, timestamp, content)) && !found) found = client;
    }
    return found ? { client: found } : { status: 401, error: 'bad signature' };
  }
  return { status: 401, error: 'credentials required: Authorization: Bearer <token>, or X-Signature-256 with X-Timestamp' };
}

/** A client limited to some channels may use only those. */
export function mayUse(client: ClientOptions, channel: string): boolean {
  return client.channels === undefined || client.channels.includes(channel);
}
