import { createHash } from 'node:crypto';
import type { API } from '@discordjs/core';
import { DiscordAPIError } from '@discordjs/rest';
import type { Logger } from 'pino';
import { failureFields, type DurableQueue } from '../../src/index.js';

/** A gateway line waiting for Discord. */
export interface OutboundItem {
  key: string;
  channel: string;
  kind: 'post' | 'edit' | 'delete';
  content?: string;
  /** post: the Discord message it answers; edit/delete: the message changed. */
  target?: string;
}

export interface OutboundCounters {
  posted: number;
  edited: number;
  deleted: number;
  dropped: number;
  retries: number;
}

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;

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
  /** Wakes the loop sleeping on an empty queue. */
  private readonly wake = { poke: () => {} };
  private running: Promise<void> | undefined;
  private readonly stopper = new AbortController();

  constructor(
    private readonly queue: DurableQueue<OutboundItem>,
    private readonly options: {
      api: () => API;
      log: Logger;
      counters: OutboundCounters;
      durable: () => Promise<void>;
      posted: (item: OutboundItem, messageId: string) => void;
      /** The token was refused: the relay stops. */
      fatal: (error: unknown) => void;
    },
  ) {}

  get size(): number {
    return this.queue.size;
  }

  push(item: OutboundItem): void {
    this.queue.push(item);
    this.wake.poke();
  }

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    this.wake.poke();
    await this.running;
  }

  private async loop(): Promise<void> {
    const signal = this.stopper.signal;
    let pause = RETRY_MIN_MS;
    while (!signal.aborted) {
      const item = this.queue.peek();
      if (!item) {
        await new Promise<void>((done) => {
          this.wake.poke = done;
        });
        continue;
      }
      const outcome = await this.send(item, signal);
      if (outcome === 'stop') return;
      if (outcome === 'done') {
        this.queue.shift();
        pause = RETRY_MIN_MS;
        continue;
      }
      this.options.counters.retries += 1;
      await sleep(pause, signal);
      pause = Math.min(RETRY_MAX_MS, pause * 2);
    }
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
      if (item.kind === 'post') {
        const message = await api.channels.createMessage(item.channel, {
          content: item.content,
          nonce: nonceOf(item.key),
          enforce_nonce: true,
          allowed_mentions: { parse: [] },
          // No link previews: a relayed line is text, not an embed someone else chose.
          flags: 1 << 2,
          ...(item.target ? { message_reference: { message_id: item.target, fail_if_not_exists: false } } : {}),
        }, { signal });
        counters.posted += 1;
        this.options.posted(item, message.id);
      } else if (item.kind === 'edit') {
        await api.channels.editMessage(item.channel, item.target!, { content: item.content, allowed_mentions: { parse: [] } }, { signal });
        counters.edited += 1;
      } else {
        await api.channels.deleteMessage(item.channel, item.target!, { signal });
        counters.deleted += 1;
      }
      return 'done';
    } catch (error) {
      if (signal.aborted) return 'stop';
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
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      done();
    }, { once: true });
  });
}
