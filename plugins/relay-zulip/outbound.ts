import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { failureFields, QueueDrain, type Attachment, type DrainOutcome, type DurableQueue, type MediaFiles, type QueueBacklog } from '../../src/index.js';
import { isRefusal, ZulipError, type ZulipClient } from './client.js';
import { fileTail, filesForZulip } from './files.js';
import type { ZulipMessage } from './intake.js';
import { parseSide } from './options.js';

/** A gateway line waiting for Zulip, rendered when queued. */
export interface OutboundItem {
  key: string;
  /** The side as the gateway names it: `stream/topic` or `stream`. */
  channel: string;
  kind: 'post' | 'edit' | 'delete';
  content?: string;
  /** post: the Zulip message it answers (a whole-stream side posts into its topic); edit/delete: the message changed. */
  target?: string;
  /** A reply whose parent was not posted yet when queued (OutgoingMessage.replyToKey): asked for right before sending. */
  parentKey?: string;
  /** Its content when it does go into its parent's topic: without the quote that stood in. */
  replyContent?: string;
  /** post: files in the media store, uploaded right before the message (their links in it). */
  files?: Attachment[];
  /** post: the lines of files that were not relayed (plain text, escaped when sent). */
  refusedLines?: string[];
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

/**
 * An attempt noted before it is made: a retry first looks for the message after `after` (the newest id
 * the relay knew). With files, each upload is noted as it is made, then the content with their links: a
 * retry looks for that content and sends that, and never uploads a noted file again.
 */
interface AttemptNote {
  key: string;
  after: number;
  content?: string;
  /** The line's files uploaded so far (media id → upload path), before the content was made. */
  uploads?: Record<string, string>;
}

/** Zulip takes at most 10,000 characters a message. */
const MAX_CONTENT = 10_000;

/** The `local_id` of a line: its queue's echo names it. */
export function nonceOf(key: string): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 22);
}

/**
 * Lines to Zulip, oldest first, one at a time: a line leaves the durable queue only once the server
 * took it (or refused it for good). Zulip has no idempotency key; a send names the stream's event queue
 * and a `local_id`, and the queue's echo ties the message to it; and the attempt is noted durably
 * before it is made, so a retry after a lost answer or a kill -9 first asks the echoes, then the stream's
 * history (the bot's messages after the note, the same topic and content), and takes the message it
 * finds. 429s wait what `retry-after` says; a network failure or a 5xx is tried again with a growing pause.
 */
export class ZulipOutbound {
  private readonly drain: QueueDrain<OutboundItem>;

  constructor(
    private readonly queue: DurableQueue<OutboundItem>,
    private readonly options: {
      client: () => ZulipClient;
      self: () => number;
      log: Logger;
      counters: OutboundCounters;
      durable: () => Promise<void>;
      /** A stream's id (sends name it: a stream renamed since the start still gets its lines). */
      streamIdOf: (stream: string) => number | undefined;
      /** The stream's event queue now (a send names it, for its echo). */
      queueOf: (stream: string) => string | undefined;
      /** The message an echo named with this `local_id`, when the relay saw it. */
      echoed: (localId: string) => ZulipMessage | undefined;
      /** The newest message id the relay knows in a stream (what an attempt's message will come after). */
      newest: (stream: string) => number;
      /** A message's topic, when the relay knows it or can read it (a whole-stream side's reply goes there). */
      topicOf: (messageId: string, signal: AbortSignal) => Promise<string | undefined>;
      defaultTopic: string;
      posted: (item: OutboundItem, message: { id: number; topic: string; stream: string }) => void;
      nativeOf: (key: string, channel: string) => string | undefined;
      /** The key was refused: the relay stops. */
      fatal: (error: unknown) => void;
      /** The media store: a line's files, uploaded from it. */
      media: MediaFiles;
      /** Files larger than this go as their link line (the server's max_file_upload_size_mib, or the option). */
      uploadLimit: () => number;
    },
  ) {
    this.drain = new QueueDrain(queue, {
      send: (item, signal) => this.send(item, signal),
      onRetry: () => {
        options.counters.retries += 1;
      },
      retryAfter: 'exactly',
      // The attempt's note goes with its item, in the same write.
      shiftNote: () => (this.queue.note ? null : undefined),
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

  private async send(item: OutboundItem, signal: AbortSignal): Promise<DrainOutcome> {
    const { log, counters } = this.options;
    try {
      // A worker whose unit moved elsewhere sends nothing (docs/scale-out.md).
      await this.options.durable();
    } catch (error) {
      log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: sending nothing more to Zulip');
      return 'stop';
    }
    const client = this.options.client();
    try {
      if (item.kind === 'post') {
        await this.post(client, item, signal);
        counters.posted += 1;
      } else if (item.kind === 'edit') {
        await client.call('PATCH', `/messages/${encodeURIComponent(item.target!)}`, { content: await this.keepingFiles(client, item, signal) }, { signal });
        counters.edited += 1;
      } else {
        await client.call('DELETE', `/messages/${encodeURIComponent(item.target!)}`, {}, { signal });
        counters.deleted += 1;
      }
      return 'done';
    } catch (error) {
      if (signal.aborted) return 'stop';
      if (isRefusal(error)) {
        this.options.fatal(error);
        return 'stop';
      }
      if (error instanceof ZulipError && error.retryAfterMs !== undefined) {
        counters.rate_limited += 1;
        log.info({ channel: item.channel, wait_ms: error.retryAfterMs }, 'Zulip limits the relay\'s rate: waiting');
        return error.retryAfterMs;
      }
      if (error instanceof ZulipError && error.status >= 400 && error.status < 500) {
        // Gone already: what a deletion asked for is so.
        if (item.kind === 'delete') return 'done';
        // Not allowed in that stream, a message that no longer exists, an edit past the organisation's limit: trying again changes nothing.
        counters.dropped += 1;
        log.error({ channel: item.channel, kind: item.kind, status: error.status, code: error.code, reason: error.message }, 'Zulip refused a line for good; it is dropped');
        return 'done';
      }
      log.warn({ channel: item.channel, ...failureFields(error) }, 'Zulip did not take a line; trying again');
      return 'retry';
    }
  }

  /** Where a post goes: its side's topic, or (a whole stream) its parent's topic, else the default one; with the quote when not beside its parent. */
  private async placeOf(item: OutboundItem, signal: AbortSignal): Promise<{ topic: string; content: string }> {
    const side = parseSide(item.channel);
    if (side.topic !== undefined) return { topic: side.topic, content: item.content! };
    const parent = item.target ?? (item.parentKey !== undefined ? this.options.nativeOf(item.parentKey, item.channel) : undefined);
    const topic = parent === undefined ? undefined : await this.options.topicOf(parent, signal);
    return topic === undefined ? { topic: this.options.defaultTopic, content: item.content! } : { topic, content: item.replyContent ?? item.content! };
  }

  /** Makes the message, or finds the one an earlier attempt made (its answer lost, or the relay killed before it came). */
  private async post(client: ZulipClient, item: OutboundItem, signal: AbortSignal): Promise<void> {
    const { stream } = parseSide(item.channel);
    const place = await this.placeOf(item, signal);
    const { topic } = place;
    let content = place.content;
    const nonce = nonceOf(item.key);
    const note = this.queue.note as AttemptNote | null | undefined;
    if (note?.key === item.key && (note.content !== undefined || !this.hasFiles(item))) {
      content = note.content ?? content;
      const made = this.options.echoed(nonce) ?? await this.lookUp(client, stream, topic, content, note.after, signal);
      if (made) {
        this.options.counters.found_after_retry += 1;
        this.options.posted(item, { id: made.id, topic: made.subject, stream });
        return;
      }
    } else {
      const after = note?.key === item.key ? note.after : this.options.newest(stream);
      if (this.hasFiles(item)) {
        // Each upload is noted once made: a kill between an upload and its note leaves that one upload
        // unreferenced on Zulip (made again on the retry); a noted one is not uploaded again.
        const uploads = { ...(note?.key === item.key ? note.uploads : {}) };
        content = await this.withFiles(client, content, item, uploads, async (id, path) => {
          uploads[id] = path;
          this.queue.setNote({ key: item.key, after, uploads } satisfies AttemptNote);
          await this.options.durable();
        }, signal);
      }
      this.queue.setNote({ key: item.key, after, ...(this.hasFiles(item) ? { content } : {}) } satisfies AttemptNote);
      await this.options.durable();
    }
    const queueId = this.options.queueOf(stream);
    const answer = await client.call<{ id: number }>('POST', '/messages', {
      type: 'stream', to: this.options.streamIdOf(stream) ?? stream, topic, content, ...(queueId ? { queue_id: queueId, local_id: nonce } : {}),
    }, { signal });
    this.options.posted(item, { id: answer.id, topic, stream });
  }

  /** An edit's content, with the file lines the message ends with now (read first: a changed caption keeps its picture). */
  private async keepingFiles(client: ZulipClient, item: OutboundItem, signal: AbortSignal): Promise<string> {
    const { message } = await client.get<{ message: ZulipMessage }>(`/messages/${encodeURIComponent(item.target!)}`, { apply_markdown: false }, { signal });
    const tail = fileTail(message.content);
    return tail.length === 0 ? item.content! : `${item.content!}\n${tail.join('\n')}`;
  }

  private hasFiles(item: OutboundItem): boolean {
    return (item.files?.length ?? 0) > 0 || (item.refusedLines?.length ?? 0) > 0;
  }

  /** The content with the line's files after the text: uploaded ones linked, the others as their link lines. */
  private async withFiles(
    client: ZulipClient, content: string, item: OutboundItem, uploads: Readonly<Record<string, string>>, uploaded: (id: string, path: string) => Promise<void>, signal: AbortSignal,
  ): Promise<string> {
    const lines = await filesForZulip(client, this.options.media, { files: item.files ?? [], refusedLines: item.refusedLines ?? [], uploads, uploaded }, this.options.uploadLimit(), signal);
    const tail = lines.join('\n');
    const room = MAX_CONTENT - tail.length - 1;
    const text = content.length > room ? `${content.slice(0, Math.max(0, room - 1))}…` : content;
    return text.trim() === '' ? tail : `${text}\n${tail}`;
  }

  /** The bot's message after `after` in the stream with this topic and content, if an earlier attempt made it. */
  private async lookUp(client: ZulipClient, stream: string, topic: string, content: string, after: number, signal: AbortSignal): Promise<ZulipMessage | undefined> {
    const page = await client.get<{ messages: ZulipMessage[] }>('/messages', {
      anchor: after, num_before: 0, num_after: 100, include_anchor: false, apply_markdown: false,
      narrow: JSON.stringify([['stream', stream], ['sender', this.options.self()]]),
    }, { signal });
    const wanted = content.trim();
    return (page.messages ?? []).find((message) => message.id > after && message.sender_id === this.options.self()
      && message.subject.toLowerCase() === topic.toLowerCase() && message.content.trim() === wanted);
  }
}
