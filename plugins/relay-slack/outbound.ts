import type { ChatPostMessageArguments, WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { DurableQueue } from '../../src/index.js';
import type { Counters } from './counters.js';
import { classify, describe, type SlackFailure } from './errors.js';
import type { SlackPost } from './render.js';
import { QueueWorker } from './queue-worker.js';
import { backoff, sleep } from './timing.js';

/** One chat message waiting for Slack, as it will be posted. */
export interface OutboundItem extends SlackPost {
  /** `<chat id>:<msg_num>`. */
  key: string;
  /** The chat's reset count when queued (MsgNumMarks.epoch), when above 0: the key's msg_num belongs to that history. */
  epoch?: number;
  chat: string;
  channel: string;
  queuedAt: number;
}

export interface OutboundOptions {
  queue: DurableQueue<OutboundItem>;
  web: WebClient;
  unfurl: boolean;
  log: Logger;
  counters: Counters;
  /** A token or scope failure: the relay stops (the item stays queued for the next start). */
  onFatal(failure: SlackFailure): void;
  /** chat.postMessage answered the id of a channel posted to by name. */
  onChannelId(name: string, id: string): void;
  /** Slack took the item (called before it leaves the queue). */
  onPosted(item: OutboundItem): void;
}

/** Unknown error codes are tried this often before the message is given up (loudly). */
const UNKNOWN_TRIES = 5;

/**
 * Chat → Slack: posts the durable queue's items one at a time, oldest first, with chat.postMessage.
 * A rate limit waits Slack's Retry-After and posts the same item again (the SDK is told to reject
 * rate-limited calls and not to retry, so this queue does all the waiting, in order); a failure of
 * Slack or the network backs off and tries again, forever; a refusal of this one message (no such
 * channel, not in it) is logged as an error and counted, and the queue goes on; a refused token stops.
 */
export class Outbound extends QueueWorker<OutboundItem> {
  private attempt = 0;
  private unknown = 0;

  constructor(private readonly options: OutboundOptions) {
    super(options.queue);
  }

  /** True when the queue holds this key of this epoch of its chat (not posted yet). */
  holds(key: string, epoch = 0): boolean {
    return this.queue.all().some((item) => item.key === key && (item.epoch ?? 0) === epoch);
  }

  protected async work(item: OutboundItem, signal: AbortSignal): Promise<boolean> {
    const { log, counters } = this.options;
    const queue = this.queue;
    try {
      const answer = await this.options.web.chat.postMessage(this.arguments(item));
      this.options.onPosted(item);
      queue.shift();
      counters.relayed_out += 1;
      this.attempt = 0;
      this.unknown = 0;
      if (item.channel.startsWith('#') && answer.channel) this.options.onChannelId(item.channel.slice(1), answer.channel);
      return true;
    } catch (error) {
      const failure = classify(error);
      const where = { chat: item.chat, key: item.key, channel: item.channel, code: failure.code };
      if (failure.kind === 'fatal') {
        this.options.onFatal(failure);
        return false;
      }
      if (failure.kind === 'permanent' || (failure.kind === 'unknown' && ++this.unknown >= UNKNOWN_TRIES)) {
        log.error(where, `Slack refused a message (${describe(failure)}); it is not relayed${hint(failure.code)}`);
        queue.shift();
        counters.failed += 1;
        this.unknown = 0;
        return true;
      }
      counters.retries += 1;
      if (failure.kind === 'rate_limited') {
        counters.rate_limited += 1;
        log.warn({ ...where, retryAfterMs: failure.retryAfterMs, queued: queue.size }, 'Slack rate limit: waiting before posting again');
        await sleep(failure.retryAfterMs, signal);
      } else {
        const delay = backoff(this.attempt++, 1_000, 60_000);
        log.warn({ ...where, delayMs: Math.round(delay), queued: queue.size }, 'posting to Slack failed; trying again');
        await sleep(delay, signal);
      }
      return true;
    }
  }

  private arguments(item: OutboundItem): ChatPostMessageArguments {
    const unfurl = this.options.unfurl;
    const common = {
      channel: item.channel, text: item.text, parse: 'none' as const, link_names: false, unfurl_links: unfurl, unfurl_media: unfurl,
      ...(item.username === undefined ? {} : { username: item.username }),
    };
    if (item.icon_emoji) return { ...common, icon_emoji: item.icon_emoji };
    if (item.icon_url) return { ...common, icon_url: item.icon_url };
    return common;
  }
}

function hint(code: string): string {
  if (code === 'not_in_channel') return ' (invite the app into the channel: /invite @app)';
  if (code === 'channel_not_found') return ' (check the channel in channels:, and that the app may see it)';
  return '';
}
