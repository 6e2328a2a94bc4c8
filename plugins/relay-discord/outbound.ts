import { createHash } from 'node:crypto';
import { Routes, type API, type APIMessage } from '@discordjs/core';
import { DiscordAPIError, HTTPError } from '@discordjs/rest';
import type { Logger } from 'pino';
import { failureFields, QueueDrain, type Attachment, type DurableQueue, type MediaFiles, type QueueBacklog } from '../../src/index.js';
import { discordFileLines, multipartOf, withFileLines, type MultipartBody } from './files-out.js';
import type { ChannelWebhook, ChannelWebhooks } from './webhooks.js';

/** A gateway line waiting for Discord. */
export interface OutboundItem {
  key: string;
  channel: string;
  kind: 'post' | 'edit' | 'delete';
  /** As the bot posts it (`**name**: text`). */
  content?: string;
  /** The same line through the channel's webhook: the text alone, under the speaker's name and avatar. */
  as?: { content: string; username: string; avatar_url?: string };
  /** post: the Discord message it answers; edit/delete: the message changed. */
  target?: string;
  /** post: files that go up with it (the media store's); should the store have lost one, their links are posted instead. */
  files?: Attachment[];
}

export interface OutboundCounters {
  posted: number;
  edited: number;
  deleted: number;
  dropped: number;
  retries: number;
}

/** Discord's message flag that keeps links from unfolding into embeds. */
const SUPPRESS_EMBEDS = 1 << 2;
/** Discord's JSON error codes: Unknown Message, Unknown Webhook. */
const UNKNOWN_MESSAGE = 10008;
const UNKNOWN_WEBHOOK = 10015;
/** Request entity too large: the files are over this server's upload limit. */
const TOO_LARGE = 40005;

/**
 * The nonce of a line: Discord keeps a post with `enforce_nonce` from being made twice by one author
 * with one nonce (for a few minutes), so a retry after a lost answer or a crash mid-post posts once.
 * At most 25 characters.
 */
export function nonceOf(key: string): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 25);
}

/**
 * Lines to Discord, oldest first, one at a time: a line leaves the durable queue only once Discord
 * answered it (or refused it for good). Rate limits are the REST library's (it reads the X-RateLimit
 * headers and waits out 429s); a network failure or a 5xx is tried again with a growing pause.
 */
export class DiscordOutbound {
  private readonly drain: QueueDrain<OutboundItem>;

  constructor(
    private readonly queue: DurableQueue<OutboundItem>,
    private readonly options: {
      api: () => API;
      log: Logger;
      counters: OutboundCounters;
      durable: () => Promise<void>;
      posted: (item: OutboundItem, messageId: string) => void;
      /** The media store, whose files go up with their posts. */
      media: MediaFiles;
      /** The channels' webhooks, when lines go out under the speakers' names. */
      webhooks?: ChannelWebhooks;
      /** The newest message id the relay knows in a channel (what a webhook post will come after). */
      newest: (channel: string) => string | undefined;
      /** The token was refused: the relay stops. */
      fatal: (error: unknown) => void;
    },
  ) {
    this.drain = new QueueDrain(queue, {
      send: (item, signal) => this.send(item, signal),
      onRetry: () => {
        options.counters.retries += 1;
      },
      // Each attempt gets a signal of its own, linked to the stop and unlinked after: @discordjs/rest
      // adds an abort listener to the signal of every request and never removes it, so one long-lived
      // signal would gather a listener (and its request's controller) per line for as long as the bot runs.
      signalPerAttempt: true,
      // A webhook post's attempt note goes with its item, in the same write.
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

  private async send(item: OutboundItem, signal: AbortSignal): Promise<'done' | 'retry' | 'stop'> {
    const { log, counters } = this.options;
    try {
      // A worker whose unit moved elsewhere sends nothing (docs/scale-out.md).
      await this.options.durable();
    } catch (error) {
      log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: sending nothing more to Discord');
      return 'stop';
    }
    const api = this.options.api();
    try {
      const hook = item.as && this.options.webhooks ? await this.options.webhooks.get(item.channel, signal) : undefined;
      if (item.kind === 'post') {
        const message = hook ? await this.executeWebhook(api, item, hook, signal) : await this.createMessage(api, item, signal);
        counters.posted += 1;
        this.options.posted(item, message.id);
      } else if (item.kind === 'edit') {
        await this.eitherWay(
          hook && (() => api.webhooks.editMessage(hook.id, hook.token, item.target!, { content: item.as!.content, allowed_mentions: { parse: [] } }, { signal })),
          () => api.channels.editMessage(item.channel, item.target!, { content: item.content, allowed_mentions: { parse: [] } }, { signal }),
        );
        counters.edited += 1;
      } else {
        await this.eitherWay(
          hook && (() => api.webhooks.deleteMessage(hook.id, hook.token, item.target!, undefined, { signal })),
          () => api.channels.deleteMessage(item.channel, item.target!, { signal }),
        );
        counters.deleted += 1;
      }
      return 'done';
    } catch (error) {
      if (signal.aborted) return 'stop';
      if (error instanceof DiscordAPIError && error.code === UNKNOWN_WEBHOOK) {
        // The webhook was deleted on Discord: the next try finds or makes another.
        this.options.webhooks?.forget(item.channel);
        return 'retry';
      }
      if (item.files?.length && (error instanceof DiscordAPIError || error instanceof HTTPError) && (error.status === 413 || (error instanceof DiscordAPIError && error.code === TOO_LARGE))) {
        // The server takes less than max_file_size (Discord's limit differs per server): the files' links instead.
        log.warn({ channel: item.channel, files: item.files.map((file) => file.name) }, 'Discord refused the files as too large for this server (lower max_file_size): the line goes with their links');
        this.withoutFiles(item);
        return 'retry';
      }
      if (error instanceof DiscordAPIError && error.status === 401) {
        this.options.fatal(error);
        return 'stop';
      }
      if (error instanceof DiscordAPIError && error.status === 404 && item.kind === 'delete') {
        // Gone already (deleted on Discord too): what the line asked for is so.
        return 'done';
      }
      if (error instanceof DiscordAPIError && error.status >= 400 && error.status < 500) {
        // Unknown channel or message, missing access, a body Discord will never take: trying again changes nothing.
        counters.dropped += 1;
        log.error({ channel: item.channel, kind: item.kind, status: error.status, code: error.code, reason: error.message }, 'Discord refused a line for good; it is dropped');
        return 'done';
      }
      log.warn({ channel: item.channel, ...failureFields(error) }, 'Discord did not take a line; trying again');
      return 'retry';
    }
  }

  /** The item as a post of the files' links (in memory: a restart tries the files again, and falls back again). */
  private withoutFiles(item: OutboundItem): void {
    const links = discordFileLines(item.files);
    if (item.content !== undefined) item.content = withFileLines(item.content, links);
    if (item.as) item.as = { ...item.as, content: withFileLines(item.as.content, links) };
    delete item.files;
  }

  /**
   * A post as the bot: its nonce with `enforce_nonce`, so a retry after a lost answer or a crash posts
   * once (files and all: the nonce goes in payload_json). Files go up as multipart.
   */
  private async createMessage(api: API, item: OutboundItem, signal: AbortSignal): Promise<APIMessage> {
    const payload = this.payloadWithout(item);
    const { content, form } = await this.withFiles(item, item.content ?? '', payload);
    if (form) return await api.rest.post(Routes.channelMessages(item.channel), { ...multipart(form), signal }) as APIMessage;
    return await api.channels.createMessage(item.channel, { content, ...payload }, { signal });
  }

  /** createMessage's fields but the content. No link previews: a relayed line is text, not an embed someone else chose. */
  private payloadWithout(item: OutboundItem): { nonce: string; enforce_nonce: true; allowed_mentions: { parse: [] }; flags: number; message_reference?: { message_id: string; fail_if_not_exists: false } } {
    return {
      nonce: nonceOf(item.key), enforce_nonce: true, allowed_mentions: { parse: [] }, flags: SUPPRESS_EMBEDS,
      ...(item.target ? { message_reference: { message_id: item.target, fail_if_not_exists: false as const } } : {}),
    };
  }

  /**
   * The item's files as a multipart body with `payload` and `content`; when the store no longer has one
   * of them, no body: the content with the files' links, to post as JSON.
   */
  private async withFiles(item: OutboundItem, content: string, payload: Record<string, unknown>): Promise<{ content: string; form?: MultipartBody }> {
    if (!item.files?.length) return { content };
    const form = await multipartOf({ ...payload, content }, item.files, this.options.media);
    if (form) return { content, form };
    this.options.log.warn({ channel: item.channel, files: item.files.map((file) => file.name) }, 'a file is no longer in the media store (retention): the line goes to Discord with its link');
    return { content: withFileLines(content, discordFileLines(item.files)) };
  }

  /**
   * A webhook post. Discord takes no nonce there, so the attempt is noted durably before it is made
   * (the queue's note, with the newest message id known in the channel): a retry of a noted attempt
   * (its answer lost, or a crash mid-post) first looks for the post among the channel's messages after
   * that id, and takes it when it is there.
   */
  private async executeWebhook(api: API, item: OutboundItem, hook: ChannelWebhook, signal: AbortSignal): Promise<APIMessage> {
    const payload = {
      username: item.as!.username,
      ...(item.as!.avatar_url ? { avatar_url: item.as!.avatar_url } : {}),
      allowed_mentions: { parse: [] },
      flags: SUPPRESS_EMBEDS,
    };
    const { content, form } = await this.withFiles(item, item.as!.content, payload);
    const note = this.queue.note as { key: string; after?: string } | null | undefined;
    if (note?.key === item.key) {
      const page = await api.channels.getMessages(item.channel, { limit: 100, ...(note.after ? { after: note.after } : {}) }, { signal });
      // Discord may rename files (spaces and the like): a post of files is known by how many it has.
      const made = page.find((m) => m.webhook_id === hook.id && m.content === content && m.author.username === item.as!.username
        && (m.attachments?.length ?? 0) === (form ? item.files!.length : 0));
      if (made) return made;
    }
    const after = this.options.newest(item.channel);
    this.queue.setNote({ key: item.key, ...(after ? { after } : {}) });
    await this.options.durable();
    if (form) {
      return await api.rest.post(Routes.webhook(hook.id, hook.token), { ...multipart(form), auth: false, query: new URLSearchParams({ wait: 'true' }), signal }) as APIMessage;
    }
    return await api.webhooks.execute(hook.id, hook.token, { content, ...payload, wait: true }, { signal });
  }

  /**
   * An edit or deletion through the webhook when the line went out through it, else as the bot (a line
   * posted before the channel had a webhook, or while it had none).
   */
  private async eitherWay(throughWebhook: (() => Promise<unknown>) | undefined, asBot: () => Promise<unknown>): Promise<void> {
    if (throughWebhook) {
      try {
        await throughWebhook();
        return;
      } catch (error) {
        if (!(error instanceof DiscordAPIError && error.code === UNKNOWN_MESSAGE)) throw error;
      }
    }
    await asBot();
  }
}

/** A multipart body as the REST client passes it on (rest-request.ts sends it as it is read). */
function multipart(form: MultipartBody): { body: AsyncIterable<Uint8Array>; passThroughBody: true; headers: Record<string, string> } {
  return { body: form.body, passThroughBody: true, headers: { 'Content-Type': form.contentType, 'Content-Length': String(form.length) } };
}
