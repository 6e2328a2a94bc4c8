import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { z } from 'zod';
import { acceptMultipart, isMultipart } from '../../src/index.js';
import { authenticate, authenticateStreaming, mayUse, type SignedContent, type Verdict } from './auth.js';
import { downloadHeaders } from './download.js';
import { isOneLineName, stripControls, USERNAME_MAX, type FilePayload } from './line.js';
import { readUpload, UploadRefused, type Upload } from './multipart.js';
import type { ClientOptions, HttpApiOptions } from './options.js';
import type { Admission } from './replay.js';
import type { Page } from './stream-log.js';
import type { PostedFile, UploadDir } from './uploads.js';

/** A POST's body (fields other tools add are ignored). With files (multipart) the text may be empty. */
export function postBodySchema(textMax: number, withFiles = false) {
  const text = z.string().max(textMax, `at most ${textMax} characters`);
  return z.object({
    text: withFiles ? text.default('') : text.refine((given) => stripControls(given).trim() !== '', 'must not be empty'),
    username: z.string()
      .max(USERNAME_MAX, `at most ${USERNAME_MAX} characters`)
      .refine(isOneLineName, 'one line: no line breaks, control characters or bidirectional controls')
      .optional(),
    kind: z.enum(['message', 'action']).default('message'),
    reply_to: z.string().min(1).max(255).optional(),
  });
}
export type PostBody = z.output<ReturnType<typeof postBodySchema>>;

/** What an answer is: a status and a JSON body, and whether it is a replay of an Idempotency-Key's first answer. */
export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** What the routes ask of the plugin. */
export interface ApiHandlers {
  /** The channels the plugin's gateways use now. */
  channels(): string[];
  /** A POST; `files` (a multipart POST's, in `uploads`) are the handler's from here: queued with the line, or removed. */
  post(client: ClientOptions, channel: string, body: PostBody, idempotencyKey: string | undefined, files?: PostedFile[]): Promise<Answer>;
  /** Where a multipart POST's files are written. */
  uploads: UploadDir;
  /** A file of a line sent to `channel` (by id and name), opened: unknown to the channel's kept lines, or gone from the media store. */
  file(channel: string, id: string, name: string): Promise<{ file: FilePayload; bytes: Readable } | 'unknown' | 'gone'>;
  replay(client: ClientOptions, idempotencyKey: string): Answer | undefined;
  page(channel: string, after: number, limit: number): Page & { last: number };
  stream(channel: string, response: ServerResponse, position: number | undefined): void;
  /** A signed request's signature, taken once within the window (replay.ts); with how long to wait when full. */
  admitSignature(signature: string, timestamp: number): { admission: Admission; retryAfterS: number };
  refused(): void;
}

const json = (reply: FastifyReply, answer: Answer) => reply.code(answer.status).headers(answer.headers ?? {}).send(answer.body);
const error = (reply: FastifyReply, status: number, message: string, extra: Record<string, unknown> = {}) => json(reply, { status, body: { error: message, ...extra } });

/** A sequence number as Last-Event-ID or `after` give it. */
const position = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const pageQuery = z.object({ after: position.default(0), limit: z.coerce.number().int().min(1).max(1_000).default(100) });
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The HTTP side: fastify (v5) with the routes of docs/plugins/http-api.md. Every route but /health is
 * authenticated (auth.ts) before anything else is looked at, so an unauthenticated caller learns
 * nothing, not even which channels exist. JSON bodies are read as text: the HMAC is over the bytes sent.
 */
export function buildServer(options: HttpApiOptions, configDir: string, log: Logger, handlers: ApiHandlers): FastifyInstance {
  const app = Fastify({
    logger: false,
    // A stop closes every connection at once: keep-alive ones a client holds open would otherwise hold up
    // the bot's stop for the client's idle timeout. A request cut short is answered by no one, so its
    // client sends it again (with its Idempotency-Key, safely).
    forceCloseConnections: true,
    // The text limit, in UTF-8 bytes at worst, and room for the other fields.
    bodyLimit: options.text_max * 4 + 16_384,
    ...(options.tls ? {
      https: { cert: readFileSync(resolve(configDir, options.tls.cert_file)), key: readFileSync(resolve(configDir, options.tls.key_file)) },
    } : {}),
  }) as unknown as FastifyInstance; // With `https` fastify's type is another instance type; the routes are the same.
  const postBody = postBodySchema(options.text_max);
  const postBodyWithFiles = postBodySchema(options.text_max, true);
  // Multipart POSTs (files): read by the route itself, part by part (multipart.ts).
  acceptMultipart(app);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.setErrorHandler((failure: { statusCode?: number; message: string }, _request, reply) => {
    const status = failure.statusCode ?? 500;
    if (status >= 500) log.error({ err: failure }, 'the HTTP API failed to answer a request');
    void error(reply, status, status >= 500 ? 'internal error' : failure.message);
  });
  app.setNotFoundHandler((_request, reply) => void error(reply, 404, 'no such route'));

  /** The caller, or an answer already sent (401, 403, 404, 503). */
  const caller = (request: FastifyRequest<{ Params: { channel: string } }>, reply: FastifyReply, body: string): ClientOptions | undefined => {
    // The target as the client sent it (path and query): the signature covers it, so it names one channel.
    const content: SignedContent = { method: request.method, target: request.url, body };
    return admit(request, reply, authenticate(options.clients, request.headers, content));
  };

  /** The caller authenticated (`verdict`): a signature taken once, a channel it may use; else an answer is sent. */
  const admit = (request: FastifyRequest<{ Params: { channel: string } }>, reply: FastifyReply, verdict: Verdict): ClientOptions | undefined => {
    if ('status' in verdict) {
      handlers.refused();
      void error(reply.header('www-authenticate', 'Bearer'), 401, verdict.error);
      return undefined;
    }
    if (verdict.signed) {
      const { admission, retryAfterS } = handlers.admitSignature(verdict.signed.signature, verdict.signed.timestamp);
      if (admission === 'seen') {
        handlers.refused();
        void error(reply, 401, 'this signature was already used: a signed request is taken once; sign each request, and each retry, afresh (a new X-Timestamp; a retry keeps its Idempotency-Key)');
        return undefined;
      }
      if (admission === 'full') {
        handlers.refused();
        void error(reply.header('retry-after', String(retryAfterS)), 503, 'too many signed requests within the signature window to remember them all: try again later');
        return undefined;
      }
    }
    const { channel } = request.params;
    if (!mayUse(verdict.client, channel)) {
      void error(reply, 403, `client ${verdict.client.name} may not use channel ${channel}`);
      return undefined;
    }
    if (!handlers.channels().includes(channel)) {
      void error(reply, 404, `no channel ${channel}`);
      return undefined;
    }
    return verdict.client;
  };

  app.get('/health', async () => ({ ok: true }));

  /**
   * A POST with files: authenticated before the body is read when it can be (a bearer token), else once
   * it was read (a signature over the bytes sent; the files written meanwhile are removed if it fails).
   * An Idempotency-Key seen before is answered as the first time, and its files are not kept.
   */
  const postMultipart = async (request: FastifyRequest<{ Params: { channel: string } }>, reply: FastifyReply) => {
    const key = request.headers['idempotency-key'];
    if (Array.isArray(key) || (key !== undefined && !IDEMPOTENCY_KEY.test(key))) {
      return error(reply, 400, 'Idempotency-Key: one value of 1 to 255 printable ASCII characters', { field: 'Idempotency-Key' });
    }
    const check = authenticateStreaming(options.clients, request.headers, { method: request.method, target: request.url });
    let client: ClientOptions | undefined;
    if (!('finish' in check)) {
      client = admit(request, reply, check);
      if (!client) return reply;
      const first = key !== undefined ? handlers.replay(client, key) : undefined;
      if (first) return json(reply, { ...first, headers: { ...first.headers, 'idempotent-replayed': 'true' } });
    }
    let upload: Upload;
    try {
      upload = await readUpload(request, {
        uploads: handlers.uploads, fileMax: options.file_max, fieldMax: options.text_max * 4 + 1_024, ...('finish' in check ? { tap: (chunk: Buffer) => check.update(chunk) } : {}),
      });
    } catch (failure) {
      if (!(failure instanceof UploadRefused)) throw failure;
      // A refused body was not read to its end: the connection is not kept for another request.
      return error(reply.header('connection', 'close'), failure.status, failure.message, failure.field !== undefined ? { field: failure.field } : {});
    }
    const drop = () => handlers.uploads.remove(upload.files.map((file) => file.file));
    if ('finish' in check) {
      client = admit(request, reply, check.finish());
      const first = client && key !== undefined ? handlers.replay(client, key) : undefined;
      if (!client || first) {
        await drop();
        return first ? json(reply, { ...first, headers: { ...first.headers, 'idempotent-replayed': 'true' } }) : reply;
      }
    }
    const body = postBodyWithFiles.safeParse(upload.fields);
    const empty = body.success && upload.files.length === 0 && stripControls(body.data.text).trim() === '';
    if (!body.success || empty) {
      await drop();
      if (empty) return error(reply, 400, 'text: must not be empty (or send a file)', { field: 'text' });
      const issue = body.error!.issues[0]!;
      const field = issue.path.join('.') || 'body';
      return error(reply, 400, `${field}: ${issue.message}`, { field });
    }
    return json(reply, await handlers.post(client!, request.params.channel, body.data, key, upload.files));
  };

  app.post<{ Params: { channel: string }; Body: string }>('/gateways/:channel/messages', async (request, reply) => {
    if (isMultipart(request)) return postMultipart(request, reply);
    const raw = typeof request.body === 'string' ? request.body : '';
    const client = caller(request, reply, raw);
    if (!client) return reply;
    const key = request.headers['idempotency-key'];
    if (Array.isArray(key) || (key !== undefined && !IDEMPOTENCY_KEY.test(key))) {
      return error(reply, 400, 'Idempotency-Key: one value of 1 to 255 printable ASCII characters', { field: 'Idempotency-Key' });
    }
    const first = key !== undefined ? handlers.replay(client, key) : undefined;
    if (first) return json(reply, { ...first, headers: { ...first.headers, 'idempotent-replayed': 'true' } });
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return error(reply, 400, 'the body is not JSON (send Content-Type: application/json and a JSON object)', { field: 'body' });
    }
    const body = postBody.safeParse(parsed);
    if (!body.success) {
      const issue = body.error.issues[0]!;
      const field = issue.path.join('.') || 'body';
      return error(reply, 400, `${field}: ${issue.message}`, { field });
    }
    return json(reply, await handlers.post(client, request.params.channel, body.data, key));
  });

  app.get<{ Params: { channel: string }; Querystring: Record<string, string> }>('/gateways/:channel/messages', async (request, reply) => {
    if (!caller(request, reply, '')) return reply;
    const query = pageQuery.safeParse(request.query);
    if (!query.success) {
      const field = query.error.issues[0]!.path.join('.');
      return error(reply, 400, `${field}: ${query.error.issues[0]!.message}`, { field });
    }
    const page = handlers.page(request.params.channel, query.data.after, query.data.limit);
    const messages = page.entries.map((entry) => ({ seq: entry.seq, ...entry.line }));
    return { messages, reset: page.reset, next: messages.at(-1)?.seq ?? (page.reset ? page.last : query.data.after), last: page.last };
  });

  app.get<{ Params: { channel: string }; Querystring: Record<string, string> }>('/gateways/:channel/events', async (request, reply) => {
    if (!caller(request, reply, '')) return reply;
    const given = request.headers['last-event-id'] ?? request.query.after;
    let at: number | undefined;
    if (given !== undefined) {
      const parsed = position.safeParse(given);
      if (!parsed.success) return error(reply, 400, 'Last-Event-ID (or after) must be an event id: a whole number', { field: 'Last-Event-ID' });
      at = parsed.data;
    }
    // The stream is written to the socket directly, for as long as the client stays.
    reply.hijack();
    handlers.stream(request.params.channel, reply.raw, at);
    return reply;
  });

  app.get<{ Params: { channel: string; id: string; name: string } }>('/gateways/:channel/files/:id/:name', async (request, reply) => {
    if (!caller(request, reply, '')) return reply;
    const found = await handlers.file(request.params.channel, request.params.id, request.params.name);
    if (found === 'unknown') return error(reply, 404, 'no such file in this channel');
    if (found === 'gone') return error(reply, 404, 'the file is no longer kept (the media store\'s retention removed it)');
    return reply.code(200).headers(downloadHeaders(found.file)).send(found.bytes);
  });

  return app;
}

/** The address the server listens on, as a URL. */
export function urlOf(app: FastifyInstance, tls: boolean): string {
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `${tls ? 'https' : 'http'}://${host}:${address.port}`;
}
