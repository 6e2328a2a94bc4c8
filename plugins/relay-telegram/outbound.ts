import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Api } from 'grammy';
import type { Logger } from 'pino';
import { DurableQueue, QueueDrain, type DrainOutcome, type MediaFiles, type QueueBacklog, type Storage } from '../../src/index.js';
import { grammySignal } from './client.js';
import { isFinal, isRefusal, retryAfterMs, telegramFailure } from './errors.js';
import { sendFile, type OutboundFile, type SendPlace } from './files-out.js';
import { parseChannel } from './options.js';
import type { SendPacing } from './pacing.js';

/** A gateway line waiting for Telegram. */
export interface OutboundItem {
  key: string;
  /** The channel as the gateway names it: a chat id, or a chat id and a forum topic (`-100…/42`). */
  channel: string;
  kind: 'post' | 'edit' | 'delete';
  /** post: a message of its own (absent when the first file's caption carries the line). */
  text?: string;
  /** post: files sent after the text, each a message of its own (files-out.ts). */
  files?: OutboundFile[];
  /** post: the Telegram message it answers; edit/delete: the message changed. */
  target?: string;
  /** A reply whose parent was not posted yet when queued (OutgoingMessage.replyToKey): asked for right before sending. */
  parentKey?: string;
  /** Its text when the parent's message id is found then: a reply to it, without the quote that stood in. */
  replyText?: string;
}

export interface OutboundCounters {
  posted: number;
  edited: number;
  deleted: number;
  dropped: number;
  retries: number;
  rate_limited: number;
  files_sent: number;
  files_linked: number;
}

/** How far a line of several messages (its text, its files) got: the messages before `done` were confirmed. */
interface Progress {
  key: string;
  done: number;
}

const FILE_PREFIX = 'to-telegram-';

/**
 * Lines to Telegram: a durable queue per Telegram chat (forum topics share their chat's, as they
 * share its limits), each drained oldest first, one at a time, so a chat's order holds through retries
 * and a chat that is slow (its pace, a 429) holds back no other. A line leaves its queue once Telegram
 * took it or refused it for good. Telegram has no idempotency key and a bot cannot read a chat's
 * history, so a line whose answer was lost (or whose send a kill -9 cut) is sent again: at least once.
 * A line with files is several messages (its text, each file): each one confirmed is noted in the
 * queue, so a retry goes on from the first not confirmed and only that one may show twice.
 */
export class TelegramOutbound {
  private readonly drains = new Map<string, QueueDrain<OutboundItem>>();
  private readonly queues = new Map<string, DurableQueue<OutboundItem>>();
  private started = false;

  constructor(
    private readonly options: {
      dataDir: string;
      storage: Storage;
      queueMax: number;
      api: () => Api;
      /** The client for uploads (a longer timeout than a text's). */
      filesApi: () => Api;
      media: MediaFiles;
      token: string;
      pacing: SendPacing;
      log: Logger;
      counters: OutboundCounters;
      durable: () => Promise<void>;
      posted: (item: OutboundItem, messageId: string) => void;
      /** The message id in a channel of the line with this key, once posted (env.gateway.nativeOf). */
      nativeOf: (key: string, channel: string) => string | undefined;
      /** The forum topic a message of a chat was in, when the relay saw it (a whole-forum channel's replies go to their parent's topic). */
      topicOf: (chatId: string, messageId: string) => number | undefined;
      /** The token was refused: the relay stops. */
      fatal: (error: unknown) => void;
    },
  ) {}

  get size(): number {
    let size = 0;
    for (const drain of this.drains.values()) size += drain.size;
    return size;
  }

  /** Each chat's queue's backlog (depth, oldest, pushed and taken), keyed by chat id, in O(1) a chat: the relay's PluginStatus.backlogs. */
  backlogs(): Record<string, QueueBacklog> {
    return Object.fromEntries([...this.drains].map(([chatId, drain]) => [chatId, drain.backlog]));
  }

  push(item: OutboundItem): void {
    this.drainOf(parseChannel(item.channel).chatId).push(item);
  }

  /** Starts sending: the queues of `chatIds`, and those a previous run left lines in (a chat since taken out of bots.yaml still gets what it was promised). */
  start(chatIds: readonly string[]): void {
    this.started = true;
    let files: string[] = [];
    try {
      files = readdirSync(this.options.dataDir).filter((name) => name.startsWith(FILE_PREFIX) && name.endsWith('.json'));
    } catch {
      // No directory yet: nothing was queued.
    }
    const left = files.map((name) => name.slice(FILE_PREFIX.length, -'.json'.length)).filter((id) => /^-?\d+$/.test(id));
    for (const chatId of new Set([...chatIds, ...left])) this.drainOf(chatId).start();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.drains.values()].map((drain) => drain.stop()));
  }

  private drainOf(chatId: string): QueueDrain<OutboundItem> {
    let drain = this.drains.get(chatId);
    if (drain) return drain;
    const queue = DurableQueue.open<OutboundItem>(join(this.options.dataDir, `${FILE_PREFIX}${chatId}.json`), {
      storage: this.options.storage,
      maxItems: this.options.queueMax,
      onHighWater: (size, max) => this.options.log.warn({ chat: chatId, size, max }, 'the queue to a Telegram chat is filling up'),
    });
    drain = new QueueDrain(queue, {
      send: (item, signal) => this.send(chatId, item, signal),
      onRetry: () => {
        this.options.counters.retries += 1;
      },
      // A number is Telegram's retry_after: waited as asked, the growing pause left as it is.
      retryAfter: 'exactly',
      // grammY adds an abort listener to the signal of each call: one signal per attempt, unlinked after it.
      signalPerAttempt: true,
      // A line of several messages done: its progress goes with it, in the same write.
      shiftNote: () => (queue.note ? null : undefined),
    });
    this.queues.set(chatId, queue);
    this.drains.set(chatId, drain);
    if (this.started) drain.start();
    return drain;
  }

  /** The reply target: as queued, or a parent posted since it was queued (then the text without the quote). */
  private replyOf(item: OutboundItem): { target?: string; text: string | undefined } {
    if (item.target !== undefined) return { target: item.target, text: item.text };
    const parent = item.parentKey === undefined ? undefined : this.options.nativeOf(item.parentKey, item.channel);
    return parent === undefined ? { text: item.text } : { target: parent, text: item.replyText ?? item.text };
  }

  /**
   * A line's messages, in order: its text, then each file; the first answers what the line answers.
   * The native id is the first message's. Each message confirmed before the last is noted (durably)
   * with the line, so a retry after a lost answer or a kill -9 starts from the first one not confirmed.
   */
  private async post(api: Api, chatId: string, item: OutboundItem, topic: number | undefined, signal: AbortSignal): Promise<void> {
    const { target, text } = this.replyOf(item);
    const thread = topic ?? (target === undefined ? undefined : this.options.topicOf(chatId, target));
    const place = (first: boolean): SendPlace => ({
      ...(thread !== undefined ? { message_thread_id: thread } : {}),
      ...(first && target !== undefined ? { reply_parameters: { message_id: Number(target), allow_sending_without_reply: true } } : {}),
    });
    const steps: Array<(first: boolean) => Promise<{ message_id: number }>> = [];
    if (text !== undefined) {
      // A relayed line is text: no preview card of a link someone else chose.
      steps.push((first) => api.sendMessage(chatId, text, { ...place(first), link_preview_options: { is_disabled: true } }, grammySignal(signal)));
    }
    const bot = { api, filesApi: this.options.filesApi(), media: this.options.media, log: this.options.log, token: this.options.token, counters: this.options.counters };
    for (const file of item.files ?? []) steps.push((first) => sendFile(bot, chatId, file, place(first), signal));
    const queue = this.queues.get(chatId)!;
    const progress = queue.note as Progress | null | undefined;
    const from = progress?.key === item.key ? progress.done : 0;
    for (let step = from; step < steps.length; step += 1) {
      // Each message of the line counts against Telegram's limits: the first took its turn before the attempt.
      if (step > from) await this.options.pacing.take(chatId, signal);
      const message = await steps[step]!(step === 0);
      if (step === 0) {
        this.options.counters.posted += 1;
        this.options.posted(item, String(message.message_id));
      }
      if (step < steps.length - 1) {
        queue.setNote({ key: item.key, done: step + 1 } satisfies Progress);
        await this.options.durable();
      }
    }
  }

  private async send(chatId: string, item: OutboundItem, signal: AbortSignal): Promise<DrainOutcome> {
    const { log, counters } = this.options;
    try {
      // A worker whose unit moved elsewhere sends nothing (docs/scale-out.md).
      await this.options.durable();
    } catch (error) {
      log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: sending nothing more to Telegram');
      return 'stop';
    }
    await this.options.pacing.take(chatId, signal);
    if (signal.aborted) return 'stop';
    const api = this.options.api();
    const { topic } = parseChannel(item.channel);
    try {
      if (item.kind === 'post') {
        await this.post(api, chatId, item, topic, signal);
      } else if (item.kind === 'edit') {
        await api.editMessageText(chatId, Number(item.target), item.text!, { link_preview_options: { is_disabled: true } }, grammySignal(signal));
        counters.edited += 1;
      } else {
        await api.deleteMessage(chatId, Number(item.target), grammySignal(signal));
        counters.deleted += 1;
      }
      return 'done';
    } catch (error) {
      if (signal.aborted) return 'stop';
      if (isRefusal(error) && error.error_code === 401) {
        this.options.fatal(error);
        return 'stop';
      }
      const wait = retryAfterMs(error);
      if (wait !== undefined) {
        counters.rate_limited += 1;
        log.info({ chat: chatId, wait_ms: wait }, 'Telegram limits the relay\'s rate: waiting');
        return wait;
      }
      if (isFinal(error)) {
        const description = error.description;
        // What the line asked for is so already: the same text, or a message gone.
        if (item.kind === 'edit' && /message is not modified/i.test(description)) return 'done';
        if (item.kind === 'delete' && /message to delete not found/i.test(description)) return 'done';
        counters.dropped += 1;
        const moved = error.parameters.migrate_to_chat_id;
        log.error({ channel: item.channel, kind: item.kind, ...telegramFailure(error, this.options.token), ...(moved ? { migrate_to_chat_id: moved } : {}) },
          moved ? 'the Telegram group became a supergroup with a new chat id: write the new id in bots.yaml; the line is dropped'
            : 'Telegram refused a line for good; it is dropped');
        return 'done';
      }
      log.warn({ channel: item.channel, ...telegramFailure(error, this.options.token) }, 'Telegram did not take a line; trying again');
      return 'retry';
    }
  }
}
