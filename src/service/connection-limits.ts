import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { addressKey } from './caller-limits.js';
import { IdleSweep } from './idle-sweep.js';

/**
 * Our decisions (docs/protocol.md "Connections", issue #31 item 3): how long the local service waits
 * for a connection to do something, and how many connections one address may hold open. Each number
 * is far from what a real client meets; together they keep a caller who opens connections and sends
 * nothing (no credentials needed) from holding the service's sockets until nobody else can connect.
 */
export interface ConnectionLimits {
  /** The TLS handshake must finish within this. */
  handshakeTimeoutMs: number;
  /** A request's headers must have arrived within this of its start. */
  headersTimeoutMs: number;
  /** A whole request (headers and body) must have arrived within this of its start. */
  requestTimeoutMs: number;
  /**
   * A connection that sends nothing for this long is closed: before its first request, between
   * requests (keep-alive), or in the middle of one. Not chat sockets: once upgraded, a chat socket is
   * the hub's, kept alive by its pings (an idle chat is normal).
   */
  idleTimeoutMs: number;
  /**
   * The most connections one address (an IPv6 /64) holds open at once, chat sockets not counted (they
   * are authenticated and capped per user, socket-places.ts). A connection past it is destroyed as it
   * arrives, before any TLS work; the refusals are logged once a minute per address.
   */
  perAddress: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  handshakeTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  // A 25 MiB upload (the most a call takes) at 1 Mbit/s takes about 210 s.
  requestTimeoutMs: 300_000,
  idleTimeoutMs: 120_000,
  // A client of ours holds 8; a browser 6 per host; tests and benches from 127.0.0.1 stay under 100.
  perAddress: 512,
};

/** How often refusals from one address are logged at most. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;

/** The options https.createServer takes for the handshake timeout and the timeouts' checking interval. */
export function serverTimeoutOptions(limits: ConnectionLimits): { handshakeTimeout: number; connectionsCheckingInterval: number } {
  return {
    handshakeTimeout: limits.handshakeTimeoutMs,
    // Node checks the headers and request timeouts on this interval (30 s by default): a quarter of the
    // shorter one keeps the overrun small.
    connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4))),
  };
}

interface AddressEntry {
  open: number;
  refusedSinceLog: number;
  loggedAt: number;
}

/**
 * Applies ConnectionLimits to the service's HTTPS server: the timeouts, and the count of open
 * connections per address (kept from the raw TCP connection to its close; a chat socket leaves the
 * count when the hub accepts it).
 */
export class ConnectionGuard {
  private readonly byAddress = new Map<string, AddressEntry>();
  /** Open counted connections by `address port`, so an upgraded TLS socket finds its raw connection's entry. */
  private readonly byPeer = new Map<string, { key: string; counted: boolean }>();
  /** Connections refused for the cap since the start (stats). */
  refused = 0;
  /** The second guard on the idle timeout, once attached. */
  idle: IdleSweep | undefined;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  attach(server: HttpsServer): void {
    server.headersTimeout = this.limits.headersTimeoutMs;
    server.requestTimeout = this.limits.requestTimeoutMs;
    server.keepAliveTimeout = this.limits.idleTimeoutMs;
    // Inactivity of the socket, whatever the request's state; with no 'timeout' listener node destroys it.
    server.timeout = this.limits.idleTimeoutMs;
    // And a check of the same rule that does not depend on Node's timer (idle-sweep.ts says why).
    this.idle = new IdleSweep(this.limits.idleTimeoutMs, this.log.child({ component: 'idle-sweep' }), this.now);
    this.idle.attach(server);
    server.on('connection', (socket: Socket) => this.admit(socket));
  }

  /** Counts a new raw connection against its address, or destroys it when the address is at its cap. */
  private admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const key = addressKey(address);
    let entry = this.byAddress.get(key);
    if (entry && entry.open >= this.limits.perAddress) {
      this.refuse(socket, key, entry);
      return;
    }
    if (!entry) this.byAddress.set(key, (entry = { open: 0, refusedSinceLog: 0, loggedAt: 0 }));
    entry.open += 1;
    const peer = `${address} ${socket.remotePort}`;
    const held = { key, counted: true };
    this.byPeer.set(peer, held);
    socket.once('close', () => {
      if (this.byPeer.get(peer) === held) this.byPeer.delete(peer);
      if (held.counted) this.release(key);
    });
  }

  /** A chat socket the hub accepted stops counting against its address (the per-user caps hold it). */
  exempt(socket: { remoteAddress?: string; remotePort?: number }): void {
    const held = this.byPeer.get(`${socket.remoteAddress ?? ''} ${socket.remotePort}`);
    if (!held || !held.counted) return;
    held.counted = false;
    this.release(held.key);
  }

  /** Connections counted now against `address` (tests and stats). */
  openFrom(address: string): number {
    return this.byAddress.get(addressKey(address))?.open ?? 0;
  }

  private release(key: string): void {
    const entry = this.byAddress.get(key);
    if (!entry) return;
    entry.open -= 1;
    // Gone with its last connection (a count of refusals not yet logged goes too): the table holds only
    // addresses with connections open.
    if (entry.open <= 0) this.byAddress.delete(key);
  }

  private refuse(socket: Socket, key: string, entry: AddressEntry): void {
    socket.destroy();
    this.refused += 1;
    entry.refusedSinceLog += 1;
    const now = this.now();
    if (now - entry.loggedAt < REFUSAL_LOG_INTERVAL_MS) return;
    this.log.warn(
      { address: key.replace(/^address /, ''), refused: entry.refusedSinceLog, open: entry.open, cap: this.limits.perAddress },
      'connections refused: too many open from one address',
    );
    entry.loggedAt = now;
    entry.refusedSinceLog = 0;
  }
}
