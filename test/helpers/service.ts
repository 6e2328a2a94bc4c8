import { parse as parseLossless, isSafeNumber } from 'lossless-json';
import { pino } from 'pino';
import { Agent, request, type Dispatcher } from 'undici';
import { LocalService, type LocalServiceOptions } from '../../src/service/local-service.js';

/**
 * Test harness: a local service over real HTTPS on an ephemeral port, and small helpers that speak
 * HTTP to it directly (undici), so the service is checked against the spec and not only our client.
 */
export interface TestService {
  service: LocalService;
  baseUrl: string;
  dispatcher: Agent;
  close(): Promise<void>;
}

export async function startTestService(options: LocalServiceOptions = {}): Promise<TestService> {
  const service = await LocalService.start({
    logger: pino({ level: process.env.GROUPWIRE_TEST_LOG ?? 'silent' }),
    rateLimit: null,
    upgradeRateLimit: null,
    ...options,
  });
  const dispatcher = new Agent({ connect: { ca: service.ca } });
  return {
    service,
    baseUrl: service.baseUrl,
    dispatcher,
    async close() {
      await dispatcher.close();
      await service.close();
    },
  };
}

export interface Session {
  cookie: string;
  csrf: string;
  token?: string;
  user: Record<string, unknown>;
}

export interface ApiResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed keeping every digit: integers beyond 2^53 become strings. */
  body: any;
}

/** Parses JSON without losing digits: unsafe integers come back as their decimal strings. */
export function parseJson(text: string): any {
  return parseLossless(text, undefined, (value) => (isSafeNumber(value) ? Number(value) : value));
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'HEAD';
  /** Auth: a logged-in session (cookie), or a token with a scheme, or nothing. */
  auth?: Session | { bearer: string } | { basic: string } | null;
  /** Add the session's csrf to POST bodies (default true for POST with a session). */
  csrf?: boolean | string;
  headers?: Record<string, string>;
  body?: string | FormData;
}

export async function call(svc: TestService, operation: string, params: Record<string, unknown> = {}, options: CallOptions = {}): Promise<ApiResponse> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { ...options.headers };
  const auth = options.auth;
  if (auth && 'cookie' in auth) headers.cookie = auth.cookie;
  if (auth && 'bearer' in auth) headers.authorization = `Bearer ${auth.bearer}`;
  if (auth && 'basic' in auth) headers.authorization = `Basic ${Buffer.from(`${auth.basic}:`).toString('base64')}`;
  const values: Record<string, string> = {};
  for (const [key, value] of Object.entries(params)) if (value !== undefined) values[key] = String(value);
  if (method === 'POST' && options.csrf !== false && !('csrf' in values)) {
    if (typeof options.csrf === 'string') values.csrf = options.csrf;
    else if (auth && 'csrf' in auth) values.csrf = auth.csrf;
  }
  let path = `/api/v1/${operation}`;
  let body: string | FormData | undefined = options.body;
  if (method === 'POST' && body === undefined) {
    body = new URLSearchParams(values).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else if (Object.keys(values).length > 0) {
    path += `?${new URLSearchParams(values).toString()}`;
  }
  return send(svc, path, method, headers, body);
}

export async function send(
  svc: TestService, path: string, method: Dispatcher.HttpMethod, headers: Record<string, string>, body?: string | FormData,
): Promise<ApiResponse> {
  const response = await request(`${svc.baseUrl}${path}`, { method, headers, body: body as never, dispatcher: svc.dispatcher });
  const text = await response.body.text();
  let parsed: unknown;
  try {
    parsed = text ? parseJson(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.statusCode, headers: response.headers, text, body: parsed };
}

export async function login(svc: TestService, email: string, password: string, extra: Record<string, string> = {}): Promise<Session> {
  const response = await call(svc, 'login', { email, password, ...extra }, { method: 'POST', csrf: false });
  if (response.status !== 200) throw new Error(`login of ${email} failed: ${response.status} ${response.text}`);
  const cookies = ([] as string[]).concat(response.headers['set-cookie'] ?? []);
  const cookie = cookies.map((c) => c.split(';')[0]).join('; ');
  return { cookie, csrf: response.body.user.csrf_token, token: response.body.token, user: response.body.user };
}

export const DEMO = {
  alice: ['alice@example.com', 'alice-demo'],
  mo: ['mo@example.com', 'mo-demo'],
  bob: ['bob@example.com', 'bob-demo'],
  carol: ['carol@example.com', 'carol-demo'],
  bot: ['bot@example.com', 'bot-demo'],
  dave: ['dave@example.com', 'dave-demo'],
} as const;

export type DemoUser = keyof typeof DEMO;

/** The demo accounts' e-mail addresses by name. */
export const EMAILS = Object.fromEntries(Object.entries(DEMO).map(([who, [email]]) => [who, email])) as Record<DemoUser, string>;

/** The body of a 200 answer; anything else fails the test with the answer's text. */
export function ok(response: ApiResponse): any {
  if (response.status !== 200) throw new Error(`expected 200, got ${response.status} ${response.text}`);
  return response.body;
}

export async function loginAs(svc: TestService, who: DemoUser, extra: Record<string, string> = {}): Promise<Session> {
  const [email, password] = DEMO[who];
  return login(svc, email, password, extra);
}

/** Calls the admin API (JSON in, JSON out). */
export async function admin(svc: TestService, path: string, body: unknown = {}): Promise<ApiResponse> {
  return send(svc, `/_admin/${path}`, 'POST', {
    authorization: `Bearer ${svc.service.adminToken}`,
    'content-type': 'application/json',
  }, JSON.stringify(body));
}

/** Expects an error object of the given type (and extra, when given). */
export function expectError(response: ApiResponse, type: string, extra?: string, status = type === 'rate_limit' ? 429 : 400): void {
  const ok = response.status === status && response.body?.object === 'error' && response.body?.type === type &&
    (extra === undefined || response.body?.extra === extra);
  if (!ok) {
    throw new Error(`expected ${status} ${type}${extra !== undefined ? ` "${extra}"` : ''}, got ${response.status} ${response.text}`);
  }
}
