import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { failureFields, QueueDrain, type Attachment, type DrainOutcome, type DurableQueue, type MediaFiles, type QueueBacklog } from '../../src/index.js';
import { fileLineTail, RocketFileSender } from './file-outbound.js';
import type { RocketMessage } from './inbound.js';
import { isRefusal, RocketError, type RocketRest } from './rest.js';

/** A line as said, kept in the queue and rendered when it is sent (the bot's permissions, read at start, decide how). */
export interface LineParts {
  speaker: { name: string; id: string; platform: string };
  text: string;
  action: boolean;
  /** Stands above the line when it cannot answer its parent's thread. */
  quote?: { name: string; text: string };
}

/** What a line is sent as: its text, and the speaker's name (and avatar) when messages carry them. */
export interface Rendered {
  msg: string;
  as?: { alias: string; avatar?: string; emoji?: string };
}

/** A gateway line waiting for Rocket.Chat. */
export interface OutboundItem {
  key: string;
  /** The room as the gateway names it (an id or `#name`, as written). */
  channel: string;
  kind: 'post' | 'edit' | 'delete';
  line?: LineParts;
  /** post: the message it answers (its thread is answered); edit/delete: the message changed. */
  target?: string;
  /** A reply whose parent was not posted yet when queued (OutgoingMessage.replyToKey): asked for right before sending. */
  parentKey?: string;
  /** post: files in the media store, each sent as a message of its own (file-outbound.ts). */
  files?: Attachment[];
}

export interface OutboundCounters {
  posted: number;
  edited: number;
  deleted: number;
  dropped: number;
  retries: number;
  rate_limited: number;
  found_after_retry: number;
}

/** Rocket.Chat's id alphabet (Random.id: no 0, 1, I, O, U, V, l): a line's message id is 17 of these, as the server's own. */
const ID_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTWXYZabcdefghijkmnopqrstuvwxyz';

/** The message `_id` of a line: made from its key, so every attempt at it names the same message. */
export function messageIdOf(key: string): string {
  const digest = createHash('sha256').update(`groupwire-rocketchat ${key}`).digest();
  let id = '';
  for (let i = 0; i < 17; i += 1) id += ID_ALPHABET[digest[i]! % ID_ALPHABET.length];
  return id;
}

/** The server refused an `_id` it holds already: the earlier attempt made the message. */
function isDuplicate(error: unknown): boolean {
  return error instanceof RocketError && error.status === 400 && /duplicate key|already exists|error-message-already-exists/i.test(error.message.slice(0, 400) + (error.errorType ?? ''));
}

/**
 * Lines to Rocket.Chat, oldest first, one at a time: a line leaves the durable queue only once the
 * server took it (or refused it for good). Each message carries an `_id` made from the line's key
 * (chat.sendMessage takes the client's), so a retry after a lost answer or a kill -9 names the same
 * message: the server refuses a second message of that id, and the relay then finds the first with
 * chat.getMessage and takes it as sent. 429s wait what the server says; a network failure or a 5xx is
 * tried again with a growing pause.
 */
export class RocketOutbound {
  private readonly drain: QueueDrain<OutboundItem>;
  private readonly files: RocketFileSender;
  /** Message id → its thread's root (a reply must name the root: Rocket.Chat threads are one level). */
  private readonly roots = new Map<string, string>();

  constructor(
    private readonly queue: DurableQueue<OutboundItem>,
    private readonly options: {
      rest: () => RocketRest;
      /** The room id of a room as written; undefined when its `#name` did not resolve. */
      idOf: (channel: string) => string | undefined;
      self: () => string;
      log: Logger;
      counters: OutboundCounters;
      durable: () => Promise<void>;
      posted: (item: OutboundItem, message: RocketMessage) => void;
      nativeOf: (key: string, channel: string) => string | undefined;
      /** The line as sent; `quoted`: with its quote (a reply outside its parent's thread). */
      render: (line: LineParts, quoted: boolean) => Rendered;
      fatal: (error: unknown) => void;
      media: MediaFiles;
      /** Files larger than this go as their link line (the server's FileUpload_MaxFileSize, or the option). */
      uploadLimit: () => number;
      roomType: (roomId: string) => 'c' | 'p' | undefined;
    },
  ) {
    this.drain = new QueueDrain(queue, {
      send: (item, signal) => this.send(item, signal),
      onRetry: () => {
        options.counters.retries += 1;
      },
      retryAfter: 'exactly',
      // A line's file progress (file-outbound.ts) goes with its item, in the same write.
      shiftNote: () => (this.queue.note ? null : undefined),
    });
    this.files = new RocketFileSender(queue, {
      self: options.self, durable: options.durable, media: options.media, uploadLimit: options.uploadLimit, roomType: options.roomType, counters: options.counters,
      sendText: (rest, id, roomId, root, rendered, signal) => this.sendWithId(rest, id, roomId, root, rendered, signal),
      textIdOf: (key, k) => messageIdOf(k === 0 ? key : `${key}\nfile ${k}`),
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
    await this.drain.stop();
  }

  /** A message the relay made or saw answers this thread root. */
  noteRoot(messageId: string, rootId: string): void {
    this.roots.set(messageId, rootId);
    if (this.roots.size > 10_000) this.roots.delete(this.roots.keys().next().value!);
  }

  private async send(item: OutboundItem, signal: AbortSignal): Promise<DrainOutcome> {
    const { log, counters } = this.options;
    try {
      // A worker whose unit moved elsewhere sends nothing (docs/scale-out.md).
      await this.options.durable();
    } catch (error) {
      log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: sending nothing more to Rocket.Chat');
      return 'stop';
    }
    const roomId = this.options.idOf(item.channel);
    if (roomId === undefined) {
      counters.dropped += 1;
      log.error({ channel: item.channel, kind: item.kind }, 'a line for a Rocket.Chat room that did not resolve is dropped');
      return 'done';
    }
    const rest = this.options.rest();
    try {
      if (item.kind === 'post') {
        const message = await this.create(rest, item, roomId, signal);
        counters.posted += 1;
        this.noteRoot(message._id, message.tmid ?? message._id);
        this.options.posted(item, message);
      } else if (item.kind === 'edit') {
        await rest.post('chat.update', { roomId, msgId: item.target!, text: await this.keepingFileLines(rest, item, signal) }, signal);
        counters.edited += 1;
      } else {
        await rest.post('chat.delete', { roomId, msgId: item.target! }, signal);
        counters.deleted += 1;
      }
      return 'done';
    } catch (error) {
      if (signal.aborted) return 'stop';
      if (isRefusal(error)) {
        this.options.fatal(error);
        return 'stop';
      }
      if (error instanceof RocketError && error.status === 429) {
        counters.rate_limited += 1;
        log.info({ channel: item.channel, wait_ms: error.retryAfterMs }, 'Rocket.Chat limits the relay\'s rate: waiting');
        return error.retryAfterMs ?? 1_000;
      }
      if (error instanceof RocketError && error.status >= 400 && error.status < 500) {
        // Gone already (deleted on Rocket.Chat too): what the line asked for is so.
        if (item.kind === 'delete' && /not.?found|error-message-not-found/i.test(`${error.errorType ?? ''} ${error.message.slice(0, 300)}`)) return 'done';
        // No permission to send there, a message that no longer exists, a text the server will never take: trying again changes nothing.
        counters.dropped += 1;
        log.error({ channel: item.channel, kind: item.kind, status: error.status, error_type: error.errorType, reason: error.message }, 'Rocket.Chat refused a line for good; it is dropped');
        return 'done';
      }
      log.warn({ channel: item.channel, ...failureFields(error) }, 'Rocket.Chat did not take a line; trying again');
      return 'retry';
    }
  }

  /** The line's message (its files' messages, the first answered, when it has files), in its parent's thread when it answers one. */
  private async create(rest: RocketRest, item: OutboundItem, roomId: string, signal: AbortSignal): Promise<RocketMessage> {
    const parent = item.target ?? (item.parentKey !== undefined ? this.options.nativeOf(item.parentKey, item.channel) : undefined);
    const root = parent !== undefined ? await this.rootOf(rest, parent, signal) : undefined;
    // In its parent's thread the line stands alone; elsewhere its quote (if any) says what it answers.
    if (item.files?.length) {
      return this.files.post(rest, item, roomId, root, (text, first) => this.options.render({ ...item.line!, text }, first && root === undefined), signal);
    }
    return this.sendWithId(rest, messageIdOf(item.key), roomId, root, this.options.render(item.line!, root === undefined), signal);
  }

  /** Sends a message under its own `_id`; a refusal of that id as taken means an earlier attempt made it: that one is taken. */
  private async sendWithId(rest: RocketRest, id: string, roomId: string, root: string | undefined, rendered: Rendered, signal: AbortSignal): Promise<RocketMessage> {
    const { msg, as } = rendered;
    try {
      const answer = await rest.post<{ message: RocketMessage }>('chat.sendMessage', {
        message: { _id: id, rid: roomId, msg, ...(root ? { tmid: root } : {}), ...(as ?? {}) },
      }, signal);
      return answer.message;
    } catch (error) {
      if (!isDuplicate(error)) throw error;
      const made = await this.made(rest, id, signal);
      if (!made) throw error;
      this.options.counters.found_after_retry += 1;
      return made;
    }
  }

  /** An edit's text, with the file lines the message ends with now (files refused or too big, said after the text: an edit keeps them). */
  private async keepingFileLines(rest: RocketRest, item: OutboundItem, signal: AbortSignal): Promise<string> {
    const text = this.options.render(item.line!, false).msg;
    const { message } = await rest.get<{ message: RocketMessage }>('chat.getMessage', { msgId: item.target! }, signal);
    const tail = fileLineTail(message.msg ?? '');
    return tail.length === 0 ? text : `${text}\n${tail.join('\n')}`;
  }

  /** The relay's message of this id, when the server has it. */
  private async made(rest: RocketRest, id: string, signal: AbortSignal): Promise<RocketMessage | undefined> {
    try {
      const found = await rest.get<{ message: RocketMessage }>('chat.getMessage', { msgId: id }, signal);
      return found.message?.u?._id === this.options.self() ? found.message : undefined;
    } catch (error) {
      if (error instanceof RocketError && (error.status === 404 || error.status === 400)) return undefined;
      throw error;
    }
  }

  /** The root of the thread a message is in (itself when it is a root); undefined when it is gone (the line goes out on its own). */
  private async rootOf(rest: RocketRest, messageId: string, signal: AbortSignal): Promise<string | undefined> {
    const known = this.roots.get(messageId);
    if (known) return known;
    try {
      const found = await rest.get<{ message: RocketMessage }>('chat.getMessage', { msgId: messageId }, signal);
      const root = found.message.tmid ?? found.message._id;
      this.noteRoot(messageId, root);
      return root;
    } catch (error) {
      if (error instanceof RocketError && error.status >= 400 && error.status < 500 && error.status !== 429 && error.status !== 401) return undefined;
      throw error;
    }
  }
}
