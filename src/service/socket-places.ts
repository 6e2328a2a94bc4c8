import type { Duplex } from 'node:stream';
import { rateLimited } from './errors.js';

/**
 * Our decision (docs/protocol.md "Rate limits"): the chat sockets one user may hold open at once, all
 * sessions and chats together; the upgrade past it is refused. A bot in many chats stays well under it.
 */
export const MAX_SOCKETS_PER_USER = 50;
/** What the upgrade past the cap suggests waiting: a place frees when one of the user's sockets closes. */
const SOCKET_CAP_RETRY_SECONDS = 5;

/**
 * The places each user holds among the open chat sockets. A place is taken when an upgrade is granted,
 * before the handshake completes, so upgrades racing each other cannot pass the cap together; it is
 * given back when the raw socket closes, which it does on every path (accepted and later closed, or a
 * handshake that failed).
 */
export class SocketPlaces {
  private readonly held = new Map<string, number>();

  /** Takes one of the user's places for `socket`, or throws `rate_limit` past the cap. */
  take(userId: string, socket: Duplex): void {
    const held = this.held.get(userId) ?? 0;
    if (held >= MAX_SOCKETS_PER_USER) {
      throw rateLimited(SOCKET_CAP_RETRY_SECONDS, `too many open chat sockets (at most ${MAX_SOCKETS_PER_USER} per user)`);
    }
    this.held.set(userId, held + 1);
    let given = false;
    const giveBack = (): void => {
      if (given) return;
      given = true;
      const left = (this.held.get(userId) ?? 1) - 1;
      if (left > 0) this.held.set(userId, left);
      else this.held.delete(userId);
    };
    if (socket.destroyed) giveBack();
    else socket.once('close', giveBack);
  }
}
