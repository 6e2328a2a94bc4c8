import { MatrixError, Method, safeGetRetryAfterMs, type MatrixClient } from 'matrix-js-sdk';
import type { Logger } from 'pino';
import { Backoff, failureFields, sleep, type KeyValueStore } from '../../src/index.js';
import type { MatrixInbound, RoomEvent } from './inbound.js';
import { isRefusal, requestOptions } from './session.js';

interface JoinedRoom {
  state?: { events?: RoomEvent[] };
  timeline?: { events?: RoomEvent[]; limited?: boolean; prev_batch?: string };
}
interface SyncAnswer {
  next_batch: string;
  rooms?: { join?: Record<string, JoinedRoom>; invite?: Record<string, unknown>; leave?: Record<string, unknown> };
}

export interface SyncCounters {
  syncs: number;
  gaps_filled: number;
  invites_joined: number;
}

/** The /sync position handed on last (the next batch starts after it), in the plugin's store. */
const SINCE_KEY = 'since';
/** How long the homeserver may hold a /sync open when nothing happens. */
const LONG_POLL_MS = 30_000;
/** What the relay reads: messages, redactions, member events (for names) and encryption turned on; no presence, receipts, typing or account data. */
const TYPES = ['m.room.message', 'm.room.redaction', 'm.room.member', 'm.room.encryption'];
/**
 * Only the relay's rooms (invites to them included), and members lazily (those who speak): an account in
 * many big rooms gets small answers. Since tokens do not depend on the filter, so changing the rooms is safe.
 */
const filterOf = (limit: number, rooms: string[]) => JSON.stringify({
  presence: { types: [] }, account_data: { types: [] },
  room: {
    rooms, timeline: { limit, types: TYPES }, state: { types: ['m.room.member', 'm.room.encryption'], lazy_load_members: true },
    ephemeral: { types: [] }, account_data: { types: [] },
  },
});
/** At most this many events are read back to fill one gap (a relay away for long does not flood its chats beyond it). */
const GAP_MAX = 5_000;

/**
 * The relay's own /sync loop through the SDK's HTTP layer (the SDK's startClient keeps its position in
 * memory; this keeps it in the plugin's store). A first start takes one /sync with timeout=0 and a
 * timeline of 1 only for its `next_batch`: the rooms' past is not relayed. After that it long-polls
 * from the kept position; a batch's events are handed on room by room, in order, and the position is
 * kept only once all of them were, so a crash or a stop relays again what was not (the gateway drops
 * what it already took). A `limited` timeline (more happened than the homeserver put in the batch) is
 * filled by paging /messages back from its prev_batch to the kept position.
 */
export class MatrixSync {
  private readonly backoff = new Backoff(500, 30_000);

  constructor(
    private readonly options: {
      client: () => MatrixClient;
      store: KeyValueStore;
      log: Logger;
      counters: SyncCounters;
      inbound: MatrixInbound;
      /** Whether a room id is one of the relay's, and all of them. */
      ours: (roomId: string) => boolean;
      rooms: () => string[];
      self: () => string;
      autoJoinInvites: boolean;
      requestTimeoutMs: number;
      stopping: AbortSignal;
      connected: () => void;
      trouble: (detail: string) => void;
      /** The homeserver refused the account: true when the relay logged in again (go on), false when it stopped. */
      refused: (error: unknown) => Promise<boolean>;
    },
  ) {}

  /** Whether a position is kept (the relay synced before): the next /sync continues from it. */
  get positioned(): boolean {
    return this.options.store.get<string>(SINCE_KEY) !== undefined;
  }

  async run(): Promise<void> {
    const { stopping, store, log } = this.options;
    while (!stopping.aborted) {
      const since = store.get<string>(SINCE_KEY);
      let answer: SyncAnswer;
      try {
        answer = await this.options.client().http.authedRequest<SyncAnswer>(Method.Get, '/sync', {
          filter: filterOf(since === undefined ? 1 : 100, this.options.rooms()), timeout: String(since === undefined ? 0 : LONG_POLL_MS), ...(since ? { since } : {}),
        }, undefined, requestOptions({ abortSignal: stopping, localTimeoutMs: LONG_POLL_MS + this.options.requestTimeoutMs }));
        await this.invites(answer);
        if (since !== undefined) await this.batch(answer, since);
      } catch (error) {
        if (stopping.aborted) return;
        if (isRefusal(error)) {
          if (await this.options.refused(error)) continue;
          return;
        }
        const rateLimited = error instanceof MatrixError && error.isRateLimitError();
        const wait = rateLimited ? safeGetRetryAfterMs(error, 1_000) : this.backoff.next();
        log.warn({ wait_ms: Math.round(wait), ...failureFields(error) }, 'Matrix /sync failed; trying again from the kept position');
        this.options.trouble(rateLimited ? 'rate limited by the homeserver' : `sync failed: ${(error as Error).message}`);
        await sleep(wait, stopping);
        continue;
      }
      if (since === undefined) log.info({}, 'first start: relaying what Matrix rooms say from now on');
      store.set(SINCE_KEY, answer.next_batch);
      this.options.counters.syncs += 1;
      this.backoff.reset();
      this.options.connected();
    }
  }

  /** Invites to the relay's rooms are accepted (when the options say so); others are left alone. */
  private async invites(answer: SyncAnswer): Promise<void> {
    for (const roomId of Object.keys(answer.rooms?.invite ?? {})) {
      if (!this.options.ours(roomId)) {
        this.options.log.info({ room: roomId }, 'invited to a Matrix room that is not one of the relay\'s: ignored');
        continue;
      }
      if (!this.options.autoJoinInvites) continue;
      try {
        await this.options.client().joinRoom(roomId);
        this.options.counters.invites_joined += 1;
        this.options.log.info({ room: roomId }, 'joined a Matrix room on invite');
      } catch (error) {
        if (isRefusal(error) && error.httpStatus === 401) throw error;
        this.options.log.warn({ room: roomId, ...failureFields(error) }, 'could not join a Matrix room the relay was invited to');
      }
    }
  }

  /** A batch's events of the relay's rooms, each room in order (the rooms side by side). */
  private async batch(answer: SyncAnswer, since: string): Promise<void> {
    for (const roomId of Object.keys(answer.rooms?.leave ?? {})) {
      if (this.options.ours(roomId)) this.options.log.warn({ room: roomId }, 'the relay left or was removed from a Matrix room: nothing is relayed there until it is invited back');
    }
    const rooms = Object.entries(answer.rooms?.join ?? {}).filter(([roomId]) => this.options.ours(roomId));
    await Promise.all(rooms.map(async ([roomId, room]) => {
      const { inbound } = this.options;
      const timeline = room.timeline ?? {};
      const events = timeline.events ?? [];
      // A room the relay joined in this batch: what was said before its join is the room's past, not relayed.
      const joined = events.findLastIndex((e) => e.type === 'm.room.member' && e.state_key === this.options.self() &&
        e.content.membership === 'join' && e.unsigned?.prev_content?.membership !== 'join');
      const gap = joined < 0 && timeline.limited && timeline.prev_batch ? await this.fillGap(roomId, timeline.prev_batch, since) : [];
      for (const event of gap) await inbound.take(roomId, event);
      // The state is the room's as the timeline begins: after the gap, before the timeline.
      for (const event of room.state?.events ?? []) inbound.member(roomId, event);
      for (const [index, event] of events.entries()) {
        if (index < joined) inbound.member(roomId, event);
        else await inbound.take(roomId, event);
      }
    }));
  }

  /** The events a limited timeline left out, oldest first: /messages backwards from prev_batch to the kept position. */
  private async fillGap(roomId: string, prevBatch: string, since: string): Promise<RoomEvent[]> {
    const older: RoomEvent[] = [];
    let from: string | undefined = prevBatch;
    while (from !== undefined && older.length < GAP_MAX) {
      const page: { chunk?: RoomEvent[]; end?: string } = await this.options.client().http.authedRequest(
        Method.Get, `/rooms/${encodeURIComponent(roomId)}/messages`,
        { dir: 'b', from, to: since, limit: '100', filter: JSON.stringify({ types: TYPES }) }, undefined, requestOptions({ abortSignal: this.options.stopping }),
      );
      const chunk = page.chunk ?? [];
      older.push(...chunk);
      from = chunk.length > 0 ? page.end : undefined;
    }
    if (older.length >= GAP_MAX) this.options.log.warn({ room: roomId, max: GAP_MAX }, 'a gap in a Matrix room was larger than the relay reads back: older lines are not relayed');
    this.options.counters.gaps_filled += 1;
    return older.reverse();
  }
}
