import type { ClientRequest, IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { parseJson, type Session, type TestService } from './service.js';

/**
 * Test helpers for the `chatdata` websocket: a socket that records every frame from the moment it is
 * created (so history sent right after the handshake is never missed), event waits with timeouts, and
 * a way to read a refused upgrade's HTTP answer.
 */

export interface ChatdataQuery {
  chatsub_id?: string;
  csrf?: string;
  no_history?: string;
  [name: string]: string | undefined;
}

export type ChatdataAuth = Session | { bearer: string } | null;

export const CHATDATA_PATH = '/api/v1/chatdata';

export function chatdataUrl(svc: TestService, query: ChatdataQuery, path = CHATDATA_PATH): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, value);
  const qs = search.toString();
  return `${svc.baseUrl.replace(/^https/, 'wss')}${path}${qs ? `?${qs}` : ''}`;
}

function authHeaders(auth: ChatdataAuth): Record<string, string> {
  if (!auth) return {};
  if ('bearer' in auth) return { authorization: `Bearer ${auth.bearer}` };
  return { cookie: auth.cookie };
}

export interface CloseInfo {
  code: number;
  reason: string;
}

export interface RefusedUpgrade {
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
  body: any;
}

/** What an upgrade attempt came to: an open socket or the HTTP answer of a refusal. */
export type UpgradeOutcome = { kind: 'open'; socket: ChatSocket } | ({ kind: 'refused' } & RefusedUpgrade) | { kind: 'failed'; error: Error };

export interface ChatSocketOptions {
  /** Extra request headers for the upgrade. */
  headers?: Record<string, string>;
  /** Another path than /api/v1/chatdata. */
  path?: string;
  /** false: do not answer the service's pings (a client that hangs). */
  autoPong?: boolean;
}

export class ChatSocket {
  readonly ws: WebSocket;
  /** Every text frame received, parsed (ids beyond 2^53 kept as strings). */
  readonly frames: any[] = [];
  /** The raw text of every frame, in the same order. */
  readonly raw: string[] = [];
  /** Binary frames received (the service should never send any). */
  binaryFrames = 0;
  readonly errors: Error[] = [];
  closeInfo: CloseInfo | undefined;
  private readonly listeners = new Set<() => void>();
  readonly outcome: Promise<UpgradeOutcome>;

  constructor(svc: TestService, query: ChatdataQuery, auth: ChatdataAuth, options: ChatSocketOptions = {}) {
    this.ws = new WebSocket(chatdataUrl(svc, query, options.path), {
      ca: svc.service.ca,
      headers: { ...authHeaders(auth), ...options.headers },
      perMessageDeflate: false,
      autoPong: options.autoPong ?? true,
    });
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) {
        this.binaryFrames += 1;
      } else {
        const text = data.toString();
        this.raw.push(text);
        let parsed: unknown;
        try {
          parsed = parseJson(text);
        } catch {
          parsed = { unparsable: text };
        }
        this.frames.push(parsed);
      }
      this.notify();
    });
    this.ws.on('close', (code, reason) => {
      this.closeInfo = { code, reason: reason.toString() };
      this.notify();
    });
    this.ws.on('error', (error) => {
      this.errors.push(error);
      this.notify();
    });
    this.outcome = new Promise<UpgradeOutcome>((resolve) => {
      let settled = false;
      this.ws.once('open', () => {
        settled = true;
        resolve({ kind: 'open', socket: this });
      });
      this.ws.once('unexpected-response', (_request: ClientRequest, response: IncomingMessage) => {
        settled = true;
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = parseJson(text);
          } catch {
            body = undefined;
          }
          resolve({ kind: 'refused', status: response.statusCode ?? 0, headers: response.headers, text, body });
          // Ends the handshake; ws then reports an error and a close, which the listeners above absorb.
          this.ws.terminate();
        });
        response.on('error', (error) => resolve({ kind: 'failed', error }));
      });
      this.ws.once('error', (error) => {
        if (!settled) resolve({ kind: 'failed', error });
      });
    });
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Resolves once `check` answers a value other than undefined (checked on every socket event). */
  waitUntil<T>(check: () => T | undefined, label: string, timeoutMs = 5000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const attempt = (): boolean => {
        let value: T | undefined;
        try {
          value = check();
        } catch (error) {
          finish();
          reject(error as Error);
          return true;
        }
        if (value === undefined) return false;
        finish();
        resolve(value);
        return true;
      };
      const listener = (): void => {
        attempt();
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${label}; frames so far: ${this.raw.slice(-5).join(' | ')}; close: ${JSON.stringify(this.closeInfo)}`));
      }, timeoutMs);
      const finish = (): void => {
        clearTimeout(timer);
        this.listeners.delete(listener);
      };
      this.listeners.add(listener);
      attempt();
    });
  }

  /** The first frame (at index `from` or later) that matches. */
  waitForFrame(match: (frame: any) => boolean, label: string, options: { from?: number; timeoutMs?: number } = {}): Promise<any> {
    const from = options.from ?? 0;
    return this.waitUntil(() => this.frames.slice(from).find(match), label, options.timeoutMs);
  }

  /** Waits until at least `count` frames have arrived. */
  waitForFrames(count: number, label = `${count} frames`, timeoutMs?: number): Promise<any[]> {
    return this.waitUntil(() => (this.frames.length >= count ? this.frames.slice(0, count) : undefined), label, timeoutMs);
  }

  /** Waits for the chat_message whose text is `text`. */
  waitForMessage(text: string, timeoutMs?: number): Promise<any> {
    return this.waitForFrame((f) => f?.object === 'chat_message' && f.message === text, `chat_message "${text}"`, { timeoutMs });
  }

  /** Waits for the socket to close; answers the close code and reason. */
  waitForClose(timeoutMs?: number): Promise<CloseInfo> {
    return this.waitUntil(() => this.closeInfo, 'the socket to close', timeoutMs);
  }

  /** Sends a chat post object. */
  post(message: string): void {
    this.ws.send(JSON.stringify({ object: 'chat_post', message }));
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** Chat messages received, in order. */
  get messages(): any[] {
    return this.frames.filter((f) => f?.object === 'chat_message');
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
  }
}

/** Attempts an upgrade and reports how it ended, within `timeoutMs`. */
export async function tryChatdata(
  svc: TestService, query: ChatdataQuery, auth: ChatdataAuth, options: ChatSocketOptions = {}, timeoutMs = 5000,
): Promise<UpgradeOutcome> {
  const socket = new ChatSocket(svc, query, auth, options);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`upgrade did not finish within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([socket.outcome, timeout]);
  } catch (error) {
    socket.close();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Opens a chatdata socket for a session's chat_sub; fails the test if the upgrade is refused. */
export async function openChat(
  svc: TestService, session: Session, chatsubId: string, extra: ChatdataQuery = {},
): Promise<ChatSocket> {
  const outcome = await tryChatdata(svc, { chatsub_id: chatsubId, csrf: session.csrf, ...extra }, session);
  if (outcome.kind === 'open') return outcome.socket;
  if (outcome.kind === 'refused') throw new Error(`upgrade refused: ${outcome.status} ${outcome.text}`);
  throw outcome.error;
}

/** Expects a refused upgrade; answers the HTTP status, headers and error object. */
export async function expectRefused(
  svc: TestService, query: ChatdataQuery, auth: ChatdataAuth, options: ChatSocketOptions = {},
): Promise<RefusedUpgrade> {
  const outcome = await tryChatdata(svc, query, auth, options);
  if (outcome.kind === 'open') {
    outcome.socket.close();
    throw new Error('expected the upgrade to be refused, but the socket opened');
  }
  if (outcome.kind === 'failed') throw outcome.error;
  return outcome;
}

/** Polls `attempt` until it answers a value other than undefined, or fails after `timeoutMs`. */
export async function pollUntil<T>(attempt: () => Promise<T | undefined>, label: string, timeoutMs = 10_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}${lastError ? `: ${String(lastError)}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
