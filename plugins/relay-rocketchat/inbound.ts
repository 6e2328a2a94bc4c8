import type { Logger } from 'pino';
import { attributedLines, failureFields, oneLineName, receiveUntilTaken, RecentIds, sleep, type GatewayPort, type IncomingMessage, type KeyValueStore } from '../../src/index.js';
import { captionOf, incomingFiles, type RocketFileFields } from './files.js';
import { plainFromRocketchat } from './render.js';
import { isRefusal, type RocketRest } from './rest.js';

/** A message as the realtime API (EJSON dates) and REST (ISO dates) give it: the fields the relay reads. */
export interface RocketMessage extends RocketFileFields {
  _id: string;
  rid: string;
  msg: string;
  ts: string | { $date: number };
  u: { _id: string; username: string; name?: string };
  /** A system message's type (`uj`, `ul`, `rm` for a removed message, ...); absent for what someone said. */
  t?: string;
  tmid?: string;
  editedAt?: string | { $date: number };
  alias?: string;
  bot?: unknown;
  _hidden?: boolean;
}

export interface InboundCounters {
  received: number;
  caught_up: number;
  receive_retries: number;
}

/** A room: its id and whether it is a channel (`c`) or a private group (`p`): their history endpoints differ. */
export interface Room {
  id: string;
  type: 'c' | 'p';
}

/** Where each room's intake stands, in the plugin's store: the newest `ts` (ms) handed on, and the ids of that millisecond. */
export interface Mark {
  at: number;
  ids: string[];
}
export const MARK_KEY = (roomId: string) => `mark:${roomId}`;
const RETRY_MS = 2_000;
/** Messages one history read asks for. */
const HISTORY_PAGE = 100;

/** A date of either form as ms since the epoch (NaN when it is neither). */
export function msOf(date: string | { $date: number } | undefined): number {
  if (date === undefined) return Number.NaN;
  return typeof date === 'string' ? Date.parse(date) : Number(date.$date);
}

/**
 * Rocket.Chat messages to the gateways, once each and in order per room. The server keeps every
 * message, so the relay keeps only a mark per room (the newest message handed on); after each realtime
 * session's subscriptions are ready (a start, a reconnect) it reads what came after the mark with
 * channels.history / groups.history `oldest`, paged by `offset`, and hands it on oldest first.
 * Live messages and the catch-up go through one serial chain per room; a message seen both ways goes
 * once (and the gateway dedupes by id besides). A message seen again with a new `editedAt` is an edit;
 * `t: 'rm'` (a deletion shown as such) or a deleteMessage event is a deletion.
 */
export class RocketInbound {
  private readonly chains = new Map<string, Promise<void>>();
  private readonly handedOn = new RecentIds(10_000);
  /** Who said the messages seen lately: a deleteMessage event names only the message. */
  private readonly speakers = new Map<string, IncomingMessage['speaker']>();

  constructor(
    private readonly options: {
      gateway: GatewayPort;
      store: KeyValueStore;
      log: Logger;
      counters: InboundCounters;
      incoming: string;
      rest: () => RocketRest;
      self: () => string;
      /** The gateway's channels (as written in bots.yaml) of a room id. */
      channelsOf: (roomId: string) => readonly string[];
      room: (roomId: string) => Room | undefined;
      /** The relay's own messages lately (their deletion by a moderator is not news). */
      isOwn: (messageId: string) => boolean;
      noteRoot: (messageId: string, rootId: string) => void;
      showName: 'username' | 'name';
      ignoreBots: boolean;
      refused: (error: unknown) => void;
      stopping: AbortSignal;
      /** The server's address: a message's files are read from it only. */
      serverUrl: string;
    },
  ) {}

  /** A message of the room stream: new, edited or removed. */
  live(roomId: string, message: RocketMessage): void {
    if (message.rid !== roomId) return;
    this.inOrder(roomId, async () => {
      await this.seen(message, false);
    });
  }

  /** A deleteMessage event of one of the relay's rooms. */
  deleted(roomId: string, messageId: string): void {
    this.inOrder(roomId, async () => {
      if (this.options.isOwn(messageId)) return;
      const speaker = this.speakers.get(messageId) ?? { platform: 'rocketchat', id: '', name: 'someone' };
      if (speaker.id === this.options.self()) return;
      await this.receive(roomId, { kind: 'delete', text: '', nativeId: messageId, speaker });
    });
  }

  /** A new realtime session: each room reads what was said since its mark. */
  catchUp(roomIds: readonly string[]): void {
    for (const roomId of roomIds) this.inOrder(roomId, () => this.catchUpRoom(roomId));
  }

  async idle(): Promise<void> {
    await Promise.all(this.chains.values());
  }

  private inOrder(roomId: string, work: () => Promise<void>): void {
    const next = (this.chains.get(roomId) ?? Promise.resolve()).then(work).catch((error: unknown) => {
      if (!this.options.stopping.aborted) this.options.log.error({ room: roomId, ...failureFields(error) }, 'a Rocket.Chat message could not be handed on');
    });
    this.chains.set(roomId, next);
  }

  /**
   * The messages after the mark (and of its millisecond), oldest first: read newest first a page at a
   * time with `offset` (not `latest`: a page of one millisecond would end the read), back to the mark.
   * A message arriving meanwhile pushes the rest down a place: read twice, kept once.
   */
  private async since(room: Room, mark: Mark): Promise<RocketMessage[]> {
    const found = new Map<string, RocketMessage>();
    const oldest = new Date(mark.at).toISOString();
    for (let offset = 0; ; offset += HISTORY_PAGE) {
      const page = await this.options.rest().get<{ messages: RocketMessage[] }>(`${room.type === 'p' ? 'groups' : 'channels'}.history`, {
        roomId: room.id, oldest, inclusive: true, count: HISTORY_PAGE, offset,
      });
      const messages = page.messages ?? [];
      let fresh = 0;
      for (const message of messages) {
        if (found.has(message._id)) continue;
        found.set(message._id, message);
        fresh += 1;
      }
      if (messages.length < HISTORY_PAGE) break;
      if (fresh === 0) {
        // A full page of nothing new: a server that ignores `offset` (before 0.75) would answer it for ever.
        this.options.log.warn({ room: room.id, read: found.size }, 'Rocket.Chat\'s history gave the same page again (offset not supported?): catching up only what was read');
        break;
      }
    }
    // Newest first as read: reversed, then by time (messages of one millisecond as the server ordered them).
    return [...found.values()].reverse().toSorted((a, b) => msOf(a.ts) - msOf(b.ts));
  }

  private async catchUpRoom(roomId: string): Promise<void> {
    const { store, stopping, log } = this.options;
    for (;;) {
      if (stopping.aborted) return;
      const room = this.options.room(roomId);
      const mark = store.get<Mark>(MARK_KEY(roomId));
      if (!room || mark === undefined) return;
      try {
        for (const message of await this.since(room, mark)) {
          if (stopping.aborted) return;
          if (await this.seen(message, true)) this.options.counters.caught_up += 1;
        }
        return;
      } catch (error) {
        if (stopping.aborted) return;
        if (isRefusal(error)) return this.options.refused(error);
        log.warn({ room: roomId, ...failureFields(error) }, 'could not read what the Rocket.Chat room said meanwhile; trying again');
        await sleep(RETRY_MS, stopping);
      }
    }
  }

  /**
   * A room read for the first time: its newest message is where the intake starts. Done before the
   * websocket connects, so a message sent in between is caught up, not lost. Throws when the server cannot be read.
   */
  async firstMark(room: Room): Promise<void> {
    if (this.options.store.get<Mark>(MARK_KEY(room.id)) !== undefined) return;
    const page = await this.options.rest().get<{ messages: RocketMessage[] }>(`${room.type === 'p' ? 'groups' : 'channels'}.history`, { roomId: room.id, count: 1 });
    const newest = page.messages?.[0];
    this.options.store.set(MARK_KEY(room.id), newest ? { at: msOf(newest.ts), ids: [newest._id] } : { at: 0, ids: [] });
    this.options.log.info({ room: room.id }, 'first start: relaying what the Rocket.Chat room says from now on');
  }

  /** A message seen live or in a catch-up read: new (handed on), or an older one edited or removed. Answers whether a new line was handed on. */
  private async seen(message: RocketMessage, caughtUp: boolean): Promise<boolean> {
    const mark = this.options.store.get<Mark>(MARK_KEY(message.rid));
    const at = msOf(message.ts);
    const known = this.handedOn.has(message._id) || mark === undefined || at < mark.at || mark.ids.includes(message._id);
    if (message.tmid) this.options.noteRoot(message._id, message.tmid);
    if (!known) {
      // Sent and removed while the relay was away (or before it saw it): nothing to hand on, the mark moves past it.
      if (message.t === 'rm' || message._hidden) return (this.advance(message), false);
      return await this.take(message);
    }
    if (caughtUp && !this.handedOn.has(message._id)) return false;
    if (message.t === 'rm') {
      if (!this.options.isOwn(message._id) && message.u._id !== this.options.self()) {
        await this.receive(message.rid, { kind: 'delete', text: '', nativeId: message._id, speaker: this.speaker(message) });
      }
      return false;
    }
    // Seen again without a new editedAt: a reaction, a pin, a thread's count: nothing to hand on.
    if (message.editedAt === undefined || !this.relayable(message)) return false;
    const text = plainFromRocketchat(message.msg);
    if (text === '') return false;
    const speaker = this.speaker(message);
    await this.receive(message.rid, { kind: 'edit', text, nativeId: message._id, revision: String(msOf(message.editedAt)), speaker, chatText: this.render(speaker.name, text) });
    return false;
  }

  private async take(message: RocketMessage): Promise<boolean> {
    let handed = false;
    if (this.relayable(message)) {
      // A file message's files are read through the bot's credentials from this server only; its text is the caption.
      const files = incomingFiles(this.options.rest(), message, this.options.serverUrl);
      const text = plainFromRocketchat(files.length > 0 ? captionOf(message.msg, message) : message.msg);
      if (text !== '' || files.length > 0) {
        const speaker = this.speaker(message);
        const line: IncomingMessage = {
          kind: 'message', text, nativeId: message._id, time: new Date(msOf(message.ts)).toISOString(), speaker,
          ...(message.tmid ? { replyTo: message.tmid } : {}),
          ...(text !== '' ? { chatText: this.render(speaker.name, text) } : {}),
          ...(files.length > 0 ? { files } : {}),
        };
        await this.receive(message.rid, line);
        this.options.counters.received += 1;
        handed = true;
      }
    }
    this.handedOn.add(message._id);
    this.advance(message);
    return handed;
  }

  /** Someone's message: not the relay's own, not a system message, not hidden (an edit's old copy); an integration's unless ignored. */
  private relayable(message: RocketMessage): boolean {
    if (message.u?._id === this.options.self() || message._hidden) return false;
    if (message.t !== undefined && message.t !== '') return false;
    return !(this.options.ignoreBots && message.bot !== undefined && message.bot !== null);
  }

  private advance(message: RocketMessage): void {
    const key = MARK_KEY(message.rid);
    const mark = this.options.store.get<Mark>(key);
    const at = msOf(message.ts);
    if (!Number.isFinite(at) || (mark && at < mark.at)) return;
    const ids = mark && mark.at === at ? [...mark.ids.filter((id) => id !== message._id), message._id] : [message._id];
    this.options.store.set(key, { at, ids });
  }

  /** Who said it: an integration's message by the alias it gave, else the user by the name `show_name` picks. */
  private speaker(message: RocketMessage): IncomingMessage['speaker'] {
    const user = message.u ?? { _id: '', username: 'someone' };
    const alias = message.bot && typeof message.alias === 'string' && message.alias.trim() !== '' ? message.alias : undefined;
    const name = alias ?? (this.options.showName === 'name' ? user.name || user.username : user.username);
    const speaker = { platform: 'rocketchat', id: user._id, name };
    this.speakers.set(message._id, speaker);
    if (this.speakers.size > 10_000) this.speakers.delete(this.speakers.keys().next().value!);
    return speaker;
  }

  /** Every line of the text carries the speaker (attributedLines); the name is one line, its bidi closed. */
  private render(name: string, text: string): string {
    const shown = oneLineName(name);
    return attributedLines(text, (line) => this.options.incoming.replaceAll('{name}', () => shown).replace('{text}', () => line));
  }

  /** Hands one line to each gateway channel of the room; a chat that will not take it now is tried again until it does. */
  private async receive(roomId: string, line: IncomingMessage): Promise<void> {
    for (const channel of this.options.channelsOf(roomId)) {
      await receiveUntilTaken(this.options.gateway, channel, line, {
        stopping: this.options.stopping, retryMs: RETRY_MS, onRetry: () => (this.options.counters.receive_retries += 1),
      });
    }
  }
}
