import { join } from 'node:path';
import { API, GatewayDispatchEvents, GatewayIntentBits, type GatewayDispatchPayload } from '@discordjs/core';
import { DiscordAPIError, REST, type RESTOptions } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';
import { DurableQueue, failureFields, RecentIds, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus } from '../../src/index.js';
import { discordCdnOrigins, discordIncomingFile } from './files-in.js';
import { discordFileLines, uploadable, withFileLines } from './files-out.js';
import { DiscordInbound, type GuildMessage } from './inbound.js';
import type { RelayDiscordOptions } from './options.js';
import { DiscordOutbound, type OutboundItem } from './outbound.js';
import { renderLine, renderWebhookText } from './render.js';
import { makeRequest } from './rest-request.js';
import { newerId } from './snowflakes.js';
import { ChannelWebhooks, webhookUsername } from './webhooks.js';

type ConnectionState = 'connecting' | 'connected' | 'stopped' | 'failed';

/**
 * The Discord relay, a gateway endpoint, on the official @discordjs packages: @discordjs/ws keeps the
 * gateway session (heartbeats, resume by sequence after a drop, a new session after an invalid one),
 * @discordjs/rest makes the REST calls (rate limits from the X-RateLimit headers, 429s waited out).
 * Lines to Discord go through a durable queue (outbound.ts); Discord's messages come in per channel,
 * in order, with a catch-up by REST after each new session (inbound.ts). A refused token stops the
 * relay only: the rest of the bot goes on.
 */
export class DiscordRelay {
  private readonly rest: REST;
  private readonly api: API;
  private readonly gatewaySocket: WebSocketManager;
  private readonly outbound: DiscordOutbound;
  private readonly inbound: DiscordInbound;
  private readonly stopper = new AbortController();
  private readonly counters = { posted: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, received: 0, caught_up: 0, receive_retries: 0, sessions: 0, resumes: 0 };
  private state: ConnectionState = 'connecting';
  private detail: string | undefined;
  private selfId: string | undefined;
  private channels = new Set<string>();
  /** Ids of the relay's own posts (a MESSAGE_DELETE names no author): their deletion is not relayed back. */
  private readonly ownPosts = new RecentIds(10_000);
  /** The newest post the relay made in each channel. */
  private readonly lastPosted = new Map<string, string>();
  private readonly webhooks: ChannelWebhooks | undefined;

  constructor(
    private readonly options: RelayDiscordOptions,
    private readonly env: PluginEnv,
  ) {
    // A post's files go as a body read from disk while it is sent: the default strategy would read it whole first (rest-request.ts).
    this.rest = new REST({ api: options.api_url, timeout: options.request_timeout_ms, makeRequest: makeRequest as RESTOptions['makeRequest'] }).setToken(options.token);
    this.api = new API(this.rest);
    this.gatewaySocket = new WebSocketManager({
      token: options.token,
      rest: this.rest,
      intents: GatewayIntentBits.Guilds | GatewayIntentBits.GuildMessages | GatewayIntentBits.MessageContent,
    });
    this.webhooks = options.post_as === 'webhook'
      ? new ChannelWebhooks({ api: () => this.api, store: env.store, log: env.log, name: options.webhook_name })
      : undefined;
    this.outbound = new DiscordOutbound(
      DurableQueue.open<OutboundItem>(join(env.dataDir, 'to-discord.json'), {
        storage: env.storage,
        maxItems: options.queue_max,
        onHighWater: (size, max) => env.log.warn({ size, max }, 'the queue to Discord is filling up'),
      }),
      {
        api: () => this.api, log: env.log, counters: this.counters, durable: () => env.storage.durable(), media: env.media,
        webhooks: this.webhooks,
        newest: (channel) => newerId(this.lastPosted.get(channel), env.store.get<string>(`last:${channel}`)),
        posted: (item, id) => {
          this.ownPosts.add(id);
          this.lastPosted.set(item.channel, newerId(this.lastPosted.get(item.channel), id)!);
          this.env.gateway.posted(item.key, item.channel, id);
        },
        fatal: (error) => this.fail(error),
      },
    );
    const cdnOrigins = discordCdnOrigins(options.api_url);
    this.inbound = new DiscordInbound({
      gateway: env.gateway, store: env.store, log: env.log, counters: this.counters, incoming: options.incoming,
      own: (message) => message.author.id === this.selfId || this.webhooks?.isOwn(message.webhook_id) === true,
      file: (attachment) => discordIncomingFile(attachment, cdnOrigins),
      stopping: this.stopper.signal,
    });
  }

  instance(): PluginInstance {
    return {
      start: () => this.start(),
      stop: () => this.stop(),
      endpoint: { send: (channel, message) => this.send(channel, message) },
      stats: () => ({ ...this.counters, queued: this.outbound.size }),
      status: () => this.status(),
    };
  }

  private start(): void {
    this.channels = new Set(this.env.gateway.channels());
    this.gatewaySocket.on(WebSocketShardEvents.Ready, (data) => {
      this.selfId = data.user.id;
      this.counters.sessions += 1;
      this.connected();
      // A new session replays nothing: what the channels said meanwhile is read by REST.
      this.inbound.catchUp(this.api, [...this.channels]);
    });
    this.gatewaySocket.on(WebSocketShardEvents.Resumed, () => {
      this.counters.resumes += 1;
      this.connected();
    });
    this.gatewaySocket.on(WebSocketShardEvents.Closed, (code) => {
      if (this.state === 'connected') this.state = 'connecting';
      this.detail = `gateway closed (${code})`;
      // Discord's fatal closes (4004 authentication failed, 4014 disallowed intents, ...): the library does not reconnect.
      if (code === 4004) this.fail(new Error('Discord refused the bot token (4004 Authentication failed)'));
      if (code === 4014) this.fail(new Error('Discord refused the intents: enable the Message Content intent for the bot in the Developer Portal (4014)'));
    });
    this.gatewaySocket.on(WebSocketShardEvents.Error, (error) => this.env.log.warn({ ...failureFields(error) }, 'Discord gateway error'));
    this.gatewaySocket.on(WebSocketShardEvents.Dispatch, (payload) => this.dispatch(payload));
    this.outbound.start();
    void this.gatewaySocket.connect().catch((error: unknown) => this.fail(error));
  }

  private connected(): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    if (this.state !== 'connected') this.env.log.info({ channels: this.channels.size }, 'Discord connected');
    this.state = 'connected';
    this.detail = undefined;
  }

  private dispatch(payload: GatewayDispatchPayload): void {
    if (payload.t === GatewayDispatchEvents.MessageCreate) {
      if (this.channels.has(payload.d.channel_id)) this.inbound.live(payload.d as GuildMessage);
    } else if (payload.t === GatewayDispatchEvents.MessageUpdate) {
      const { d } = payload;
      if (!this.channels.has(d.channel_id) || d.author.id === this.selfId || this.webhooks?.isOwn(d.webhook_id) || !d.edited_timestamp) return;
      const name = d.member?.nick ?? d.author.global_name ?? d.author.username;
      this.inbound.changed(d.channel_id, { kind: 'edit', text: d.content, nativeId: d.id, revision: d.edited_timestamp, speaker: { platform: 'discord', id: d.author.id, name } });
    } else if (payload.t === GatewayDispatchEvents.MessageDelete) {
      const { d } = payload;
      if (!this.channels.has(d.channel_id) || this.ownPosts.has(d.id)) return;
      this.inbound.changed(d.channel_id, { kind: 'delete', text: '', nativeId: d.id, speaker: { platform: 'discord', id: '', name: '' } });
    }
  }

  /** A gateway line for one of the relay's channels: queued durably, never waiting on Discord. */
  private send(channel: string, message: OutgoingMessage): void {
    if (this.state === 'failed') return;
    const text = message.kind === 'action' ? `_${message.text}_` : message.text;
    // Files within max_file_size go up with the post; the others, and refused files, show as lines after the text.
    const files = message.kind === 'message' || message.kind === 'action' ? uploadable(message.files ?? [], this.options.max_file_size) : [];
    const links = discordFileLines((message.files ?? []).filter((file) => !files.includes(file)), message.refusedFiles);
    const content = withFileLines(renderLine(this.options.format, message.speaker.name, text), links);
    const as = this.webhooks ? this.asSpeaker(message, text, links) : undefined;
    if (message.kind === 'edit' || message.kind === 'delete') {
      // Only the relay's own posts can be changed; without the target there is nothing to change.
      if (!message.target) return;
      this.outbound.push({ key: message.key, channel, kind: message.kind, target: message.target, ...(message.kind === 'edit' ? { content, ...(as ? { as } : {}) } : as ? { as } : {}) });
      return;
    }
    if (message.kind !== 'message' && message.kind !== 'action') return;
    this.outbound.push({
      key: message.key, channel, kind: 'post', content, ...(as ? { as } : {}), ...(message.replyTo ? { target: message.replyTo } : {}), ...(files.length > 0 ? { files } : {}),
    });
  }

  /** The line as the channel's webhook posts it: the text under the speaker's name and avatar. */
  private asSpeaker(message: OutgoingMessage, text: string, links: readonly string[]): { content: string; username: string; avatar_url?: string } {
    const { speaker } = message;
    const fill = (template: string, encode: (value: string) => string) => template
      .replace(/\{name\}/g, () => encode(speaker.name)).replace(/\{id\}/g, () => encode(speaker.id)).replace(/\{platform\}/g, () => encode(speaker.platform));
    return {
      // A webhook post cannot answer a message: its parent is quoted above it instead.
      content: withFileLines(renderWebhookText(text, message.quote), links),
      username: webhookUsername(fill(this.options.username, (value) => value)),
      ...(this.options.avatar_url ? { avatar_url: fill(this.options.avatar_url, encodeURIComponent) } : {}),
    };
  }

  private fail(error: unknown): void {
    if (this.state === 'failed') return;
    this.state = 'failed';
    this.detail = error instanceof DiscordAPIError && error.status === 401 ? 'Discord refused the bot token (401 Unauthorized)'
      : error instanceof Error ? error.message : String(error);
    this.env.log.error({ ...failureFields(error) }, 'Discord relay stopped: the token or the bot\'s settings were refused; the rest of the bot goes on');
    void Promise.resolve(this.gatewaySocket.destroy()).catch(() => undefined);
  }

  private async stop(): Promise<void> {
    this.stopper.abort();
    if (this.state !== 'failed') this.state = 'stopped';
    await this.outbound.stop();
    await Promise.resolve(this.gatewaySocket.destroy()).catch(() => undefined);
    await this.inbound.idle();
  }

  private status(): PluginStatus {
    const fallbacks = Object.keys(this.webhooks?.fallbacks() ?? {});
    const detail = this.detail ?? (fallbacks.length > 0 ? `posting as the bot in ${fallbacks.join(', ')}: no Manage Webhooks there` : undefined);
    return { connection: { state: this.state, ...(detail ? { detail } : {}) }, queues: { to_discord: this.outbound.size },
      backlogs: { to_discord: { ...this.outbound.backlog, limit: 'Discord\'s rate limits (Retry-After)' } } };
  }
}
