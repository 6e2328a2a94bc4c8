import { createHash } from 'node:crypto';
import { ConnectionError, MatrixError, Method, safeGetRetryAfterMs, type MatrixClient } from 'matrix-js-sdk';
import type { Logger } from 'pino';
import { failureFields, QueueDrain, type Attachment, type DurableQueue, type DrainOutcome, type MediaFiles, type QueueBacklog } from '../../src/index.js';
import type { MatrixMedia } from './media.js';
import type { MatrixContent } from './render.js';
import { isRefusal, requestOptions } from './session.js';

/** A gateway line waiting for the homeserver. */
export interface OutboundItem {
  key: string;
  /** The channel as the gateway names it (a room id or alias, as written in the options). */
  channel: string;
  kind: 'post' | 'edit' | 'delete';
  content?: MatrixContent;
  /** edit/delete: the event changed. */
  target?: string;
  /** A reply whose parent was not posted yet when queued (OutgoingMessage.replyToKey): asked for right before sending. */
  parentKey?: string;
  /** Its content when the parent's event id is found then: a reply to it, without the quote that stood in. */
  replyContent?: MatrixContent;
  /** post: the files said with the line, each an event of its own after the text (`content`, absent when the line has none). */
  files?: OutboundFile[];
}

/** A file of a line: uploaded and sent as `native` with its mxc:// URI, or, when it cannot go natively, as its `link` line. */
export interface OutboundFile {
  attachment: Attachment;
  native: MatrixContent;
  link: MatrixContent;
}

/**
 * The queue's note while its head line's files go up: the mxc:// URI of each file uploaded for that
 * line, written before its event is sent, so a retry after a crash sends the same file instead of
 * uploading a second copy. Cleared as the line leaves the queue.
 */
interface UploadNote {
  key: string;
  uploads: Record<string, string>;
}

export interface OutboundCounters {
  posted: number;
  edited: number;
  deleted: number;
  dropped: number;
  retries: number;
  rate_limited: number;
}

/** The wait on a rate limit that names none. */
const RETRY_MIN_MS = 500;

/**
 * The transaction id of a line: the homeserver answers a PUT with a txnId it already took (from the
 * same device) with the event it made then, so a retry after a lost answer or a crash mid-send posts once.
 */
export function txnIdOf(key: string): string {
  return createHash('sha256').update(key).digest('base64url');
}

/** The transaction id of a line's file event: the line's key and the file's id in the media store. */
export function fileTxnIdOf(key: string, attachmentId: string): string {
  return txnIdOf(`${key}\u0000file\u0000${attachmentId}`);
}

const room = (roomId: string) => encodeURIComponent(roomId);

/**
 * Lines to Matrix, oldest first, one at a time: a line leaves the durable queue only once the
 * homeserver took it (or refused it for good). 429 M_LIMIT_EXCEEDED waits what the homeserver asks
 * (Retry-After, else retry_after_ms) and sends the same txnId again; a network failure or a 5xx is tried
 * again with a growing pause.
 */
export class MatrixOutbound {
  private readonly drain: QueueDrain<OutboundItem>;

  constructor(
    private readonly queue: DurableQueue<OutboundItem>,
    private readonly options: {
      client: () => MatrixClient;
      /** The homeserver's media API (uploads) and the media store's files (their bytes). */
      media: MatrixMedia;
      files: MediaFiles;
      /** The relay's own cap on uploads (max_file_size), on top of the homeserver's. */
      maxFileSize: number | undefined;
      /** The room id of a channel; undefined when its alias did not resolve (the line cannot go anywhere). */
      roomOf: (channel: string) => string | undefined;
      /** Whether a room is end-to-end encrypted: the relay sends no plain text there. */
      encrypted: (roomId: string) => boolean;
      log: Logger;
      counters: OutboundCounters;
      durable: () => Promise<void>;
      posted: (item: OutboundItem, eventId: string) => void;
      /** The event id in a channel of the line with this key, once posted (env.gateway.nativeOf). */
      nativeOf: (key: string, channel: string) => string | undefined;
      /** The account was refused: true when the relay logged in again (send again), false when it stopped. */
      refused: (error: unknown) => Promise<boolean>;
    },
  ) {
    this.drain = new QueueDrain(queue, {
      send: (item, signal) => this.send(item, signal),
      onRetry: () => {
        options.counters.retries += 1;
      },
      // A number is the homeserver's retry_after: waited as asked, the growing pause left as it is.
      retryAfter: 'exactly',
      // The uploads of a line delivered are forgotten with it (in the same write).
      shiftNote: () => (queue.note ? null : undefined),
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

  /** Starts sending (once the rooms are resolved: until then lines wait in the queue). */
  start(): void {
    this.drain.start();
  }

  async stop(): Promise<void> {
    await this.drain.stop();
  }

  /**
   * The content to send: a reply queued before its parent was posted becomes a reply to it now (the
   * queue is in order, so the parent went out first and its event id is known), else stays as queued.
   */
  private contentOf(item: OutboundItem): MatrixContent | undefined {
    if (item.parentKey === undefined || item.replyContent === undefined) return item.content;
    const parent = this.options.nativeOf(item.parentKey, item.channel);
    if (parent === undefined) return item.content;
    return { ...item.replyContent, 'm.relates_to': { 'm.in_reply_to': { event_id: parent } } };
  }

  /**
   * A line's events, in order: its text (the txnId of the line's key, as a line without files), then
   * each file (a txnId of the key and the file). Every PUT is idempotent by its txnId, and every upload
   * is kept in the queue's note before its event goes, so a retry after any failure or a crash sends
   * nothing twice. Answers the first event's id (what edits, deletions and replies name).
   */
  private async post(item: OutboundItem, roomId: string, signal: AbortSignal): Promise<string | undefined> {
    const http = this.options.client().http;
    let first: string | undefined;
    const put = async (txnId: string, content: MatrixContent) => {
      const answer = await http.authedRequest<{ event_id: string }>(
        Method.Put, `/rooms/${room(roomId)}/send/m.room.message/${txnId}`, undefined, { ...content }, requestOptions({ abortSignal: signal }),
      );
      first ??= answer.event_id;
    };
    const text = this.contentOf(item);
    if (text) await put(txnIdOf(item.key), text);
    for (const file of item.files ?? []) await put(fileTxnIdOf(item.key, file.attachment.id), await this.fileEvent(item, file, signal));
    return first;
  }

  /**
   * A file's event: its upload kept for this line (a retry), else uploaded now and kept; its link line
   * when it is over the limit (the relay's or the homeserver's), gone from the media store, or refused
   * by the homeserver (413 M_TOO_LARGE, or another refusal that sending again would not change).
   */
  private async fileEvent(item: OutboundItem, file: OutboundFile, signal: AbortSignal): Promise<MatrixContent> {
    const { log } = this.options;
    const attachment = file.attachment;
    const note = this.queue.note as UploadNote | null | undefined;
    const kept = note?.key === item.key ? note.uploads[attachment.id] : undefined;
    if (kept) return { ...file.native, url: kept };
    const limit = await this.limit(signal);
    if (limit !== undefined && attachment.size > limit) {
      log.info({ channel: item.channel, size: attachment.size, limit }, 'a file is over the Matrix upload limit: its link goes instead');
      return file.link;
    }
    let bytes;
    try {
      bytes = await this.options.files.open(attachment.id);
    } catch (error) {
      log.warn({ channel: item.channel, ...failureFields(error) }, 'a file is no longer in the media store: its link goes instead');
      return file.link;
    }
    let mxc: string;
    try {
      mxc = await this.options.media.upload(bytes, attachment, signal);
    } catch (error) {
      bytes.destroy();
      const status = error instanceof MatrixError ? error.httpStatus : undefined;
      if (status !== undefined && status >= 400 && status < 500 && status !== 401 && status !== 429) {
        log.warn({ channel: item.channel, status, errcode: (error as MatrixError).errcode }, 'the homeserver refused a file upload: its link goes instead');
        return file.link;
      }
      throw error;
    }
    const uploads = note?.key === item.key ? note.uploads : {};
    this.queue.setNote({ key: item.key, uploads: { ...uploads, [attachment.id]: mxc } } satisfies UploadNote);
    return { ...file.native, url: mxc };
  }

  /** The largest upload: the relay's max_file_size and the homeserver's m.upload.size, the lower (unknown while the homeserver does not say). */
  private async limit(signal: AbortSignal): Promise<number | undefined> {
    let server: number | undefined;
    try {
      server = await this.options.media.limit(signal);
    } catch (error) {
      if (signal.aborted) throw error;
      this.options.log.debug({ ...failureFields(error) }, 'could not read the homeserver\'s media config: its upload limit is not known');
    }
    const own = this.options.maxFileSize;
    return server === undefined ? own : own === undefined ? server : Math.min(server, own);
  }

  /** 'done', 'retry' (after the growing pause), a number (retry after so many ms), or 'stop'. */
  private async send(item: OutboundItem, signal: AbortSignal): Promise<DrainOutcome> {
    const { log, counters } = this.options;
    try {
      // A worker whose unit moved elsewhere sends nothing (docs/scale-out.md).
      await this.options.durable();
    } catch (error) {
      log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: sending nothing more to Matrix');
      return 'stop';
    }
    const roomId = this.options.roomOf(item.channel);
    if (roomId === undefined) {
      counters.dropped += 1;
      log.error({ channel: item.channel, kind: item.kind }, 'a line for a Matrix room whose alias did not resolve is dropped');
      return 'done';
    }
    if (this.options.encrypted(roomId)) {
      counters.dropped += 1;
      log.error({ channel: item.channel, kind: item.kind }, 'the Matrix room is end-to-end encrypted, which the relay does not support: the line is dropped, not sent in plain text');
      return 'done';
    }
    const txnId = txnIdOf(item.key);
    const http = this.options.client().http;
    try {
      if (item.kind === 'delete') {
        await http.authedRequest(Method.Put, `/rooms/${room(roomId)}/redact/${encodeURIComponent(item.target!)}/${txnId}`, undefined, {}, requestOptions({ abortSignal: signal }));
        counters.deleted += 1;
      } else if (item.kind === 'edit') {
        await http.authedRequest(Method.Put, `/rooms/${room(roomId)}/send/m.room.message/${txnId}`, undefined, { ...item.content }, requestOptions({ abortSignal: signal }));
        counters.edited += 1;
      } else {
        const first = await this.post(item, roomId, signal);
        counters.posted += 1;
        if (first !== undefined) this.options.posted(item, first);
      }
      return 'done';
    } catch (error) {
      if (signal.aborted) return 'stop';
      if (isRefusal(error) && error.httpStatus === 401) return (await this.options.refused(error)) ? 'retry' : 'stop';
      if (error instanceof MatrixError && error.isRateLimitError()) {
        counters.rate_limited += 1;
        const wait = safeGetRetryAfterMs(error, RETRY_MIN_MS);
        log.info({ channel: item.channel, wait_ms: wait }, 'the homeserver limits the relay\'s rate: waiting');
        return wait;
      }
      if (error instanceof MatrixError && error.httpStatus === 404 && item.kind === 'delete') {
        // Gone already: what the line asked for is so.
        return 'done';
      }
      const status = error instanceof MatrixError ? error.httpStatus : undefined;
      if (!(error instanceof ConnectionError) && status !== undefined && status >= 400 && status < 500) {
        // Not in the room, a room that does not exist, an event the homeserver will never take: trying again changes nothing.
        counters.dropped += 1;
        log.error({ channel: item.channel, kind: item.kind, status, errcode: (error as MatrixError).errcode, reason: (error as Error).message }, 'the homeserver refused a line for good; it is dropped');
        return 'done';
      }
      log.warn({ channel: item.channel, ...failureFields(error) }, 'the homeserver did not take a line; trying again');
      return 'retry';
    }
  }
}
