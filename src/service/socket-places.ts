import type { Duplex } from 'node:stream';
import { rateLimited } from './errors.js';

/**
 * Our decision (docs/protocol.md "Rate limits"): the chat sockets one user may hold open at once.
 * A client needs one per chat_sub, and two for a moment while it reconnects; a bot needs one per chat
 * it is in, and the supervisor holds 10,000 chats in one process. So a chat_sub takes at most
 * PER_CHAT_SUB open sockets, and a user at most PER_USER in all; the upgrade past either is refused.
 */
export const SOCKET_CAPS = { perChatSub: 8, perUser: 12_000 } as const;
export type SocketCaps = { perChatSub: number; perUser: number };
/** What the upgrade past a cap suggests waiting: a place frees when one of the user's sockets closes. */
const SOCKET_CAP_RETRY_SECONDS = 5;

/**
 * The places each user (and each of its chat_subs) holds among the open chat sockets. A place is taken
 * when an upgrade is granted, before the handshake completes, so upgrades racing each other cannot pass
 * a cap together; it is given back when the raw socket closes, which it does on every path (accepted
 * and later closed, or a handshake that failed).
 */
export class SocketPlaces {
  private readonly byUser = new Map<string, number>();
  private readonly bySub = new Map<string, number>();

  constructor(private readonly caps: SocketCaps = SOCKET_CAPS) {}

  /** Takes one of the user's places for `socket` on chat_sub `subId`, or throws `rate_limit` past a cap. */
  take(userId: string, subId: string, socket: Duplex): void {
    const user = this.byUser.get(userId) ?? 0;
    const sub = this.bySub.get(subId) ?? 0;
    if (sub >= this.caps.perChatSub) {
      throw rateLimited(SOCKET_CAP_RETRY_SECONDS, `too many open chat sockets on one chat_sub (at most ${this.caps.perChatSub})`);
    }
    if (user >= this.caps.perUser) {
      throw rateLimited(SOCKET_CAP_RETRY_SECONDS, `too many open chat sockets (at most ${this.caps.perUser} per user)`);
    }
    this.byUser.set(userId, user + 1);
    this.bySub.set(subId, sub + 1);
    let given = false;
    const giveBack = (): void => {
      if (given) return;
      given = true;
      release(this.byUser, userId);
      release(this.bySub, subId);
    };
    if (socket.destroyed) giveBack();
    else socket.once('close', giveBack);
  }

  /** Places held now by a user (tests and stats). */
  heldBy(userId: string): number {
    return this.byUser.get(userId) ?? 0;
  }
}

function release(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}
