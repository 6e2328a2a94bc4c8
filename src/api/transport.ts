import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect as tlsConnect, createSecureContext, type ConnectionOptions, type SecureContext, type TLSSocket } from 'node:tls';
import type { Readable } from 'node:stream';
import { Agent, request, type Dispatcher, type FormData } from 'undici';
import { errorFromObject, ResponseFormatError, TransportError } from './errors.js';
import { parseWireJson } from './wire-json.js';

/** One parameter's value as sent: numbers and booleans as their text, null and undefined left out. */
export type ParamValue = string | number | boolean | null | undefined;
/** An operation's parameters by name, as GroupsClient.call sends them (the query of a GET, the form of a POST). */
export type WireParams = Record<string, ParamValue>;

export interface TransportOptions {
  /** `https://host[:port]`: the service's base address or its enterprise address. */
  baseUrl: string;
  /** PEM of a CA to trust besides the system's (the local service's `ca_file`). */
  ca?: string | Buffer;
  caFile?: string;
  /** Per-request timeout for headers and body (default 60 s). */
  timeoutMs?: number;
  /** Use your own undici dispatcher (a proxy agent, say). */
  dispatcher?: Dispatcher;
  /**
   * At most this many connections to the service at once (default 8); more calls wait their turn. A
   * bot in thousands of chats must not open a TLS connection per chat for its history reads.
   */
  connections?: number;
}

/** The default of TransportOptions.connections. */
export const DEFAULT_CONNECTIONS = 8;

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable & { text(): Promise<string> };
}

/** The base address, checked: HTTPS only, without a trailing slash or the `/api/v1` suffix. */
export function normalizeBaseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(`not a URL: ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'https:') {
    throw new TypeError(`the Group Discussion Service is HTTPS only; refusing ${url.protocol}//${url.host} (use https://)`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '').replace(/\/api\/v1$/, '')}`;
}

export function formBody(params: WireParams): string {
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null) form.append(key, String(value));
  return form.toString();
}

/**
 * One HTTP exchange with the service: TLS verified (with an extra CA if given), JSON answers parsed
 * keeping every digit of ids, error objects turned into error classes, non-JSON answers into a clear
 * ResponseFormatError. Retrying and authentication live above this.
 */
export class Transport {
  readonly baseUrl: string;
  readonly dispatcher: Dispatcher;
  readonly ca: string | Buffer | undefined;
  private readonly ownsDispatcher: boolean;
  private readonly timeoutMs: number;
  private tlsContext: SecureContext | undefined;
  /** The TLS session of this client's last verified websocket: the next one resumes it. */
  private tlsSession: Buffer | undefined;

  constructor(options: TransportOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.ca = options.ca ?? (options.caFile ? readFileSync(options.caFile) : undefined);
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.ownsDispatcher = !options.dispatcher;
    this.dispatcher = options.dispatcher ?? new Agent({
      connect: this.ca ? { ca: this.ca } : {}, connections: options.connections ?? DEFAULT_CONNECTIONS,
    });
  }

  /**
   * One TLS context (the trusted CAs, parsed once) for every websocket of this client: without it each
   * socket would build its own, which costs a CA parse and memory per chat.
   */
  get secureContext(): SecureContext {
    this.tlsContext ??= createSecureContext(this.ca ? { ca: this.ca } : {});
    return this.tlsContext;
  }

  /**
   * tls.connect for this client's websockets (ws's `createConnection`): the shared context, and the
   * TLS session of the last socket resumed, so a reconnect of thousands of chats costs the client and
   * the service an abbreviated handshake each instead of a full one. Only a session of a socket that
   * passed verification is kept (a resumed session skips the certificate check).
   */
  connectTls(options: ConnectionOptions): TLSSocket {
    const host = options.host ?? '';
    const socket = tlsConnect({
      ...options,
      path: undefined,
      // As ws does: SNI names a host, never an address.
      servername: options.servername ?? (isIP(host) ? '' : host),
      secureContext: this.secureContext,
      session: this.tlsSession,
    });
    socket.on('session', (session: Buffer) => {
      if (socket.authorized) this.tlsSession = session;
    });
    return socket;
  }

  url(operation: string, query?: WireParams): string {
    const qs = query ? formBody(query) : '';
    return `${this.baseUrl}/api/v1/${operation}${qs ? `?${qs}` : ''}`;
  }

  /** Sends a request and answers the raw response; only failures to get any answer throw here. */
  async send(
    operation: string, method: 'GET' | 'POST', params: WireParams, headers: Record<string, string>, form?: FormData,
  ): Promise<RawResponse> {
    const isPost = method === 'POST';
    // A multipart form carries its own content type (with the boundary); the params then go in the query.
    const contentType: Record<string, string> = isPost && !form ? { 'content-type': 'application/x-www-form-urlencoded' } : {};
    let sent = false;
    try {
      const response = await request(isPost && !form ? this.url(operation) : this.url(operation, params), {
        method,
        dispatcher: this.dispatcher,
        headers: { accept: 'application/json', ...headers, ...contentType },
        body: form ?? (isPost ? formBody(params) : undefined),
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      sent = true;
      return { status: response.statusCode, headers: response.headers, body: response.body };
    } catch (error) {
      // Refused or unreachable connections never carried the request; anything else may have.
      const code = (error as { code?: string }).code ?? '';
      sent = sent || !['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH'].includes(code);
      throw new TransportError(operation, error, sent);
    }
  }

  /** Reads a JSON answer: the result, `undefined` for an empty 200, or the matching error thrown. */
  async readJson(operation: string, response: RawResponse): Promise<unknown> {
    const text = await response.body.text();
    const contentType = String(response.headers['content-type'] ?? '');
    if (response.status === 200 && text === '') return undefined;
    let body: unknown;
    try {
      body = parseWireJson(text);
    } catch {
      throw new ResponseFormatError(operation, response.status, contentType, text.slice(0, 200));
    }
    const isError = typeof body === 'object' && body !== null && (body as { object?: unknown }).object === 'error';
    if (isError || response.status !== 200) {
      if (!isError) throw new ResponseFormatError(operation, response.status, contentType, text.slice(0, 200));
      const retryAfter = response.headers['retry-after'];
      throw errorFromObject(body as { type?: unknown; extra?: unknown }, response.status, operation,
        Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
    }
    return body;
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }
}
