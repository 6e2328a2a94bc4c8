import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { ClientOptions } from './options.js';

/**
 * How far X-Timestamp may be from the server's clock, either way. Two minutes: clocks kept by NTP are
 * within a second, and a request takes far less than that to arrive; a longer window only makes the
 * memory of seen signatures (replay.ts), which must cover it, larger. A request signed longer ago is
 * refused: a captured one cannot be sent later, and within the window it is refused as seen.
 */
export const SIGNATURE_WINDOW_S = 120;

/** What a signed request's signature covers (docs/plugins/http-api.md, "Authentication"). */
export interface SignedContent {
  /** GET or POST, as sent. */
  method: string;
  /** The request target: the path with its query, exactly as sent (`/gateways/ops/messages?after=3`). */
  target: string;
  /** The raw body ('' for a GET). */
  body: string;
}

export type Verdict =
  | { client: ClientOptions; signed?: { signature: string; timestamp: number } }
  | { status: 401; error: string };

/** The headers auth reads, lower-cased as node gives them. */
type Headers = Record<string, string | string[] | undefined>;

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Constant time whatever the lengths: both sides are hashed to 32 bytes first. */
function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * The hex HMAC-SHA256 a client sends in X-Signature-256 (after `sha256=`), over
 * `v1:<timestamp>:<METHOD>:<path?query>:<Idempotency-Key or empty>:<body>`: the request as a whole, so
 * a signature is good for one method, one channel's path and query, one Idempotency-Key and one body.
 */
export function requestSignature(secret: string, timestamp: string, content: SignedContent, idempotencyKey: string): string {
  return createHmac('sha256', secret).update(`v1:${timestamp}:${content.method}:${content.target}:${idempotencyKey}:${content.body}`).digest('hex');
}

/** The v0 signature (timestamp and body only: replayable to any path, with any key). Only recognised, to say it is no longer taken. */
function v0Signature(secret: string, timestamp: string, content: SignedContent): string {
  return createHmac('sha256', secret).update(`v0:${timestamp}:${content.method === 'GET' ? content.target : content.body}`).digest('hex');
}

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Who is calling: `Authorization: Bearer <token>` against the clients with a token, or
 * `X-Signature-256: sha256=<hex>` with `X-Timestamp: <unix seconds>` against those with an
 * hmac_secret (requestSignature). Every candidate is compared, each in constant time, so the answer's
 * timing says nothing about which secret came close. A signed request's signature and timestamp are
 * answered too: the caller takes each once (replay.ts).
 */
export function authenticate(clients: readonly ClientOptions[], headers: Headers, content: SignedContent, nowMs = Date.now()): Verdict {
  const check = authenticateStreaming(clients, headers, content, nowMs, content);
  if ('finish' in check) {
    check.update(Buffer.from(content.body, 'utf8'));
    return check.finish();
  }
  return check;
}

/**
 * A signed request whose body is checked as it is read (a multipart POST, streamed to temp files): the
 * headers are checked before the body, the signature over every byte once the body has been read.
 */
export interface BodyCheck {
  update(chunk: Buffer): void;
  finish(): Verdict;
}

/**
 * `authenticate`, for a body read later: a bearer request is answered now (its body is not signed); a
 * signed one has its headers checked now and gives a BodyCheck that hashes the body as it comes, with
 * each hmac client's secret at once (there are a few), and compares at the end in constant time.
 * `v0Content` (the body as text, when it is in hand) lets a v0 signature be named as such.
 */
export function authenticateStreaming(
  clients: readonly ClientOptions[], headers: Headers, request: Omit<SignedContent, 'body'>, nowMs = Date.now(), v0Content?: SignedContent,
): Verdict | BodyCheck {
  const authorization = header(headers, 'authorization');
  if (authorization !== undefined) {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
    if (bearer === undefined) return { status: 401, error: 'Authorization must be "Bearer <token>"' };
    let found: ClientOptions | undefined;
    for (const client of clients) if ('token' in client && sameSecret(bearer, client.token) && !found) found = client;
    return found ? { client: found } : { status: 401, error: 'unknown token' };
  }
  const signature = header(headers, 'x-signature-256');
  if (signature === undefined) return { status: 401, error: 'credentials required: Authorization: Bearer <token>, or X-Signature-256 with X-Timestamp' };
  const timestamp = header(headers, 'x-timestamp') ?? '';
  if (!/^\d{1,12}$/.test(timestamp)) return { status: 401, error: 'X-Timestamp must be the request\'s time in Unix seconds' };
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > SIGNATURE_WINDOW_S) {
    return { status: 401, error: `X-Timestamp is more than ${SIGNATURE_WINDOW_S} s away from the server's clock: sign the request when sending it` };
  }
  const given = /^sha256=([0-9a-f]{64})$/i.exec(signature.trim())?.[1]?.toLowerCase();
  if (given === undefined) return { status: 401, error: 'X-Signature-256 must be "sha256=<64 hex digits>"' };
  const key = header(headers, 'idempotency-key') ?? '';
  const signers = clients.filter((client): client is Extract<ClientOptions, { hmac_secret: string }> => 'hmac_secret' in client)
    .map((client) => ({ client, hmac: createHmac('sha256', client.hmac_secret).update(`v1:${timestamp}:${request.method}:${request.target}:${key}:`) }));
  return {
    update(chunk) {
      for (const signer of signers) signer.hmac.update(chunk);
    },
    finish() {
      let found: ClientOptions | undefined;
      let v0 = false;
      for (const { client, hmac } of signers) {
        if (sameSecret(given, hmac.digest('hex')) && !found) found = client;
        if (v0Content && sameSecret(given, v0Signature(client.hmac_secret, timestamp, v0Content))) v0 = true;
      }
      if (found) return { client: found, signed: { signature: given, timestamp: Number(timestamp) } };
      if (v0) {
        return { status: 401, error: 'this request is signed with v0 (timestamp and body only), which is no longer accepted: sign "v1:<X-Timestamp>:<METHOD>:<path?query>:<Idempotency-Key>:<body>" (docs/plugins/http-api.md)' };
      }
      return { status: 401, error: 'bad signature' };
    },
  };
}

/** A client limited to some channels may use only those. */
export function mayUse(client: ClientOptions, channel: string): boolean {
  return client.channels === undefined || client.channels.includes(channel);
}
