import type { Client } from '@xmpp/client';
import type { Logger } from 'pino';
import { failureFields, receiveUntilTaken, type GatewayPort, type IncomingFile, type IncomingMessage, type KeyValueStore } from '../../src/index.js';
import { archivePage, type RoomMessage } from './muc.js';
import { chatLine, splitAction } from './render.js';

/** The stanza-id of the last room message handed on (or taken as seen), per room; '' = the archive was empty when first read. */
const POSITION = (room: string) => `position:${room}`;
const RETRY_MS = 2_000;
const PAGE = 100;

export interface InboundCounters {
  received: number;
  caught_up: number;
  receive_retries: number;
}

/** Whether a body is one http(s) URL and nothing else (a scan, no pattern over user text). */
export function isOneUrl(body: string): boolean {
  const text = body.trim();
  if (!text.startsWith('https://') && !text.startsWith('http://')) return false;
  for (let index = 0; index < text.length; index += 1) if (text.charCodeAt(index) <= 32) return false;
  return true;
}

/** A bounded map: the oldest entry goes once there are `max`. */
export class RecentMap<V> {
  private readonly entries = new Map<string, V>();
  constructor(private readonly max: number) {}
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }
  get(key: string): V | undefined {
    return this.entries.get(key);
  }
  has(key: string): boolean {
    return this.entries.has(key);
  }
}

/**
 * Room messages to the gateways, once each and in order per room. The room's archive (XEP-0313) is
 * the durable store: the relay keeps, per room, the stanza-id of the last message it handed on, and on
 * every new session reads the archive after it, page by page. Stanza-ids are opaque (no order), so a
 * message seen twice (in the archive and live, while the catch-up runs) is known by its id: live
 * messages wait in the same serial chain as the catch-up and are dropped when it already took them.
 */
export class XmppInbound {
  private readonly chains = new Map<string, Promise<void>>();
  /** Stanza-ids handed on lately (the archive and live overlap while catching up). */
  private readonly seen = new RecentMap<true>(20_000);
  /** room + message id → stanza-id: XEP-0308 corrections name the message id. */
  private readonly ids = new RecentMap<string>(20_000);
  /** stanza-id → the nick that said it: only its author may correct or retract a message (the room does not check). */
  private readonly authors = new RecentMap<string>(20_000);

  constructor(
    private readonly options: {
      gateway: GatewayPort;
      store: KeyValueStore;
      log: Logger;
      counters: InboundCounters;
      incoming: string;
      incomingAction: string;
      /** The relay's nick in the room now (its own messages are never relayed back). */
      nick: (room: string) => string | undefined;
      /** Whether an origin-id is one of the relay's lines waiting for their reflection. */
      sending: (originId: string) => boolean;
      /** One of the relay's own lines as the room has it (live reflection or archive). */
      own: (message: RoomMessage) => void;
      /**
       * A URL shared in a room (OOB, or a body that is exactly a URL) as a file, when it is on the server's
       * own upload service; undefined (it stays text) otherwise.
       */
      fileAt: (url: string) => Promise<IncomingFile | undefined>;
      stopping: AbortSignal;
    },
  ) {}

  /** Runs `work` in the room's serial chain (the catch-up after a join; the live messages after it). */
  inOrder(room: string, work: () => Promise<void>): Promise<void> {
    const next = (this.chains.get(room) ?? Promise.resolve()).then(work).catch((error: unknown) => {
      this.options.log.error({ room, ...failureFields(error) }, 'a room message could not be handed on');
    });
    this.chains.set(room, next);
    return next;
  }

  live(message: RoomMessage): void {
    void this.inOrder(message.room, () => this.take(message));
  }

  async idle(): Promise<void> {
    await Promise.all(this.chains.values());
  }

  /**
   * What the room said since the last message handed on, from its archive. A first start (no position)
   * hands on nothing of the past: it takes the archive's newest message as the position.
   */
  async catchUp(client: Client, room: string): Promise<void> {
    const position = this.options.store.get<string>(POSITION(room));
    if (position === undefined) {
      await this.startPosition(client, room);
      return;
    }
    let after = position === '' ? undefined : position;
    for (;;) {
      if (this.options.stopping.aborted) return;
      let page;
      try {
        page = await archivePage(client, room, { ...(after !== undefined ? { after } : {}), max: PAGE });
      } catch (error) {
        if ((error as { condition?: string }).condition !== 'item-not-found') throw error;
        // The archive no longer has the position (expired, or the room was recreated): what came after it cannot be told apart.
        this.options.log.warn({ room, position: after }, 'the room\'s archive no longer has the last message handed on; going on from its newest');
        await this.startPosition(client, room);
        return;
      }
      for (const message of page.messages) {
        await this.take(message);
        this.options.counters.caught_up += 1;
      }
      if (page.complete || page.messages.length === 0 || !page.last) return;
      after = page.last;
    }
  }

  private async startPosition(client: Client, room: string): Promise<void> {
    const newest = await archivePage(client, room, { latest: true, max: 1 });
    const last = newest.messages.at(-1);
    // The relay's own line there (a crash before its first reflection on a first start) still counts as sent.
    if (last && last.nick === this.options.nick(room)) this.options.own(last);
    // Not marked as seen: the newest may have been said after the join (the room archives it before
    // this read), and then its live copy, queued behind this catch-up, must still be handed on; one
    // said before the join never comes live (the join asks for no history).
    this.options.store.set(POSITION(room), last?.stanzaId ?? '');
  }

  private async take(message: RoomMessage): Promise<void> {
    const { room, stanzaId } = message;
    if (stanzaId && this.seen.has(stanzaId)) return;
    if (stanzaId && message.id) this.ids.set(`${room} ${message.id}`, stanzaId);
    if (stanzaId) this.authors.set(stanzaId, message.nick);
    const own = message.nick === this.options.nick(room) || (message.originId !== undefined && this.options.sending(message.originId));
    if (own) this.options.own(message);
    else await this.handOn(message);
    if (stanzaId) {
      this.seen.set(stanzaId, true);
      this.options.store.set(POSITION(room), stanzaId);
    }
  }

  private async handOn(message: RoomMessage): Promise<void> {
    const { room, nick } = message;
    const speaker = { platform: 'xmpp', id: `${room}/${nick}`, name: nick };
    const time = message.time ?? new Date().toISOString();
    if (message.retracts) {
      if (this.authors.get(message.retracts) === nick) await this.receive(room, { kind: 'delete', text: '', nativeId: message.retracts, speaker, time });
      return;
    }
    const body = message.body ?? '';
    if (message.replaces) {
      // Only a correction of a message the relay saw (and so the gateway knows), by its author, can be mapped.
      const target = this.ids.get(`${room} ${message.replaces}`);
      if (target && this.authors.get(target) === nick && body !== '') await this.receive(room, { kind: 'edit', text: body, nativeId: target, revision: message.stanzaId ?? message.id ?? time, speaker, time });
      return;
    }
    if (!message.stanzaId && !message.id) return;
    // A file: the OOB URL, or a body that is one URL alone (what clients send for an upload); read only from the server's own upload service.
    const shared = message.oob ?? (isOneUrl(body) ? body.trim() : undefined);
    const file = shared !== undefined ? await this.options.fileAt(shared) : undefined;
    // The body of a shared file is its URL (the fallback for clients without OOB): the file stands for it.
    const said = file && body.trim() === shared ? '' : body;
    if (said === '' && !file) return;
    const { action, text } = splitAction(said);
    await this.receive(room, {
      kind: action ? 'action' : 'message', text, speaker, time,
      nativeId: message.stanzaId ?? message.id!,
      ...(text !== '' ? { chatText: chatLine(action ? this.options.incomingAction : this.options.incoming, nick, text) } : {}),
      ...(file ? { files: [file] } : {}),
    });
    this.options.counters.received += 1;
  }

  /** Hands one line to the gateway; a chat that will not take it now is tried again until it does (or the relay stops). */
  private receive(room: string, line: IncomingMessage): Promise<void> {
    return receiveUntilTaken(this.options.gateway, room, line, {
      stopping: this.options.stopping, retryMs: RETRY_MS, onRetry: () => (this.options.counters.receive_retries += 1),
    });
  }

}
