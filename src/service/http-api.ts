import { METHODS } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { isMultipart } from '../media/multipart-parts.js';
import type { Caller } from './auth.js';
import type { ServiceCore } from './core.js';
import { applyFaultsAndLimits } from './caller-limits.js';
import { answerUnparsableRequests, asCallerMistake } from './caller-mistakes.js';
import { ApiError, badRequest } from './errors.js';
import { decodeForm, queryOf, type DecodedParams } from './form-decoding.js';
import { toWireJson } from './json.js';
import { MULTIPART_BODY_LIMIT, readMultipart } from './multipart-upload.js';
import { EMPTY_OK, FileResult, type Operation, type UploadedFile } from './operation.js';
import { Params } from './params.js';
import { checkBodyHeaders, hasBody, installBodyParsers, LOGIN_BODY_LIMIT, OPERATION_BODY_LIMIT } from './request-body.js';
import { cleanFileName } from './text-rules.js';

export { MAX_ATTACHMENT_BYTES } from './multipart-upload.js';

/** Our decision: the operations that take files (multipart/form-data). The spec shows no others. */
const TAKES_FILES = new Set(['addattachments']);

interface Incoming {
  params: Params;
  files: UploadedFile[];
}

/** What the checks made of a request before its body was read. */
interface Admitted {
  name: string;
  /** Undefined for login, which authenticates nobody yet. */
  op?: Operation;
  caller?: Caller;
}

/**
 * Mounts every operation under /api/v1/. Before any of the body is read, one gate does what all calls
 * share, in this order: injected faults, the per-caller rate limit, the operation and method,
 * authentication, and whether the body's headers suit the call. The handler then reads the body, checks
 * csrf on POST (for uploads, before the first file), runs the operation and applies `extended` on the
 * way out. Every failure, the framework's own included, is the spec's error object with HTTP 400
 * (429 for rate limits).
 */
export function mountApi(app: FastifyInstance, core: ServiceCore, operations: Operation[], log: Logger): void {
  const byName = new Map(operations.map((op) => [op.name, op]));
  const admitted = new WeakMap<FastifyRequest, Admitted>();
  installBodyParsers(app);
  answerUnparsableRequests(app.server, log);
  acceptEveryMethod(app);

  const gate = async (request: FastifyRequest) => {
    const name = operationName(request);
    // Unknown names are counted together, so a caller cannot grow the map without bound.
    const counted = name === 'login' || byName.has(name) ? name : '(unknown)';
    core.apiCalls.set(counted, (core.apiCalls.get(counted) ?? 0) + 1);
    await applyFaultsAndLimits(core, request, name);
    if (name === 'login') {
      checkBodyHeaders(request, { operation: name, takesFiles: false, limit: LOGIN_BODY_LIMIT });
      admitted.set(request, { name });
      return;
    }
    if (name === 'facebooklogin' || name === 'googlelogin') {
      throw badRequest(`${name} is not supported by the local service; use login`);
    }
    const op = byName.get(name);
    if (!op) throw badRequest(name === '' ? 'no operation named in the path' : `unknown operation ${name}`);
    // A read answers POST too, like the real service (public report scripts POST their reads, with no csrf).
    const readByPost = op.method === 'GET' && request.method === 'POST';
    if (request.method !== op.method && !readByPost) throw badRequest(`${name} takes ${op.method}, not ${request.method}`);
    const caller = core.auth.authenticate({ authorization: request.headers.authorization, cookieHeader: request.headers.cookie });
    const takesFiles = TAKES_FILES.has(name);
    checkBodyHeaders(request, { operation: name, takesFiles, limit: takesFiles ? MULTIPART_BODY_LIMIT : OPERATION_BODY_LIMIT });
    admitted.set(request, { name, op, caller });
  };

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const { op, caller } = admitted.get(request)!;
    if (!op || !caller) return login(core, request, reply);
    const csrfOnPost = op.method === 'POST' ? (params: Params) => core.auth.checkCsrf(caller, params.string('csrf')) : undefined;
    const { params, files } = await readParams(request, csrfOnPost);
    csrfOnPost?.(params);
    const extended = params.boolean('extended') ?? false;
    const result = await op.run({ core, params, caller, files });
    // A browser drops the ended session's cookies (logout, our extension).
    if (op.name === 'logout') reply.header('set-cookie', core.auth.endedCookies());
    // Injected fault: the change is stored, the answer never arrives (a network cut after the work).
    if (core.faults.loseAnswer(op.name)) {
      request.raw.socket.destroy();
      return reply.hijack();
    }
    return send(core, reply, result, extended ? caller : undefined);
  };

  const errorHandler = (error: Error, request: FastifyRequest, reply: FastifyReply) =>
    sendError(core, reply, error, log, operationName(request));
  const route = (url: string, bodyLimit: number) =>
    app.route({ method: app.supportedMethods, url, bodyLimit, onRequest: gate, handler, errorHandler });
  route('/api/v1/login', LOGIN_BODY_LIMIT);
  route('/api/v1/:operation', OPERATION_BODY_LIMIT);

  // Any other path, with any method: the error object, not the framework's 404.
  app.route({
    method: app.supportedMethods,
    url: '/*',
    handler: async (request, reply) => sendError(core, reply, badRequest(`no such path ${request.url.split('?')[0]}`), log, 'http'),
  });
}

function operationName(request: FastifyRequest): string {
  if (request.routeOptions.url === '/api/v1/login') return 'login';
  return (request.params as { operation?: string } | undefined)?.operation ?? 'http';
}

/**
 * Lets every method Node's parser knows reach the routes, so that `PROPFIND /api/v1/getchats` is
 * answered "getchats takes GET, not PROPFIND" rather than falling through to a not-found answer.
 * CONNECT is Node's own business (a tunnel, not a request).
 */
function acceptEveryMethod(app: FastifyInstance): void {
  for (const method of METHODS) {
    if (method === 'CONNECT' || app.supportedMethods.includes(method)) continue;
    app.addHttpMethod(method, { hasBody: true });
  }
}

/**
 * The call's parameters: the query string and the body merged (the body wins), both decoded strictly.
 * A multipart body (only a call that takes files gets this far with one) is read part by part, with
 * `beforeFirstFile` run on the parameters known before the first file.
 */
async function readParams(request: FastifyRequest, beforeFirstFile?: (params: Params) => void): Promise<Incoming> {
  const query = decodeForm(queryOf(request.url), 'query string');
  if (!isMultipart(request)) {
    const body = request.body;
    if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) {
      throw badRequest('a JSON body must be an object');
    }
    return { params: new Params(query, body as Record<string, unknown> | undefined), files: [] };
  }
  const { fields, files } = await readMultipart(
    request,
    (soFar: DecodedParams) => {
      try {
        beforeFirstFile?.(new Params(query, soFar));
      } catch (error) {
        // The csrf may not come after the files: they would have to be read to find it.
        if (error instanceof ApiError && error.extra === 'csrf missing') {
          throw new ApiError('bad_csrf', 'csrf missing (it must come before the first file)');
        }
        throw error;
      }
    },
    cleanFileName,
  );
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

/**
 * Answers a failure as the spec's error object. A caller's mistake (ours, or one fastify or a plugin
 * raised) is logged at debug; anything else is a failure of the service: `server`, logged at error.
 * When the request's body was not read to its end (refused before or while reading it), the connection
 * is closed after the answer, so the rest of the body is never read.
 */
export function sendError(core: ServiceCore, reply: FastifyReply, error: unknown, log: Logger, operation: string) {
  let apiError = asCallerMistake(error);
  if (apiError) {
    log.debug({ operation, type: apiError.type, extra: apiError.extra }, 'request refused');
  } else {
    log.error({ err: error, operation }, 'operation failed');
    apiError = new ApiError('server', 'server problem; try again later');
  }
  reply.code(apiError.status);
  for (const [name, value] of Object.entries(apiError.headers)) reply.header(name, value);
  if (hasBody(reply.request) && !reply.request.raw.complete) reply.header('connection', 'close');
  reply.header('content-type', 'application/json; charset=utf-8');
  return reply.send(toWireJson(apiError.toBody(), core.store.idStyle));
}

/** RFC 6266: a plain ASCII fallback name and the exact name percent-encoded. */
export function contentDisposition(filename: string, disposition = 'attachment'): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
