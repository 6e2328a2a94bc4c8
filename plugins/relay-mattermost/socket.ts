import type { Logger } from 'pino';
import WebSocket from 'ws';
import { Backoff, failureFields, sleep } from '../../src/index.js';

/** An event of Mattermost's websocket (`posted`, `post_edited`, `post_deleted`, `hello`, ...). */
export interface SocketEvent {
  event: string;
  data: Record<string, unknown>;
  broadcast?: { channel_id?: string; user_id?: string; team_id?: string };
  seq: number;
}

/** How often the relay asks the server for a pong; a ping unanswered by the next one ends the connection. */
const PING_MS = 30_000;
/** A connection that stayed up this long was a good one: the next drop waits from the shortest pause again. */
const STEADY_MS = 60_000;

/**
 * Mattermost's websocket (`/api/v4/websocket`), as the official webapp client speaks it: the token in
 * an `authentication_challenge`, the server's `hello` first, then events numbered by `seq` from 0; a
 * gap in the numbers means an event was lost, and the connection is made again. A reconnect names the
 * last connection and sequence number (the server may replay what the relay missed); whatever it does,
 * each `hello` makes the relay read what its channels said meanwhile by REST (inbound.ts). Not the
 * library's WebSocketClient: it needs the browser's WebSocket and CloseEvent globals, which Node 20 lacks.
 */
export class MattermostSocket {
  private connectionId = '';
  private nextSeq = 0;
  private readonly backoff = new Backoff(500, 30_000);

  constructor(
    private readonly options: {
      /** The websocket's address: ws(s)://server/api/v4/websocket. */
      url: string;
      token: string;
      log: Logger;
      stopping: AbortSignal;
      /** Before each connection: the token still accepted (GET /users/me)? Throws a refusal when not. */
      check: () => Promise<void>;
      /** A refusal of the token: the relay stops. */
      refused: (error: unknown) => void;
      hello: () => void;
      event: (event: SocketEvent) => void;
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
        log.warn({ ...failureFields(error) }, 'could not reach Mattermost; trying again');
        await sleep(this.backoff.next(), stopping);
        continue;
      }
      const upMs = await this.connectOnce();
      if (stopping.aborted) return;
      if (upMs >= STEADY_MS) this.backoff.reset();
      await sleep(this.backoff.next(), stopping);
    }
  }

  /** One connection, until it closes: answers how long it was up after its hello (0 when it never got one). */
  private connectOnce(): Promise<number> {
    const { log, stopping } = this.options;
    const url = `${this.options.url}?connection_id=${encodeURIComponent(this.connectionId)}&sequence_number=${this.nextSeq}`;
    return new Promise<number>((done) => {
      const socket = new WebSocket(url, { handshakeTimeout: 15_000, headers: { 'User-Agent': 'groupwire-relay-mattermost' } });
      let helloAt = 0;
      let replySeq = 1;
      let pingOpen = false;
      const pinger = setInterval(() => {
        if (pingOpen) {
          log.warn({}, 'Mattermost did not answer a ping: connecting again');
          socket.terminate();
          return;
        }
        pingOpen = true;
        socket.send(JSON.stringify({ action: 'ping', seq: (replySeq += 1) }));
      }, PING_MS);
      const onStop = () => socket.terminate();
      stopping.addEventListener('abort', onStop, { once: true });
      socket.on('open', () => {
        socket.send(JSON.stringify({ action: 'authentication_challenge', seq: 1, data: { token: this.options.token } }));
      });
      socket.on('message', (raw) => {
        let message: SocketEvent & { seq_reply?: number; status?: string };
        try {
          message = JSON.parse(String(raw)) as typeof message;
        } catch {
          log.warn({}, 'Mattermost sent a websocket frame that is not JSON: ignored');
          return;
        }
        if (message.seq_reply !== undefined) {
          if (message.seq_reply !== 1) pingOpen = false;
          return;
        }
        if (message.event === 'hello') {
          const id = String(message.data?.connection_id ?? '');
          if (this.connectionId !== '' && id !== this.connectionId) log.info({}, 'a new Mattermost websocket session: reading what the channels said meanwhile');
          this.connectionId = id;
          this.nextSeq = message.seq;
          helloAt = Date.now();
          this.options.hello();
        } else if (message.seq !== this.nextSeq) {
          // An event lost on the way: a connection of its own again (the hello that follows reads the gap back by REST).
          log.warn({ expected: this.nextSeq, got: message.seq }, 'a Mattermost websocket event was missed: connecting again');
          this.connectionId = '';
          socket.terminate();
          return;
        }
        this.nextSeq = message.seq + 1;
        if (message.event !== 'hello') this.options.event(message);
      });
      socket.on('error', (error) => log.debug({ ...failureFields(error) }, 'Mattermost websocket error'));
      socket.on('close', (code) => {
        clearInterval(pinger);
        stopping.removeEventListener('abort', onStop);
        if (!stopping.aborted) {
          this.options.trouble(`websocket closed (${code})`);
          log.info({ code }, 'the Mattermost websocket closed: connecting again');
        }
        done(helloAt === 0 ? 0 : Date.now() - helloAt);
      });
    });
  }
}
