import { pino, type Logger } from 'pino';
import type WebSocket from 'ws';
import { GroupsClient, parseWireJson, type Credentials, type GroupsClientOptions } from '../../src/api/index.js';
import { admin, DEMO, send, type DemoUser, type TestService } from './service.js';

/**
 * Helpers for testing the typed client (src/api) against the local service: clients with fast retries
 * that are all closed at the end, a pino logger that keeps its lines in memory, and small readers of the
 * service's admin API (faults applied, the service clock).
 */

/** Quick backoff so retried calls finish fast; Retry-After (at least 1 s from the service) still applies. */
export const FAST_RETRY = { baseDelayMs: 5, maxDelayMs: 2000, maxTimeMs: 10_000 } as const;

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export interface LogCapture {
  logger: Logger;
  lines: LogLine[];
  /** The `retrying` lines, optionally of one operation. */
  retries(operation?: string): LogLine[];
  /** Lines with this message. */
  withMessage(msg: string): LogLine[];
}

/** A debug-level pino logger writing JSON lines into an array (pino takes any object with write()). */
export function captureLog(): LogCapture {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
  const withMessage = (msg: string) => lines.filter((line) => line.msg === msg);
  return {
    logger,
    lines,
    withMessage,
    retries: (operation) => withMessage('retrying').filter((line) => operation === undefined || line.operation === operation),
  };
}

export type Who = DemoUser | Credentials;

/** Makes clients for one service and closes them all at the end. */
export class Clients {
  private readonly open: GroupsClient[] = [];

  constructor(private readonly svc: () => TestService) {}

  make(who: Who, options: Partial<GroupsClientOptions> = {}): GroupsClient {
    const credentials: Credentials = typeof who === 'string' ? { email: DEMO[who][0], password: DEMO[who][1] } : who;
    const client = new GroupsClient({
      baseUrl: this.svc().baseUrl, ca: this.svc().service.ca, credentials, ...options, retry: { ...FAST_RETRY, ...options.retry },
    });
    this.open.push(client);
    return client;
  }

  /** A client authenticated by a fresh API token of `who` (made through the admin API), and that token's csrf. */
  async withToken(who: DemoUser, scheme?: 'basic' | 'bearer', options: Partial<GroupsClientOptions> = {}) {
    const made = await admin(this.svc(), 'tokens', { user: DEMO[who][0] });
    const client = this.make({ token: made.body.token as string, scheme }, options);
    return { client, token: made.body.token as string, csrf: String(made.body.csrf) };
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.open.splice(0).map((client) => client.close()));
  }
}

/** How many injected faults the service has applied so far (GET /_admin/stats). */
export async function faultsApplied(svc: TestService): Promise<number> {
  const stats = await send(svc, '/_admin/stats', 'GET', { authorization: `Bearer ${svc.service.adminToken}` });
  return stats.body.faults.errors as number;
}

/** The service clock's current time. */
export async function serviceNow(svc: TestService): Promise<Date> {
  const answer = await admin(svc, 'clock/advance', { seconds: 0 });
  return new Date(answer.body.now as string);
}

/** Records the operation of every request the client's transport sends. */
export function recordSends(client: GroupsClient): string[] {
  const sent: string[] = [];
  const transport = client.transport;
  const original = transport.send.bind(transport);
  transport.send = (operation, ...rest) => {
    sent.push(operation);
    return original(operation, ...rest);
  };
  return sent;
}

/** Every value under an id key (`id`, `*_id`) in a result, with its path. */
export function idValues(value: unknown, path = '$'): Array<{ path: string; value: unknown }> {
  if (Array.isArray(value)) return value.flatMap((item, index) => idValues(item, `${path}[${index}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => [
    ...(key === 'id' || key.endsWith('_id') ? [{ path: `${path}.${key}`, value: inner }] : []),
    ...idValues(inner, `${path}.${key}`),
  ]);
}

/** Collects a chat socket's text frames (parsed keeping every digit) and waits for a number of them. */
export function collectFrames(ws: WebSocket) {
  const frames: any[] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (data) => {
    frames.push(parseWireJson(String(data)));
    for (const wake of [...waiters]) wake();
  });
  return {
    frames,
    waitFor(count: number, timeoutMs = 5000): Promise<any[]> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (frames.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(frames.slice(0, count));
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${count} frames; got ${frames.length}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

/** Closes a socket and waits until it is closed. */
export function closeSocket(ws: WebSocket): Promise<void> {
  if (ws.readyState === ws.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    ws.once('close', () => resolve());
    ws.terminate();
  });
}
