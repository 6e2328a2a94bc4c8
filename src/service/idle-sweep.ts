import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

/** How far past the idle timeout a connection the sweep finds still idle is closed by it. */
const SWEEP_GRACE = 1.5;

interface Watched {
  /** Bytes read and written when last looked at. */
  moved: number;
  /** When `moved` last changed (or the connection was first seen). */
  since: number;
}

/**
 * A second guard on the idle timeout (docs/protocol.md "Connections"): every TLS connection that is not
 * a chat socket is looked at every half idle timeout, and one that moved no byte for 1.5 idle timeouts
 * is closed. Node's own socket timer (`server.timeout`) closes it first, at one idle timeout; under a
 * loaded full test run that timer was seen never to fire for an idle connection (1 run in ~15: the
 * connection stayed open 20 s past a 1 s timeout, Node's `_onTimeout` never reached), cause not found.
 * A connection that stays open for good is what this limit exists to prevent, so the rule is kept by
 * a check that does not depend on that timer. Same rule, not a new one: no bytes for the idle time,
 * whatever the request's state. Chat sockets leave the sweep when upgraded (their pings keep them).
 */
export class IdleSweep {
  private readonly watched = new Map<Socket, Watched>();
  private timer: NodeJS.Timeout | undefined;
  /** Connections the sweep closed (Node's timer had not): stats and tests. */
  closed = 0;

  constructor(
    private readonly idleTimeoutMs: number,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  attach(server: HttpsServer): void {
    server.on('secureConnection', (socket: Socket) => {
      this.watched.set(socket, { moved: movedBytes(socket), since: this.now() });
      socket.once('close', () => this.watched.delete(socket));
    });
    // An upgrade hands the socket to the hub (or refuses it and closes it): no longer the sweep's.
    server.on('upgrade', (_request, socket: Socket) => this.watched.delete(socket));
    this.timer = setInterval(() => this.sweep(), Math.max(50, Math.floor(this.idleTimeoutMs / 2)));
    this.timer.unref();
    server.once('close', () => clearInterval(this.timer));
  }

  /** Looks at every watched connection once: closes those idle past the grace. */
  sweep(): void {
    const now = this.now();
    for (const [socket, seen] of this.watched) {
      if (socket.destroyed) {
        this.watched.delete(socket);
        continue;
      }
      const moved = movedBytes(socket);
      if (moved !== seen.moved) {
        seen.moved = moved;
        seen.since = now;
        continue;
      }
      if (now - seen.since < this.idleTimeoutMs * SWEEP_GRACE) continue;
      this.watched.delete(socket);
      this.closed += 1;
      this.log.debug({ idleMs: now - seen.since }, 'an idle connection its own timer left open was closed');
      socket.destroy();
    }
  }
}

function movedBytes(socket: Socket): number {
  return socket.bytesRead + socket.bytesWritten;
}
