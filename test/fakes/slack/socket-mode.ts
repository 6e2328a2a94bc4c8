import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { APP_ID, TEAM } from './state.js';

/** An envelope the fake sent, as Slack sends it over Socket Mode. */
export interface SentEnvelope {
  envelope_id: string;
  type: 'events_api';
  payload: {
    token: string;
    team_id: string;
    api_app_id: string;
    event: Record<string, unknown>;
    type: 'event_callback';
    event_id: string;
    event_time: number;
    authorizations: unknown[];
    is_ext_shared_channel: boolean;
    event_context: string;
  };
  accepts_response_payload: boolean;
  retry_attempt: number;
  retry_reason: string;
}

interface Connection {
  id: number;
  ws: WebSocket;
  /** False once a disconnect was sent or the socket closed: nothing new goes to it. */
  accepting: boolean;
  unacked: Map<string, SentEnvelope>;
}

/**
 * Socket Mode: a websocket per `apps.connections.open` ticket (each good once). On connecting the
 * fake says `hello`; `send` delivers an events_api envelope to an open connection, or keeps it until
 * one opens; envelopes not acknowledged when their connection ends are sent again (retry_attempt + 1,
 * as Slack retries). Every acknowledgement (`{"envelope_id": …}`) is recorded in order.
 */
export class SocketMode {
  /** Envelope ids acknowledged, in the order the acks came. */
  readonly acks: string[] = [];
  readonly sent: SentEnvelope[] = [];
  /** Connections opened (hello sent), in all. */
  opened = 0;
  /**
   * How long Slack goes on trying an event no connection took: its Events API retries a failed
   * delivery three times, nearly at once, after a minute and after five minutes, then drops it. An
   * envelope still waiting for a connection past this is dropped (kept in `expired`).
   */
  giveUpAfterMs = 5 * 60_000;
  readonly expired: SentEnvelope[] = [];
  private readonly firstTried = new WeakMap<SentEnvelope, number>();
  private readonly server = new WebSocketServer({ noServer: true });
  private readonly tickets = new Set<string>();
  private readonly connections = new Set<Connection>();
  private readonly pending: SentEnvelope[] = [];
  private nextId = 1;

  /** A fresh ticket's URL (apps.connections.open's answer). */
  url(base: string): string {
    const ticket = randomUUID();
    this.tickets.add(ticket);
    return `${base}/link/?ticket=${ticket}&app_id=${APP_ID}`;
  }

  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(request.url ?? '/', 'http://fake');
    const ticket = url.searchParams.get('ticket') ?? '';
    if (url.pathname !== '/link/' || !this.tickets.delete(ticket)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
      return;
    }
    this.server.handleUpgrade(request, socket, head, (ws) => this.accept(ws));
  }

  private accept(ws: WebSocket): void {
    const connection: Connection = { id: this.nextId++, ws, accepting: true, unacked: new Map() };
    this.connections.add(connection);
    ws.on('message', (data) => this.received(connection, data.toString()));
    ws.on('close', () => this.ended(connection));
    ws.on('error', () => undefined);
    this.opened += 1;
    ws.send(JSON.stringify({
      type: 'hello', num_connections: this.openConnections().length,
      debug_info: { host: `applink-fake-${connection.id}`, build_number: 1, approximate_connection_time: 18060 },
      connection_info: { app_id: APP_ID },
    }));
    for (const envelope of this.pending.splice(0)) {
      if (Date.now() - (this.firstTried.get(envelope) ?? Date.now()) > this.giveUpAfterMs) this.expired.push(envelope);
      else this.deliver(envelope);
    }
  }

  private received(connection: Connection, text: string): void {
    let message: { envelope_id?: string };
    try {
      message = JSON.parse(text) as { envelope_id?: string };
    } catch {
      return;
    }
    if (typeof message.envelope_id !== 'string') return;
    this.acks.push(message.envelope_id);
    connection.unacked.delete(message.envelope_id);
  }

  private ended(connection: Connection): void {
    connection.accepting = false;
    this.connections.delete(connection);
    for (const envelope of connection.unacked.values()) {
      this.deliver({ ...envelope, envelope_id: randomUUID(), retry_attempt: envelope.retry_attempt + 1, retry_reason: 'timeout' });
    }
    connection.unacked.clear();
  }

  openConnections(): Connection[] {
    return [...this.connections].filter((c) => c.accepting && c.ws.readyState === c.ws.OPEN);
  }

  /** Sends an event (to the newest open connection, or when one opens). */
  send(event: Record<string, unknown>, options: { eventId?: string; retryAttempt?: number } = {}): SentEnvelope {
    const envelope: SentEnvelope = {
      envelope_id: randomUUID(),
      type: 'events_api',
      payload: {
        token: 'verification-token', team_id: TEAM.id, api_app_id: APP_ID, event, type: 'event_callback',
        event_id: options.eventId ?? `Ev${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`,
        event_time: Math.floor(Date.now() / 1000),
        authorizations: [{ enterprise_id: null, team_id: TEAM.id, user_id: 'U0RELAYBOT', is_bot: true, is_enterprise_install: false }],
        is_ext_shared_channel: false, event_context: `4-${randomUUID()}`,
      },
      accepts_response_payload: false,
      retry_attempt: options.retryAttempt ?? 0,
      retry_reason: options.retryAttempt ? 'http_timeout' : '',
    };
    this.deliver(envelope);
    return envelope;
  }

  /** Slack's retry of an envelope: the same event and event_id in a new envelope. */
  resend(envelope: SentEnvelope): SentEnvelope {
    const again: SentEnvelope = { ...envelope, envelope_id: randomUUID(), retry_attempt: envelope.retry_attempt + 1, retry_reason: 'http_timeout' };
    this.deliver(again);
    return again;
  }

  private deliver(envelope: SentEnvelope): void {
    const connection = this.openConnections().at(-1);
    if (!connection) {
      if (!this.firstTried.has(envelope)) this.firstTried.set(envelope, Date.now());
      this.pending.push(envelope);
      return;
    }
    this.sent.push(envelope);
    connection.unacked.set(envelope.envelope_id, envelope);
    connection.ws.send(JSON.stringify(envelope));
  }

  /** Sends `{"type":"disconnect","reason":…}` to every open connection; nothing new goes to them. */
  disconnect(reason: 'refresh_requested' | 'warning' | 'too_many_websockets' | 'link_disabled'): number {
    const open = this.openConnections();
    for (const connection of open) {
      connection.accepting = false;
      connection.ws.send(JSON.stringify({ type: 'disconnect', reason, debug_info: { host: `applink-fake-${connection.id}` } }));
    }
    return open.length;
  }

  /** Cuts every socket without a close frame. */
  drop(): number {
    const all = [...this.connections];
    for (const connection of all) {
      connection.accepting = false;
      connection.ws.terminate();
    }
    return all.length;
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  close(): void {
    for (const connection of this.connections) connection.ws.terminate();
    this.server.close();
  }
}
