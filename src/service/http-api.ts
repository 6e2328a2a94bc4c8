import '@fastify/multipart'; // its types add request.parts() and isMultipart()
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Caller } from './auth.js';
import type { ServiceCore } from './core.js';
import { applyFaultsAndLimits } from './caller-limits.js';
import { ApiError } from './errors.js';
import { toWireJson } from './json.js';
import { EMPTY_OK, FileResult, type Operation, type UploadedFile } from './operation.js';
import { Params } from './params.js';

/** Our decision: the largest attachment addattachments takes, and how many files one call may carry. */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
const MAX_FILES_PER_CALL = 10;

interface Incoming {
  params: Params;
  files: UploadedFile[];
}

/**
 * Mounts every operation under /api/v1/. One wrapper does what all calls share, in this order:
 * injected faults, the per-caller rate limit, the method, authentication, csrf on POST, then the
 * operation, and `extended` on the way out.
 */
export function mountApi(app: FastifyInstance, core: ServiceCore, operations: Operation[], log: Logger): void {
  const byName = new Map(operations.map((op) => [op.name, op]));

  app.all('/api/v1/:operation', async (request, reply) => {
    const name = (request.params as { operation: string }).operation;
    // Unknown names are counted together, so a caller cannot grow the map without bound.
    const counted = name === 'login' || byName.has(name) ? name : '(unknown)';
    core.apiCalls.set(counted, (core.apiCalls.get(counted) ?? 0) + 1);
    try {
      await applyFaultsAndLimits(core, request, name);
      if (name === 'login') return await login(core, request, reply);
      if (name === 'facebooklogin' || name === 'googlelogin') {
        throw new ApiError('bad_request', `${name} is not supported by the local service; use login`);
      }
      const op = byName.get(name);
      if (!op) {
        throw new ApiError('bad_request', `unknown operation ${name}`, { status: 404 });
      }
      if (request.method !== op.method) {
        throw new ApiError('bad_request', `${name} takes ${op.method}, not ${request.method}`);
      }
      const caller = core.auth.authenticate({
        authorization: request.headers.authorization,
        cookieHeader: request.headers.cookie,
      });
      const { params, files } = await readParams(request);
      if (op.method === 'POST') core.auth.checkCsrf(caller, params.string('csrf'));
      const extended = params.boolean('extended') ?? false;
      const result = await op.run({ core, params, caller, files });
      return send(core, reply, result, extended ? caller : undefined);
    } catch (error) {
      return sendError(core, reply, error, log, name);
    }
  });
}

async function readParams(request: FastifyRequest): Promise<Incoming> {
  const query = request.query as Record<string, unknown>;
  if (!request.isMultipart()) {
    const body = typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {};
    return { params: new Params(query, body), files: [] };
  }
  const fields: Record<string, string> = {};
  const files: UploadedFile[] = [];
  for await (const part of request.parts({ limits: { fileSize: MAX_ATTACHMENT_BYTES, files: MAX_FILES_PER_CALL } })) {
    if (part.type === 'file') {
      const data = await part.toBuffer();
      files.push({ filename: part.filename || 'attachment', mediaType: part.mimetype || 'application/octet-stream', data });
    } else if (typeof part.value === 'string') {
      fields[part.fieldname] = part.value;
    }
  }
  return { params: new Params(query, fields), files };
}

async function login(core: ServiceCore, request: FastifyRequest, reply: FastifyReply) {
  // The real service accepts the fields as a form body, in the query string, and by GET.
  const { params } = await readParams(request);
  const session = core.auth.login(
    params.string('email'),
    params.string('password'),
    params.string('twofactor'),
    params.boolean('token') ?? false,
  );
  const user = core.store.users.get(session.userId)!;
  reply.header('set-cookie', core.auth.sessionCookie(session));
  const result: Record<string, unknown> = { user: core.present.user(user, session.csrf) };
  if (session.token) result.token = session.token;
  return send(core, reply, result, undefined);
}

function send(core: ServiceCore, reply: FastifyReply, result: unknown, extendedFor: Caller | undefined) {
  if (result instanceof FileResult) {
    reply.header('content-type', result.contentType);
    reply.header('content-disposition', contentDisposition(result.filename));
    return reply.send(result.stream);
  }
  if (result === EMPTY_OK && !extendedFor) return reply.code(200).send('');
  let body = result === EMPTY_OK ? { object: 'success', extra: '' } : result;
  if (extendedFor) body = [body, core.present.user(extendedFor.user, extendedFor.session.csrf)];
  reply.header('content-type', 'application/json; charset=utf-8');
  return reply.send(toWireJson(body, core.store.idStyle));
}

export function sendError(core: ServiceCore, reply: FastifyReply, error: unknown, log: Logger, operation: string) {
  let apiError: ApiError;
  if (error instanceof ApiError) apiError = error;
  else if (isClientError(error)) apiError = new ApiError('bad_request', error.message);
  else {
    log.error({ err: error, operation }, 'operation failed');
    apiError = new ApiError('server', 'server problem; try again later');
  }
  reply.code(apiError.status);
  for (const [name, value] of Object.entries(apiError.headers)) reply.header(name, value);
  reply.header('content-type', 'application/json; charset=utf-8');
  return reply.send(toWireJson(apiError.toBody(), core.store.idStyle));
}

/** Errors fastify and its plugins raise for a malformed request (bad body, file too large, ...). */
function isClientError(error: unknown): error is Error & { statusCode: number } {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return error instanceof Error && typeof status === 'number' && status >= 400 && status < 500;
}

/** RFC 6266: a plain ASCII fallback name and the exact name percent-encoded. */
export function contentDisposition(filename: string, disposition = 'attachment'): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
