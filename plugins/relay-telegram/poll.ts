import { GrammyError, type Api } from 'grammy';
import type { Logger } from 'pino';
import { Backoff, sleep, type KeyValueStore } from '../../src/index.js';
import { grammySignal } from './client.js';
import { isRefusal, retryAfterMs, telegramFailure } from './errors.js';
import { ALLOWED_UPDATES, type TelegramInbound, type TelegramUpdate } from './inbound.js';

/** The next update_id to ask for (the one after the last handed on), in the plugin's store. */
export const OFFSET_KEY = 'offset';
/** Set once the relay set its webhook: a later poll without an offset goes on from what Telegram holds rather than from now. */
export const WEBHOOK_KEY = 'webhook';

export interface PollCounters {
  polls: number;
  webhooks_deleted: number;
}

/**
 * The relay's getUpdates loop (grammY's own `bot.start()` keeps the offset in memory). Telegram keeps
 * a bot's updates until a getUpdates asks for an offset past them, for 24 hours at most; the relay asks
 * past a batch only once every line of it was handed to the gateways durably, and keeps that offset in
 * its store. So a crash or a stop gets the unconfirmed batch again (the gateway drops what it already
 * took) and a restart goes on where it stopped, as long as Telegram still holds the updates.
 * A first start (no offset kept) asks for the last update only, with offset -1, which makes Telegram
 * forget the ones before it: the chats' past is not relayed.
 */
export class TelegramPoll {
  private readonly backoff = new Backoff(500, 30_000);

  constructor(
    private readonly options: {
      api: () => Api;
      token: string;
      store: KeyValueStore;
      log: Logger;
      counters: PollCounters;
      inbound: TelegramInbound;
      pollTimeoutS: number;
      stopping: AbortSignal;
      connected: () => void;
      trouble: (detail: string) => void;
      refused: (error: unknown) => void;
    },
  ) {}

  async run(): Promise<void> {
    const { stopping, store, log } = this.options;
    while (!stopping.aborted) {
      // After webhook mode, what Telegram holds was not handed on yet: asked for from the oldest.
      const offset = store.get<number>(OFFSET_KEY) ?? (store.get(WEBHOOK_KEY) !== undefined ? 0 : undefined);
      let updates: TelegramUpdate[];
      try {
        updates = await this.options.api().getUpdates(
          offset === undefined
            ? { offset: -1, limit: 1, timeout: 0, allowed_updates: [...ALLOWED_UPDATES] }
            : { offset, limit: 100, timeout: this.options.pollTimeoutS, allowed_updates: [...ALLOWED_UPDATES] },
          grammySignal(stopping),
        ) as TelegramUpdate[];
        if (offset !== undefined) await this.options.inbound.batch(updates);
      } catch (error) {
        if (stopping.aborted) return;
        if (isRefusal(error)) return this.options.refused(error);
        if (error instanceof GrammyError && error.error_code === 409 && /webhook/i.test(error.description)) {
          // A webhook set on the token (by another program, or an earlier setup) keeps getUpdates from working: the relay polls.
          log.warn({}, 'a webhook was set for the Telegram bot; it is deleted so that the relay can poll (the updates it holds are kept)');
          await this.deleteWebhook();
          continue;
        }
        const limited = retryAfterMs(error);
        const wait = limited ?? this.backoff.next();
        const conflict = error instanceof GrammyError && error.error_code === 409;
        log.warn({ wait_ms: Math.round(wait), ...telegramFailure(error, this.options.token) }, conflict
          ? 'another program polls the Telegram bot\'s updates with the same token: only one may; trying again'
          : 'Telegram getUpdates failed; trying again from the kept offset');
        this.options.trouble(conflict ? 'another getUpdates with the same token (409 Conflict)' : limited ? 'rate limited by Telegram' : `getUpdates failed: ${telegramFailure(error, this.options.token).reason}`);
        await sleep(wait, stopping);
        continue;
      }
      // Stopped before every line was handed on: the batch is asked for again at the next start.
      if (stopping.aborted) return;
      const last = updates.at(-1);
      if (offset === undefined) log.info({}, 'first start: relaying what Telegram chats say from now on');
      if (last !== undefined || offset === undefined) store.set(OFFSET_KEY, last !== undefined ? last.update_id + 1 : 0);
      this.options.counters.polls += 1;
      this.backoff.reset();
      this.options.connected();
    }
  }

  private async deleteWebhook(): Promise<void> {
    try {
      await this.options.api().deleteWebhook({ drop_pending_updates: false }, grammySignal(this.options.stopping));
      this.options.counters.webhooks_deleted += 1;
    } catch (error) {
      if (this.options.stopping.aborted) return;
      this.options.log.warn({ ...telegramFailure(error, this.options.token) }, 'could not delete the Telegram bot\'s webhook; trying again');
      await sleep(this.backoff.next(), this.options.stopping);
    }
  }
}
