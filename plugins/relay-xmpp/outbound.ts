import { xml, type Element } from '@xmpp/client';
import type { Logger } from 'pino';
import { failureFields, QueueDrain, type Attachment, type DrainOutcome, type DurableQueue, type QueueBacklog } from '../../src/index.js';
import { NS_OOB } from './http-upload.js';
import { RecentMap } from './inbound.js';
import { NS, type RoomMessage } from './muc.js';
import { originIdOf } from './render.js';

/** A gateway line waiting for its room. */
export interface OutboundItem {
  key: string;
  /** The room's bare JID, lower-cased. */
  room: string;
  kind: 'post' | 'edit' | 'delete';
  body?: string;
  /** edit: the message id (= origin-id) of the relay's post it corrects; delete: the room's stanza-id of it. */
  target?: string;
  /**
   * A file of the line, a message of its own after the line's (which names it with the speaker): its body
   * the URL of the file uploaded to the server's upload service, with OOB; else the link of the media store.
   */
  file?: Attachment;
}

/** The message's id and origin-id: the line's key's, and for a file of the line the key's and the file's. */
export function originOf(item: Pick<OutboundItem, 'key' | 'file'>): string {
  return originIdOf(item.file ? `${item.key}\u0000file\u0000${item.file.id}` : item.key);
}

/**
 * The queue's note while the head's file goes up: the URL of its upload, written before its message is
 * sent, so a message sent again after a crash names the same upload (no second one). Cleared as it goes.
 */
interface UploadNote {
  origin: string;
  url: string;
}

/** A file's URL to send: uploaded natively, else the media store's link; undefined when there is neither. */
export type FileUrl = { url: string; native: boolean } | undefined;

export interface OutboundCounters {
  /** Messages written to the stream (a resend counts again). */
  sent: number;
  posted: number;
  /** Files sent as messages of their own (uploaded, or their link). */
  files: number;
  edited: number;
  deleted: number;
  dropped: number;
  retries: number;
}

const RETRACTED = 'This message was deleted.';

/** How a wait for a reflection ended. */
type Waited = 'reflected' | 'refused' | 'timeout' | 'new-session' | 'stop';

/** Stanza errors that sending the same line again will not change. */
const LASTING = new Set(['forbidden', 'not-allowed', 'bad-request', 'policy-violation', 'not-authorized', 'item-not-found', 'service-unavailable']);

/**
 * Lines to the rooms, oldest first, one at a time. A MUC answers a message with nothing but its
 * reflection (the room sends it back to every occupant, the sender too, with the same id and origin-id
 * and the room's stanza-id), so a line leaves the durable queue when its reflection arrives, live or
 * read from the archive on the next session; a line not reflected in time is sent again with the same
 * id. Before a line is sent, the room must have been joined and its archive read in this session: the
 * relay's own lines found there (a crash or a lost session between send and reflection) count as sent.
 */
export class XmppOutbound {
  private readonly drain: QueueDrain<OutboundItem>;
  private readonly waiter = { originId: '', condition: '', done: (_: Waited) => {} };
  private readonly ready = new Set<string>();
  private readonly gone = new Set<string>();
  /** origin-id → the room's stanza-id ('' when it gave none): the relay's lines the rooms have. */
  private readonly reflected = new RecentMap<string>(10_000);

  constructor(
    private readonly queue: DurableQueue<OutboundItem>,
    private readonly options: {
      send: (stanza: Element) => Promise<void>;
      log: Logger;
      counters: OutboundCounters;
      durable: () => Promise<void>;
      reflectionTimeoutMs: number;
      posted: (item: OutboundItem, nativeId: string, originId: string) => void;
      /** Puts a file on the server's upload service (undefined when it cannot: too large, no service, gone from the store). */
      upload: (file: Attachment, signal: AbortSignal) => Promise<string | undefined>;
    },
  ) {
    this.drain = new QueueDrain(queue, {
      send: (item, signal) => this.send(item, signal),
      onRetry: () => {
        options.counters.retries += 1;
      },
      // A line waits until its room was joined in this session (or will never have the relay).
      ready: (item) => this.ready.has(item.room) || this.gone.has(item.room),
    });
  }

  get size(): number {
    return this.drain.size;
  }

  get backlog(): QueueBacklog {
    return this.drain.backlog;
  }

  push(item: OutboundItem): void {
    this.drain.push(item);
  }

  start(): void {
    this.drain.start();
  }

  async stop(): Promise<void> {
    const stopped = this.drain.stop();
    this.waiter.done('stop');
    await stopped;
  }

  /** The room was joined and its archive read in this session: lines may go to it. */
  roomReady(room: string): void {
    this.gone.delete(room);
    this.ready.add(room);
    this.drain.wake();
  }

  /** The room will not have the relay by its settings (banned, members only, a password): its lines are dropped until it does. */
  roomGone(room: string): void {
    this.gone.add(room);
    this.drain.wake();
  }

  /** The relay is no longer in the room (kicked, the room restarted): nothing goes to it until it is joined again. */
  roomLost(room: string): void {
    this.ready.delete(room);
  }

  /** The room answered a line with an error. */
  refused(id: string, condition: string): void {
    if (!id || this.waiter.originId !== id) return;
    this.waiter.condition = condition;
    this.waiter.done('refused');
  }

  /** The stream dropped: nothing goes out until a session is back (resumed: the rooms are as they were). */
  offline(): void {
    this.ready.clear();
  }

  resumed(rooms: Iterable<string>): void {
    for (const room of rooms) this.ready.add(room);
    this.drain.wake();
  }

  /** A new session: the old one's stanzas not yet acknowledged are lost; the archive will tell what the room has. */
  newSession(): void {
    this.ready.clear();
    this.gone.clear();
    this.waiter.done('new-session');
  }

  /** Whether `originId` is the line waiting for its reflection now. */
  sending(originId: string): boolean {
    return this.waiter.originId === originId;
  }

  /** One of the relay's own messages as the room has it. The queue moves on before the position is kept (no resend after a crash). */
  own(message: RoomMessage): void {
    if (!message.originId) return;
    this.reflected.set(message.originId, message.stanzaId ?? '');
    const head = this.queue.peek();
    if (head && originOf(head) === message.originId) this.finish(head);
    if (this.waiter.originId === message.originId) this.waiter.done('reflected');
  }

  private finish(item: OutboundItem): void {
    const originId = originOf(item);
    // A file's upload is forgotten with it, in the same write.
    this.queue.shift(1, this.queue.note ? null : undefined);
    const counters = this.options.counters;
    if (item.file) counters.files += 1;
    else if (item.kind === 'post') {
      counters.posted += 1;
      this.options.posted(item, this.reflected.get(originId) || originId, originId);
    } else if (item.kind === 'edit') counters.edited += 1;
    else counters.deleted += 1;
  }

  private async send(item: OutboundItem, signal: AbortSignal): Promise<DrainOutcome> {
    const originId = originOf(item);
    if (this.gone.has(item.room)) {
      this.queue.shift(1, this.queue.note ? null : undefined);
      this.options.counters.dropped += 1;
      this.options.log.error({ room: item.room, kind: item.kind }, 'the room will not have the relay; a line for it is dropped');
      return 'next';
    }
    if (this.reflected.has(originId)) {
      // Sent before (a crash, a lost session) and the room has it: not sent twice.
      this.finish(item);
      return 'next';
    }
    try {
      // A worker whose unit moved elsewhere sends nothing (docs/scale-out.md).
      await this.options.durable();
    } catch (error) {
      this.options.log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: sending nothing more to XMPP');
      return 'stop';
    }
    let sent = item;
    if (item.file) {
      const url = await this.fileUrl(item, originId, signal);
      if (signal.aborted) return 'stop';
      if (url === undefined) {
        // Not uploaded and no public link: the line's message named it already; nothing more to say.
        this.queue.shift(1, this.queue.note ? null : undefined);
        return 'next';
      }
      sent = { ...item, body: url.url, ...(url.native ? {} : { file: undefined }) };
    }
    const outcome = await this.sendAndWait(sent, originId);
    if (outcome === 'stop') return 'stop';
    // own() took the line from the queue when its reflection came.
    if (outcome === 'reflected') return 'done';
    if (outcome === 'refused' && LASTING.has(this.waiter.condition)) {
      this.queue.shift(1, this.queue.note ? null : undefined);
      this.options.counters.dropped += 1;
      this.options.log.error({ room: item.room, kind: item.kind, condition: this.waiter.condition }, 'the room refused a line for good; it is dropped');
      return 'next';
    }
    if (outcome === 'timeout') this.options.log.warn({ room: item.room, timeout_ms: this.options.reflectionTimeoutMs }, 'the room did not reflect a line in time; sending it again');
    return 'retry';
  }

  /** The URL a file's message carries: its upload kept for it (a resend), else uploaded now and kept; else the store's link. */
  private async fileUrl(item: OutboundItem, originId: string, signal: AbortSignal): Promise<FileUrl> {
    const note = this.queue.note as UploadNote | null | undefined;
    if (note?.origin === originId) return { url: note.url, native: true };
    let url: string | undefined;
    try {
      url = await this.options.upload(item.file!, signal);
    } catch (error) {
      if (signal.aborted) return undefined;
      this.options.log.warn({ room: item.room, ...failureFields(error) }, 'a file could not be uploaded to the XMPP server: its link goes instead');
    }
    if (url !== undefined) {
      this.queue.setNote({ origin: originId, url } satisfies UploadNote);
      return { url, native: true };
    }
    return item.file!.url ? { url: item.file!.url, native: false } : undefined;
  }

  private async sendAndWait(item: OutboundItem, originId: string): Promise<Waited> {
    const waited = new Promise<Waited>((done) => {
      const timer = setTimeout(() => done('timeout'), this.options.reflectionTimeoutMs);
      this.waiter.originId = originId;
      this.waiter.condition = '';
      this.waiter.done = (how) => {
        clearTimeout(timer);
        done(how);
      };
    });
    try {
      await this.options.send(stanzaOf(item, originId));
      this.options.counters.sent += 1;
    } catch (error) {
      // The stream is down: the wait ends with the next session (or the timeout).
      this.options.log.warn({ room: item.room, ...failureFields(error) }, 'a line could not be written to the XMPP stream');
    }
    const outcome = await waited;
    this.waiter.originId = '';
    this.waiter.done = () => {};
    return outcome;
  }

}

/** The message for a line: its id and origin-id from the line's key, so every resend is recognisably the same line. */
export function stanzaOf(item: OutboundItem, originId: string): Element {
  const origin = xml('origin-id', { xmlns: NS.sid, id: originId });
  if (item.kind === 'delete') {
    return xml('message', { type: 'groupchat', to: item.room, id: originId },
      xml('retract', { xmlns: NS.retract, id: item.target }),
      xml('fallback', { xmlns: NS.fallback, for: NS.retract }),
      xml('body', {}, RETRACTED),
      xml('store', { xmlns: NS.hints }),
      origin);
  }
  return xml('message', { type: 'groupchat', to: item.room, id: originId },
    xml('body', {}, item.body ?? ''),
    item.kind === 'edit' ? xml('replace', { xmlns: NS.correct, id: item.target }) : undefined,
    // XEP-0066 beside a body that is the URL alone: clients show the uploaded file inline.
    item.file && item.body ? xml('x', { xmlns: NS_OOB }, xml('url', {}, item.body)) : undefined,
    origin);
}
