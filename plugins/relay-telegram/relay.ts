import type { Api } from 'grammy';
import { Backoff, sleep, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus } from '../../src/index.js';
import { botApi, grammySignal } from './client.js';
import { isRefusal, telegramFailure } from './errors.js';
import { planPost } from './files-out.js';
import { TelegramInbound } from './inbound.js';
import { parseChannel, type RelayTelegramOptions } from './options.js';
import { TelegramOutbound } from './outbound.js';
import { SendPacing } from './pacing.js';
import { TelegramPoll } from './poll.js';
import { renderLine } from './render.js';
import { TopicMemory } from './topics.js';
import { TelegramWebhook } from './webhook.js';

type ConnectionState = 'connecting' | 'connected' | 'stopped' | 'failed';

/** How long one upload or download of a file may take (at least; request_timeout_ms when longer). */
const FILE_TIMEOUT_MS = 300_000;

/**
 * The Telegram relay, a gateway endpoint, on grammY's Bot API client (`Api`: typed methods, Telegram's
 * errors as GrammyError with their parameters, timeouts, aborts) without grammY's `Bot` runner, whose
 * polling keeps the update offset in memory: the relay polls getUpdates itself (poll.ts) and keeps the
 * offset in its store. Start: getMe (the token, and the bot's own id), then send and poll. A refused
 * token stops the relay only: the rest of the bot goes on.
 */
export class TelegramRelay {
  /** One client for sends (request_timeout_ms), one for the long poll (poll_timeout_s more). */
  private readonly api: Api;
  private readonly pollApi: Api;
  /** Uploads and downloads of files: the same client with a longer timeout (a file takes longer than a line). */
  private readonly filesApi: Api;
  private readonly outbound: TelegramOutbound;
  private readonly inbound: TelegramInbound;
  private readonly poll: TelegramPoll;
  private readonly webhook: TelegramWebhook | undefined;
  private readonly stopper = new AbortController();
  private readonly counters = { posted: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, rate_limited: 0, files_sent: 0, files_linked: 0, received: 0, receive_retries: 0, polls: 0, webhooks_deleted: 0, webhook_updates: 0, webhook_refused: 0 };
  private readonly topics = new TopicMemory(10_000);
  private state: ConnectionState = 'connecting';
  private detail: string | undefined;
  private selfId: number | undefined;
  private channels = new Set<string>();
  private running: Promise<void> | undefined;

  constructor(
    private readonly options: RelayTelegramOptions,
    private readonly env: PluginEnv,
  ) {
    this.api = botApi(options.token, options.api_url, options.request_timeout_ms);
    this.pollApi = botApi(options.token, options.api_url, options.request_timeout_ms, options.poll_timeout_s);
    this.filesApi = botApi(options.token, options.api_url, Math.max(options.request_timeout_ms, FILE_TIMEOUT_MS));
    this.outbound = new TelegramOutbound({
      dataDir: env.dataDir, storage: env.storage, queueMax: options.queue_max, api: () => this.api, filesApi: () => this.filesApi, media: env.media, token: options.token,
      pacing: new SendPacing(options.rate), log: env.log, counters: this.counters, durable: () => env.storage.durable(),
      posted: (item, messageId) => this.env.gateway.posted(item.key, item.channel, messageId),
      nativeOf: (key, channel) => env.gateway.nativeOf(key, channel),
      topicOf: (chatId, messageId) => this.topics.get(chatId, messageId),
      fatal: (error) => this.fail(error),
    });
    this.inbound = new TelegramInbound({
      gateway: env.gateway, log: env.log, counters: this.counters, incoming: options.incoming, self: () => this.selfId,
      has: (channel) => this.channels.has(channel), noteTopic: (chatId, messageId, topic) => this.topics.set(chatId, messageId, topic),
      bot: { api: () => this.filesApi, apiUrl: options.api_url, token: options.token },
      stopping: this.stopper.signal,
    });
    this.poll = new TelegramPoll({
      api: () => this.pollApi, token: options.token, store: env.store, log: env.log, counters: this.counters, inbound: this.inbound,
      pollTimeoutS: options.poll_timeout_s, stopping: this.stopper.signal,
      connected: () => this.connected(), trouble: (detail) => this.trouble(detail), refused: (error) => this.fail(error),
    });
    this.webhook = options.webhook && new TelegramWebhook({
      url: options.webhook.url, listen: options.webhook.listen, secret: options.webhook.secret_token, api: () => this.api, store: env.store, inbound: this.inbound,
      log: env.log, counters: this.counters, stopping: this.stopper.signal,
    });
  }

  instance(): PluginInstance {
    return {
      start: () => {
        this.running ??= this.run().catch((error: unknown) => this.fail(error));
      },
      stop: () => this.stop(),
      endpoint: { send: (channel, message) => this.send(channel, message) },
      stats: () => ({ ...this.counters, queued: this.outbound.size }),
      status: () => this.status(),
    };
  }

  /** getMe until Telegram answers (a refused token stops the relay), then sends and polls until stopped. */
  private async run(): Promise<void> {
    this.channels = new Set(this.env.gateway.channels());
    const signal = this.stopper.signal;
    const backoff = new Backoff(500, 30_000);
    while (this.selfId === undefined && !signal.aborted) {
      try {
        const me = await this.api.getMe(grammySignal(signal));
        this.selfId = me.id;
        this.env.log.info({ bot: me.username, chats: this.channels.size }, 'Telegram bot token accepted');
      } catch (error) {
        if (signal.aborted) return;
        if (isRefusal(error)) return this.fail(error);
        this.trouble(`cannot reach the Bot API: ${telegramFailure(error, this.options.token).reason}`);
        this.env.log.warn({ ...telegramFailure(error, this.options.token) }, 'could not reach the Telegram Bot API; trying again');
        await sleep(backoff.next(), signal);
      }
    }
    if (signal.aborted) return;
    this.outbound.start([...this.channels].map((channel) => parseChannel(channel).chatId));
    if (this.webhook) await this.listen(backoff);
    else await this.poll.run();
  }

  /** Webhook mode: listens and sets the webhook (tried again while Telegram does not answer); then the updates come by POST until the stop. */
  private async listen(backoff: Backoff): Promise<void> {
    const signal = this.stopper.signal;
    while (!signal.aborted) {
      try {
        await this.webhook!.start();
        this.connected();
        return;
      } catch (error) {
        if (signal.aborted) return;
        if (isRefusal(error)) return this.fail(error);
        if ((error as { code?: unknown }).code === 'EADDRINUSE' || (error as { code?: unknown }).code === 'EACCES') {
          return this.fail(new Error(`relay-telegram cannot listen for its webhook on ${this.options.webhook!.listen.host}:${this.options.webhook!.listen.port}: ${(error as Error).message}`));
        }
        await this.webhook!.stop();
        this.trouble(`cannot set the webhook: ${telegramFailure(error, this.options.token).reason}`);
        this.env.log.warn({ ...telegramFailure(error, this.options.token) }, 'could not set the Telegram webhook; trying again');
        await sleep(backoff.next(), signal);
      }
    }
  }

  /** A gateway line for one of the relay's chats: queued durably, never waiting on Telegram. */
  private send(channel: string, message: OutgoingMessage): void {
    if (this.state === 'failed') return;
    if (message.kind !== 'message' && message.kind !== 'action' && message.kind !== 'edit' && message.kind !== 'delete') return;
    // Only the relay's own posts can be changed; without the target there is nothing to change.
    if ((message.kind === 'edit' || message.kind === 'delete') && !message.target) return;
    if (message.kind === 'delete') {
      this.outbound.push({ key: message.key, channel, kind: 'delete', target: message.target! });
      return;
    }
    const line = { template: this.options.format, name: message.speaker.name, text: message.text, action: message.kind === 'action' };
    if (message.kind === 'edit') {
      this.outbound.push({ key: message.key, channel, kind: 'edit', target: message.target!, text: renderLine(line) });
      return;
    }
    const quoted = { ...line, ...(!message.replyTo && message.quote ? { quote: message.quote } : {}) };
    const waitsForParent = Boolean(message.replyToKey && !message.replyTo);
    // Files and refused files: uploaded after the text or carrying it as their caption; too big or refused, a link line in the text.
    const { text, files } = planPost(quoted, message.files ?? [], message.refusedFiles ?? [], this.options.max_file_size, !waitsForParent);
    const waiting = waitsForParent ? { parentKey: message.replyToKey!, replyText: planPost(line, message.files ?? [], message.refusedFiles ?? [], this.options.max_file_size, false).text! } : {};
    this.outbound.push({
      key: message.key, channel, kind: 'post', ...(text !== undefined ? { text } : {}), ...(files.length > 0 ? { files } : {}),
      ...(message.replyTo ? { target: message.replyTo } : {}), ...waiting,
    });
  }

  private connected(): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    if (this.state !== 'connected') this.env.log.info({ chats: this.channels.size }, 'Telegram connected');
    this.state = 'connected';
    this.detail = undefined;
  }

  private trouble(detail: string): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    this.state = 'connecting';
    this.detail = detail;
  }

  private fail(error: unknown): void {
    if (this.state === 'failed') return;
    this.state = 'failed';
    this.detail = isRefusal(error) ? `Telegram refused the bot token (${error.error_code} ${error.description}): get a new one from @BotFather`
      : telegramFailure(error, this.options.token).reason;
    this.env.log.error({ ...telegramFailure(error, this.options.token) }, 'Telegram relay stopped: the bot token was refused; the rest of the bot goes on');
    this.stopper.abort();
  }

  private async stop(): Promise<void> {
    this.stopper.abort();
    if (this.state !== 'failed') this.state = 'stopped';
    // The stop signal aborted every request in flight (sends and the long poll).
    await this.outbound.stop();
    await this.running;
    await this.webhook?.stop();
  }

  private status(): PluginStatus {
    const rate = this.options.rate;
    const limit = rate === 'off' ? 'Telegram\'s rate limits (retry_after)' : `rate: ${rate.chat_per_minute}/min a chat, ${rate.per_second}/s in all`;
    const backlogs = Object.fromEntries(Object.entries(this.outbound.backlogs()).map(([chatId, backlog]) => [chatId, { ...backlog, limit }]));
    return { connection: { state: this.state, ...(this.detail ? { detail: this.detail } : {}) }, queues: { to_telegram: this.outbound.size }, backlogs };
  }
}
