import { EventEmitter } from 'eventemitter3';
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import type { GroupsClient } from '../api/client.js';
import { failureFields } from '../api/failure-fields.js';
import { type GroupsError, RateLimitError } from '../api/errors.js';
import type { ChatMessage, Id } from '../api/types.js';
import { parseWireJson } from '../api/wire-json.js';
import { Backoff, sleep } from './backoff.js';
import type { UpgradeGate } from './upgrade-gate.js';
import { CLOSE, closeAction, type CloseAction } from './close-codes.js';
import type { ChatConnectionEvents, ConnectionState } from './chat-connection-events.js';
import { refusalAction } from './upgrade-refusal.js';

export interface ChatConnectionOptions {
  client: GroupsClient;
  log: Logger;
  chatsubId: Id;
  /** Subscribes again when the chat_sub is gone (`invalid chatsub_id`, close 4002); answers the new id. */
  rejoin: () => Promise<Id>;
  /** Whether the chat is open again (polled while it is closed). */
  isOpen: () => Promise<boolean>;
  closedCheckMs?: number;
  /**
   * Asked at each (re)open: whether to take the history sent on connect (the reader then knows where it
   * stands and sorts out what it already had). Default: never (`no_history`).
   */
  history?: () => boolean;
  gate?: UpgradeGate;
  pingIntervalMs?: number;
  pongTimeoutMs?: number;
  /** A connection that stayed up this long resets the backoff. */
  stableMs?: number;
  backoff?: Backoff;
}

/**
 * One chat's `chatdata` socket as an explicit state machine:
 * idle → connecting → open → (drop) → reconnecting → open …; closed while the chat is closed;
 * stopped after stop() or the chat's deletion, with no reconnect from there.
 * Every refusal and close code is mapped to what helps: rejoin, wait for reopening, log in again,
 * wait for Retry-After, or back off (exponential, full jitter, reset after a stable period).
 * The socket is opened with `no_history` unless `history()` says otherwise. History frames are told
 * from live ones by a ping sent on open: its pong comes after everything the service sent on connect.
 */
export class ChatConnection extends EventEmitter<ChatConnectionEvents> {
  private current: ConnectionState = 'idle';
  private ws: WebSocket | undefined;
  /** Reading is paused (the reader has a backlog); a new socket starts paused too. */
  private paused = false;
  private readonly stopper = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly backoff: Backoff;
  chatsubId: Id;
  readonly stats = { opened: 0, dropped: 0, refused: 0, malformedFrames: 0, errorFrames: 0 };
  /** Why the socket had to be opened again, by what the close or refusal asked for (metrics: reconnects by cause). */
  readonly reconnectCauses: Record<CloseAction['kind'], number> = { rejoin: 0, closed: 0, deleted: 0, login: 0, wait: 0, forbidden: 0, backoff: 0 };
  /** When the state last changed (ms since the epoch), and the last close or refusal, for the status page. */
  stateSince = Date.now();
  lastTrouble: { at: number; what: string } | undefined;

  constructor(private readonly options: ChatConnectionOptions) {
    super();
    this.chatsubId = options.chatsubId;
    this.backoff = options.backoff ?? new Backoff();
  }

  get state(): ConnectionState {
    return this.current;
  }

  start(): void {
    if (this.loop || this.current === 'stopped') return;
    this.loop = this.run();
  }

  /** Sends a chat post; false when the socket is not open (the caller keeps the text queued). */
  post(text: string, onSent?: (error?: Error) => void): boolean {
    const ws = this.ws;
    if (this.current !== 'open' || !ws || ws.readyState !== ws.OPEN) return false;
    ws.send(JSON.stringify({ object: 'chat_post', message: text }), onSent);
    return true;
  }

  /** Stops reading frames until resume(): they wait in TCP, not on the heap. */
  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.ws?.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.ws?.resume();
  }

  /** Closes with 1000 and never reconnects. */
  async stop(): Promise<void> {
    if (this.current === 'stopped') return;
    this.stopper.abort();
    this.ws?.close(CLOSE.normal, 'bot stopping');
    this.setState('stopped');
    await this.loop;
  }

  private setState(next: ConnectionState): void {
    const previous = this.current;
    if (previous === next || previous === 'stopped') return;
    this.current = next;
    this.stateSince = Date.now();
    this.options.log.debug({ state: next, previous }, 'chat socket state');
    this.emit('state', next, previous);
  }

  private get stopped(): boolean {
    return this.stopper.signal.aborted;
  }

  private async run(): Promise<void> {
    let first = true;
    while (!this.stopped) {
      this.setState(first ? 'connecting' : 'reconnecting');
      first = false;
      const gate = this.options.gate;
      const ticket = await gate?.take(this.stopper.signal);
      if (this.stopped) break;
      let ws: WebSocket;
      const history = this.options.history?.() ?? false;
      try {
        ws = await this.options.client.openChatSocket({ chatsubId: this.chatsubId, noHistory: !history });
      } catch (error) {
        this.stats.refused += 1;
        // The service's upgrade limit (not the REST one a csrf fetch could meet) slows every socket of the process.
        if (error instanceof RateLimitError && error.operation === 'chatdata' && ticket !== undefined) gate?.refused(ticket);
        await this.recover(refusalAction(error), error);
        continue;
      }
      gate?.accepted();
      if (this.stopped) {
        ws.close(CLOSE.normal, 'bot stopping');
        break;
      }
      const { code, reason, stableFor } = await this.serve(ws, history);
      if (this.stopped) break;
      this.stats.dropped += 1;
      if (stableFor >= (this.options.stableMs ?? 10_000)) this.backoff.reset();
      else this.backoff.servedFor(stableFor);
      this.options.log.info({ code, reason }, 'chat socket closed');
      await this.recover(closeAction(code), undefined);
    }
    this.setState('stopped');
  }

  /** Serves an open socket until it closes; listeners are removed before anything reconnects. */
  private serve(ws: WebSocket, history: boolean): Promise<{ code: number; reason: string; stableFor: number }> {
    this.ws = ws;
    if (this.paused) ws.pause();
    this.stats.opened += 1;
    const openedAt = performance.now();
    this.setState('open');
    this.options.log.info({ chatsubId: this.chatsubId }, 'chat socket open');
    return new Promise((resolve) => {
      let alive = true;
      // The service sends the history on connect, before it can answer this ping: frames before the pong are history.
      let inHistory = history;
      if (history) ws.ping();
      const pingEvery = this.options.pingIntervalMs ?? 20_000;
      const watchdog = setInterval(() => {
        // A paused socket cannot read its pong: judged again once reading resumes.
        if (this.paused) {
          alive = true;
          return;
        }
        // No pong since the last ping: the connection is dead even if TCP has not noticed.
        if (!alive) {
          this.options.log.warn('chat socket stopped answering pings; replacing it');
          ws.terminate();
          return;
        }
        alive = false;
        ws.ping();
      }, pingEvery);
      const onMessage = (data: WebSocket.RawData) => this.onFrame(data, inHistory);
      const onPong = () => {
        alive = true;
        if (inHistory) {
          inHistory = false;
          // Every frame of the history sent on connect is in: the reader can compare its newest with
          // what it had (a chat whose history went backwards, docs/protocol.md "History that goes backwards").
          this.emit('historyEnd');
        }
      };
      const onError = (error: Error) => this.options.log.debug({ err: error }, 'chat socket error');
      ws.on('message', onMessage);
      ws.on('pong', onPong);
      ws.on('error', onError);
      ws.once('close', (code, reason) => {
        clearInterval(watchdog);
        ws.off('message', onMessage);
        ws.off('pong', onPong);
        ws.off('error', onError);
        if (this.ws === ws) this.ws = undefined;
        resolve({ code, reason: reason.toString(), stableFor: performance.now() - openedAt });
      });
      this.emit('open', history);
    });
  }

  private onFrame(data: WebSocket.RawData, fromHistory: boolean): void {
    let frame: unknown;
    const text = data.toString();
    try {
      frame = parseWireJson(text);
    } catch {
      this.stats.malformedFrames += 1;
      this.options.log.warn({ frame: text.slice(0, 200) }, 'malformed chat frame ignored');
      return;
    }
    const object = (frame as { object?: unknown } | null)?.object;
    if (object === 'chat_message' && typeof (frame as ChatMessage).msg_num === 'number') {
      this.emit('message', frame as ChatMessage, fromHistory, text);
    } else if (object === 'error') {
      this.stats.errorFrames += 1;
      const refusal = frame as { type?: unknown; extra?: unknown };
      this.options.log.warn({ error: frame }, 'the service refused a chat post');
      this.emit('postRefused', { type: String(refusal.type ?? ''), extra: String(refusal.extra ?? '') });
    } else {
      this.stats.malformedFrames += 1;
      this.options.log.warn({ object }, 'unexpected chat frame ignored');
    }
  }

  /** Waits or repairs according to what went wrong, then lets the loop connect again. */
  private async recover(action: CloseAction, error: unknown): Promise<void> {
    const log = this.options.log;
    this.reconnectCauses[action.kind] += 1;
    this.lastTrouble = { at: Date.now(), what: error ? `${action.kind}: ${(error as Error)?.message ?? String(error)}` : `${action.kind}: ${action.why}` };
    const signal = this.stopper.signal;
    switch (action.kind) {
      case 'rejoin':
        log.warn({ reason: action.why }, 'chat subscription gone; joining again');
        try {
          this.chatsubId = await this.options.rejoin();
          return;
        } catch (rejoinError) {
          log.error(failureFields(rejoinError), 'could not join the chat again');
          return sleep(this.backoff.next(), signal);
        }
      case 'closed':
        return this.waitForReopen();
      case 'deleted':
        log.error('the chat was deleted; this bot leaves it');
        this.stopper.abort();
        this.setState('stopped');
        this.emit('deleted');
        return;
      case 'login':
        if (this.options.client.session.canLogIn) {
          log.info({ reason: (error as Error)?.message }, 'logging in again for the chat socket');
          try {
            await this.options.client.session.login();
          } catch (loginError) {
            log.error(failureFields(loginError), 'login failed');
            return sleep(this.backoff.next(), signal);
          }
          return;
        }
        log.error({ reason: (error as Error)?.message }, 'the token is no longer accepted; retrying slowly');
        return sleep(Math.max(this.backoff.next(), 30_000), signal);
      case 'wait': {
        const retryAfter = (error as GroupsError | undefined)?.retryAfterSeconds ?? 0;
        const delay = Math.max(retryAfter * 1000, this.backoff.next());
        log.info({ delayMs: Math.round(delay), reason: (error as Error)?.message }, 'upgrade refused; waiting');
        return sleep(delay, signal);
      }
      case 'forbidden':
        log.error({ reason: (error as Error)?.message ?? action.why }, 'not allowed in this chat (banned or removed?); retrying slowly');
        return sleep(Math.max(this.backoff.next(), 60_000), signal);
      case 'backoff': {
        const delay = this.backoff.next();
        if (error) log.warn({ reason: (error as Error).message, delayMs: Math.round(delay) }, 'could not open the chat socket');
        return sleep(delay, signal);
      }
    }
  }

  private async waitForReopen(): Promise<void> {
    this.setState('closed');
    const every = this.options.closedCheckMs ?? 30_000;
    this.options.log.info({ checkEverySeconds: every / 1000 }, 'the chat is closed; waiting for it to reopen');
    while (!this.stopped) {
      await sleep(every, this.stopper.signal);
      if (this.stopped) return;
      try {
        if (await this.options.isOpen()) {
          this.options.log.info('the chat reopened');
          this.backoff.reset();
          return;
        }
      } catch (error) {
        this.options.log.warn(failureFields(error), 'could not check whether the chat reopened');
      }
    }
  }
}
