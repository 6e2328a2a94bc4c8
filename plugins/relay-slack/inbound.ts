import type { Logger } from 'pino';
import { failureFields, PostFailedError, type ChatInfo, type DurableQueue, type PluginEnv } from '../../src/index.js';
import type { ChannelMap } from './channels.js';
import type { Counters } from './counters.js';
import { LookupError, type SlackDirectory } from './directory.js';
import type { SlackFailure } from './errors.js';
import type { InboundItem } from './intake.js';
import { slackToPlain } from './markup.js';
import { chatName, renderForChat } from './render.js';
import { QueueWorker } from './queue-worker.js';
import { backoff, sleep } from './timing.js';

export interface InboundOptions {
  queue: DurableQueue<InboundItem>;
  channels: ChannelMap;
  directory: SlackDirectory;
  env: Pick<PluginEnv, 'send' | 'chats'>;
  /** The `incoming` template. */
  template: string;
  log: Logger;
  counters: Counters;
  onFatal(failure: SlackFailure): void;
}

/** The chat did not take the post (closed, or the bot is not in it yet): try again later. */
class NotTaken extends Error {
  override name = 'NotTaken';
}

/** After this many failed tries of one item, names that cannot be looked up are shown as ids. */
const LENIENT_AFTER = 3;
/** An item the chat would not take this often is given up (loudly). */
const MAX_TRIES = 10;
/** How long after the start a mapped chat may still be missing from the bot's chats (they are being joined). */
const JOIN_GRACE_MS = 60_000;

/**
 * Slack → chat: takes the durable queue's items oldest first, turns Slack markup into text (names
 * looked up and cached), and posts `<name> text` into every chat the channel is mapped to with the
 * plugin env's `send`, which queues the post durably in the bot's outbox before it returns. A post is
 * counted as handed on once the chat took it (a refusal comes at once: closed chat, bot stopping);
 * a refused one is tried again with backoff, and the item stays queued across a restart.
 */
export class Inbound extends QueueWorker<InboundItem> {
  private readonly startedAt = Date.now();
  /** The parts of the current item already taken (`<chat>:<part>`), so a retry does not post them again. */
  private readonly taken = new Set<string>();
  private attempt = 0;

  constructor(private readonly options: InboundOptions) {
    super(options.queue);
  }

  protected async work(item: InboundItem, signal: AbortSignal): Promise<boolean> {
    const { log, counters } = this.options;
    try {
      await this.deliver(item, this.attempt >= LENIENT_AFTER);
      if (!signal.aborted) this.done();
      return true;
    } catch (error) {
      if (signal.aborted) return true;
      const failure = error instanceof LookupError ? error.failure : undefined;
      if (failure?.kind === 'fatal') {
        this.options.onFatal(failure);
        return false;
      }
      this.attempt += 1;
      const where = { channel: item.channel, ts: item.ts, attempt: this.attempt };
      if (!failure && !(error instanceof NotTaken)) {
        log.error({ ...where, err: error }, 'a Slack message could not be relayed');
      } else if (this.attempt < MAX_TRIES || failure) {
        counters.retries += 1;
        if (failure?.kind === 'rate_limited') {
          counters.rate_limited += 1;
          log.warn({ ...where, retryAfterMs: failure.retryAfterMs }, 'Slack rate limit on a lookup: waiting');
          await sleep(failure.retryAfterMs, signal);
        } else {
          log.warn({ ...where, reason: failure?.code ?? (error as Error).message }, 'relaying a Slack message failed; trying again');
          await sleep(backoff(this.attempt, 500, 30_000), signal);
        }
        return true;
      } else {
        log.error({ ...where, reason: (error as Error).message }, 'the chat does not take a Slack message; it is not relayed');
      }
      counters.failed += 1;
      this.done();
      return true;
    }
  }

  /** The item is dealt with: off the queue, and the next one starts afresh. */
  private done(): void {
    this.queue.shift();
    this.taken.clear();
    this.attempt = 0;
  }

  private async deliver(item: InboundItem, lenient: boolean): Promise<void> {
    const { channels, directory, counters } = this.options;
    const chats = channels.needsName(item.channel)
      ? channels.chatsFor(item.channel, await directory.channelName(item.channel, lenient))
      : channels.chatsFor(item.channel);
    if (chats.length === 0) {
      counters.ignored += 1;
      return;
    }
    const name = chatName((await directory.userName(item.user, lenient)) ?? item.user);
    let text = await slackToPlain(item.text, {
      user: (id) => directory.userName(id, lenient),
      channel: (id) => directory.channelName(id, lenient),
    });
    for (const file of item.files ?? []) text += `${text ? '\n' : ''}[file: ${file.title || file.name || 'file'}${file.permalink ? ` ${file.permalink}` : ''}]`;
    if (text.trim() === '') {
      counters.ignored += 1;
      return;
    }
    const channel = this.options.template.includes('{channel}') ? `#${(await directory.channelName(item.channel, true)) ?? item.channel}` : '';
    const parts = renderForChat(this.options.template, name, text, channel);
    for (const chat of chats) {
      const target = await this.chatReady(chat);
      if (!target) {
        if (!this.taken.has(chat)) {
          this.taken.add(chat);
          this.options.log.error({ chat }, `a Slack message for chat ${chat} is not relayed: it is not one of the bot's chats`);
          counters.failed += 1;
        }
        continue;
      }
      for (const [index, part] of parts.entries()) {
        const key = `${chat}:${index}`;
        if (this.taken.has(key)) continue;
        await this.hand(target, part);
        this.taken.add(key);
      }
    }
    if (chats.some((chat) => this.taken.has(`${chat}:0`))) counters.relayed_in += 1;
  }

  /** The bot's chat `key` (subject or id); while the bot is still joining its chats, waits for it. */
  private async chatReady(key: string): Promise<ChatInfo | undefined> {
    for (;;) {
      const chats = this.options.env.chats();
      const chat = chats.find((c) => c.id === key) ?? chats.find((c) => c.subject === key);
      if (chat || Date.now() - this.startedAt > JOIN_GRACE_MS || this.stopSignal.aborted) return chat;
      await sleep(250, this.stopSignal);
    }
  }

  /**
   * Hands one post to the chat's outbox. The outbox writes it to disk before `send` returns, or
   * refuses it at once; a refusal (seen once the promise settled within the same turn) is NotTaken.
   * A failure after it was taken (the chat closed before it went out) is logged and counted.
   */
  private async hand(chat: ChatInfo, text: string): Promise<void> {
    let accepted = false;
    let refusal: unknown;
    this.options.env.send(chat, text).then(undefined, (error: unknown) => {
      if (!accepted) {
        refusal = error ?? new Error('refused');
        return;
      }
      this.options.counters.failed += 1;
      this.options.log.error({ chat: chat.subject, ...failureFields(error, PostFailedError) }, 'a relayed Slack message was not posted in the chat');
    });
    await new Promise((resolve) => setImmediate(resolve));
    if (refusal) throw new NotTaken((refusal as Error).message ?? String(refusal));
    accepted = true;
  }
}
