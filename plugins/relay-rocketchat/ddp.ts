import type { Logger } from 'pino';
import WebSocket from 'ws';
import { Backoff, failureFields, sleep } from '../../src/index.js';

/** A DDP frame as Rocket.Chat's realtime API sends it (the fields the relay reads). */
interface Frame {
  msg?: string;
  id?: string;
  collection?: string;
  fields?: { eventName?: string; args?: unknown[] };
  result?: { id?: string };
  error?: { error?: number | string; reason?: string; message?: string; errorType?: string };
  subs?: string[];
}

/** How often the relay pings the server; a ping unanswered by the next one ends the connection. */
const PING_MS = 25_000;
/** A connection that stayed up this long was a good one: the next drop waits from the shortest pause again. */
const STEADY_MS = 60_000;
/** How long the connect, the login and the subscriptions may take before the connection is given up. */
const SETUP_MS = 20_000;

/** The realtime session's refusal of the token (its `login` answered 403, or 401). */
export class RealtimeRefusal extends Error {
  readonly status = 401;
}

/**
 * Rocket.Chat's realtime API: DDP over its websocket (`/websocket`). Per connection: `connect`
 * (→ `connected`), `method login` with the token as a resume token (→ `result`), then a `sub` per
 * room to `stream-room-messages` (new and changed messages) and to `stream-notify-room`
 * `<room>/deleteMessage` (deletions), each answered `ready`; then `changed` frames come, and the
 * server's `ping`s are answered `pong`. DDP keeps no position: whatever a drop lost is read back by
 * REST after the next connection's subscriptions are ready (inbound.ts).
 */
export class RocketSocket {
  private readonly backoff = new Backoff(500, 30_000);
  private nextId = 0;

  constructor(
    private readonly options: {
      /** ws(s)://server/websocket */
      url: string;
      token: () => string;
      rooms: () => readonly string[];
      log: Logger;
      stopping: AbortSignal;
      /** Before each connection: the credentials still accepted (REST `me`)? Throws a refusal when not. */
      check: () => Promise<void>;
      refused: (error: unknown) => void;
      /** Every subscription is ready: the relay reads what the rooms said meanwhile. */
      ready: () => void;
      message: (roomId: string, message: unknown) => void;
      deleted: (roomId: string, messageId: string) => void;
      trouble: (detail: string) => void;
    },
  ) {}

  /** Connects, and again after each drop, until the relay stops or the token is refused. */
  async run(): Promise<void> {
    const { stopping, log } = this.options;
    while (!stopping.aborted) {
      try {
        await this.options.check();
      } catch (error) {
        if (stopping.aborted) return;
        if ((error as { status?: number }).status === 401) return this.options.refused(error);
        this.options.trouble(`cannot reach the server: ${(error as Error).message}`);
        log.warn({ ...failureFields(error) }, 'could not reach Rocket.Chat; trying again');
        await sleep(this.backoff.next(), stopping);
        continue;
      }
      const outcome = await this.connectOnce();
      if (stopping.aborted) return;
      if (outcome === 'refused') return this.options.refused(new RealtimeRefusal('Rocket.Chat\'s realtime API refused the token'));
      if (outcome >= STEADY_MS) this.backoff.reset();
      await sleep(this.backoff.next(), stopping);
    }
  }

  private id(): string {
    this.nextId += 1;
    return `g${this.nextId}`;
  }

  /** One connection until it closes: how long it was up after its subscriptions were ready (0: never), or `refused`. */
  private connectOnce(): Promise<number | 'refused'> {
    const { log, stopping } = this.options;
    return new Promise((done) => {
      const socket = new WebSocket(this.options.url, { handshakeTimeout: 15_000, headers: { 'User-Agent': 'groupwire-relay-rocketchat' } });
      const send = (frame: Record<string, unknown>) => socket.send(JSON.stringify(frame));
      let readyAt = 0;
      let refused = false;
      let pingOpen = false;
      const loginId = this.id();
      const waiting = new Set<string>();
      const setup = setTimeout(() => {
        log.warn({}, 'Rocket.Chat\'s realtime API did not finish the login and subscriptions in time: connecting again');
        socket.terminate();
      }, SETUP_MS);
      const pinger = setInterval(() => {
        if (pingOpen) {
          log.warn({}, 'Rocket.Chat did not answer a ping: connecting again');
          socket.terminate();
          return;
        }
        pingOpen = true;
        send({ msg: 'ping', id: this.id() });
      }, PING_MS);
      const onStop = () => socket.terminate();
      stopping.addEventListener('abort', onStop, { once: true });
      socket.on('open', () => send({ msg: 'connect', version: '1', support: ['1', 'pre2', 'pre1'] }));
      socket.on('message', (raw) => {
        let frame: Frame;
        try {
          frame = JSON.parse(String(raw)) as Frame;
        } catch {
          log.warn({}, 'Rocket.Chat sent a websocket frame that is not JSON: ignored');
          return;
        }
        switch (frame.msg) {
          case 'connected':
            send({ msg: 'method', method: 'login', id: loginId, params: [{ resume: this.options.token() }] });
            return;
          case 'ping':
            send({ msg: 'pong', ...(frame.id ? { id: frame.id } : {}) });
            return;
          case 'pong':
            pingOpen = false;
            return;
          case 'failed':
            log.error({}, 'Rocket.Chat does not speak this DDP version: connecting again');
            socket.terminate();
            return;
          case 'result':
            if (frame.id !== loginId) return;
            if (frame.error) {
              const code = Number(frame.error.error);
              log.warn({ error: frame.error.error, reason: frame.error.reason }, 'Rocket.Chat\'s realtime login failed');
              refused = code === 403 || code === 401;
              socket.terminate();
              return;
            }
            for (const roomId of this.options.rooms()) {
              for (const [name, param] of [['stream-room-messages', roomId], ['stream-notify-room', `${roomId}/deleteMessage`]] as const) {
                const id = this.id();
                waiting.add(id);
                send({ msg: 'sub', id, name, params: [param, false] });
              }
            }
            if (waiting.size === 0) this.ready(setup, (at) => (readyAt = at));
            return;
          case 'ready':
            for (const id of frame.subs ?? []) waiting.delete(id);
            if (waiting.size === 0 && readyAt === 0) this.ready(setup, (at) => (readyAt = at));
            return;
          case 'nosub':
            if (frame.id && waiting.has(frame.id)) {
              log.error({ reason: frame.error?.reason ?? frame.error?.message }, 'Rocket.Chat refused a room subscription (the bot may not be in the room): nothing comes live from it');
              waiting.delete(frame.id);
              if (waiting.size === 0 && readyAt === 0) this.ready(setup, (at) => (readyAt = at));
            }
            return;
          case 'changed':
            this.changed(frame);
            return;
          default:
        }
      });
      socket.on('error', (error) => log.debug({ ...failureFields(error) }, 'Rocket.Chat websocket error'));
      socket.on('close', (code) => {
        clearInterval(pinger);
        clearTimeout(setup);
        stopping.removeEventListener('abort', onStop);
        if (!stopping.aborted && !refused) {
          this.options.trouble(`websocket closed (${code})`);
          log.info({ code }, 'the Rocket.Chat websocket closed: connecting again');
        }
        done(refused ? 'refused' : readyAt === 0 ? 0 : Date.now() - readyAt);
      });
    });
  }

  private ready(setup: NodeJS.Timeout, mark: (at: number) => void): void {
    clearTimeout(setup);
    mark(Date.now());
    this.options.ready();
  }

  private changed(frame: Frame): void {
    const event = frame.fields?.eventName ?? '';
    const first = frame.fields?.args?.[0];
    if (frame.collection === 'stream-room-messages') {
      if (typeof first === 'object' && first !== null) this.options.message(event, first);
    } else if (frame.collection === 'stream-notify-room' && event.endsWith('/deleteMessage')) {
      const id = (first as { _id?: unknown } | undefined)?._id;
      if (typeof id === 'string') this.options.deleted(event.slice(0, -'/deleteMessage'.length), id);
    }
  }
}
