import { join } from 'node:path';
import { Backoff, DurableQueue, failureFields, RecentIds, sleep, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus } from '../../src/index.js';
import { DEFAULT_MAX_FILE_SIZE, FILE_TIMEOUT_MS, fileSettingsOf, type FileSettings } from './files-out.js';
import { MattermostInbound, type MattermostPost } from './inbound.js';
import { CHANNEL_ID, type RelayMattermostOptions } from './options.js';
import { MattermostOutbound, type LineParts, type OutboundItem, type Rendered } from './outbound.js';
import { overrideName, renderLine, renderText } from './render.js';
import { isRefusal, MattermostError, MattermostRest } from './session.js';
import { MattermostSocket, type SocketEvent } from './socket.js';

type ConnectionState = 'connecting' | 'connected' | 'stopped' | 'failed';

interface Me {
  id: string;
  username: string;
  is_bot?: boolean;
}

/**
 * The Mattermost relay, a gateway endpoint, on the official @mattermost/client's Client4 for REST
 * (session.ts) and Mattermost's websocket protocol on `ws` (socket.ts). Start: check the token
 * (GET /users/me), resolve each `team/channel` to its id, ask whether posts may carry their speaker's
 * name, then send (outbound.ts) and listen (inbound.ts: the websocket's posts, and a catch-up by REST
 * after each hello). A refused token stops the relay only: the rest of the bot goes on.
 */
export class MattermostRelay {
  private readonly rest: MattermostRest;
  private readonly outbound: MattermostOutbound;
  private readonly inbound: MattermostInbound;
  private readonly socket: MattermostSocket;
  private readonly stopper = new AbortController();
  private readonly counters = {
    posted: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, rate_limited: 0, found_after_retry: 0, files_sent: 0, files_linked: 0, received: 0, caught_up: 0, receive_retries: 0, sessions: 0,
  };
  private state: ConnectionState = 'connecting';
  private detail: string | undefined;
  private selfId = '';
  /** Posts go out under their speakers' names (`post_as: override`, and the server allows it). */
  private overrides = false;
  private overrideNote: string | undefined;
  /** What the server lets the relay upload: its client config's MaxFileSize and EnableFileAttachments, read at start (`max_file_size` wins). */
  private fileSettings: FileSettings;
  /** channel (as written) → channel id, and back: one channel may be written twice (its id and its name). */
  private readonly idOfChannel = new Map<string, string>();
  private readonly channelsOfId = new Map<string, string[]>();
  /** The newest post the relay made in each channel (create_at). */
  private readonly lastPosted = new Map<string, number>();
  /** Ids of the relay's own posts lately: their deletion by a moderator is not news to the gateway. */
  private readonly ownPosts = new RecentIds(10_000);
  private running: Promise<void> | undefined;

  constructor(
    private readonly options: RelayMattermostOptions,
    private readonly env: PluginEnv,
  ) {
    this.rest = new MattermostRest(options.server_url, options.token, options.request_timeout_ms, this.stopper.signal);
    this.outbound = new MattermostOutbound(
      DurableQueue.open<OutboundItem>(join(env.dataDir, 'to-mattermost.json'), {
        storage: env.storage,
        maxItems: options.queue_max,
        onHighWater: (size, max) => env.log.warn({ size, max }, 'the queue to Mattermost is filling up'),
      }),
      {
        rest: () => this.rest, idOf: (channel) => this.idOfChannel.get(channel), self: () => this.selfId, log: env.log, counters: this.counters,
        durable: () => env.storage.durable(),
        newest: (channelId) => Math.max(this.lastPosted.get(channelId) ?? 0, env.store.get<{ at: number }>(`mark:${channelId}`)?.at ?? 0) || undefined,
        posted: (item, post) => {
          this.ownPosts.add(post.id);
          this.lastPosted.set(post.channel_id, Math.max(this.lastPosted.get(post.channel_id) ?? 0, post.create_at));
          this.env.gateway.posted(item.key, item.channel, post.id);
        },
        nativeOf: (key, channel) => env.gateway.nativeOf(key, channel),
        render: (line, quoted) => this.render(line, quoted),
        fatal: (error) => this.fail(error),
        media: env.media, files: () => this.fileSettings, fileTimeoutMs: Math.max(options.request_timeout_ms, FILE_TIMEOUT_MS),
      },
    );
    this.fileSettings = { enabled: true, maxFileSize: options.max_file_size ?? DEFAULT_MAX_FILE_SIZE };
    this.inbound = new MattermostInbound({
      gateway: env.gateway, store: env.store, log: env.log, counters: this.counters, incoming: options.incoming, rest: () => this.rest,
      self: () => this.selfId, channelsOf: (channelId) => this.channelsOfId.get(channelId) ?? [], showName: options.show_name,
      ignoreBots: options.ignore_bots, refused: (error) => this.fail(error), stopping: this.stopper.signal,
    });
    const websocketUrl = `${options.server_url.replace(/^http/, 'ws')}/api/v4/websocket`;
    this.socket = new MattermostSocket({
      url: websocketUrl, token: options.token, log: env.log, stopping: this.stopper.signal,
      check: async () => {
        await this.rest.get<Me>(this.rest.client.getUserRoute('me'));
      },
      refused: (error) => this.fail(error),
      hello: () => {
        this.counters.sessions += 1;
        this.connected();
        // Whatever the server replays, what each channel said meanwhile is read by REST (once each: inbound.ts).
        this.inbound.catchUp([...this.channelsOfId.keys()]);
      },
      event: (event) => this.event(event),
      trouble: (detail) => this.trouble(detail),
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

  /** Checks the token, resolves the channels, then sends and listens until stopped; a server that does not answer is tried again. */
  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    const backoff = new Backoff(500, 30_000);
    let me: Me | undefined;
    while (!me && !signal.aborted) {
      try {
        me = await this.rest.get<Me>(this.rest.client.getUserRoute('me'));
      } catch (error) {
        if (isRefusal(error)) return this.fail(error);
        if (signal.aborted) return;
        this.trouble(`cannot reach the server: ${(error as Error).message}`);
        this.env.log.warn({ ...failureFields(error) }, 'could not reach Mattermost; trying again');
        await sleep(backoff.next(), signal);
      }
    }
    if (!me || signal.aborted) return;
    this.selfId = me.id;
    for (const channel of this.env.gateway.channels()) {
      const id = await this.resolve(channel, backoff);
      if (id === undefined) continue;
      this.idOfChannel.set(channel, id);
      this.channelsOfId.set(id, [...(this.channelsOfId.get(id) ?? []), channel]);
    }
    for (const channelId of this.channelsOfId.keys()) await this.firstMark(channelId, backoff);
    if (signal.aborted || this.state === 'failed') return;
    await this.decideOverrides(me);
    this.env.log.info({ user: me.username, channels: this.channelsOfId.size, post_as: this.overrides ? 'override' : 'bot' }, 'Mattermost relay signed in; channels resolved');
    this.outbound.start();
    await this.socket.run();
  }

  /** A channel id as is; `team/channel` by the team's and the channel's names (undefined when there is no such channel, or the bot cannot see it). */
  private async resolve(channel: string, backoff: Backoff): Promise<string | undefined> {
    if (CHANNEL_ID.test(channel)) return channel;
    const [team, name] = channel.split('/') as [string, string];
    while (!this.stopper.signal.aborted) {
      try {
        const found = await this.rest.get<{ id: string }>(`${this.rest.client.getBaseRoute()}/teams/name/${encodeURIComponent(team)}/channels/name/${encodeURIComponent(name)}`);
        return found.id;
      } catch (error) {
        if (isRefusal(error)) {
          this.fail(error);
          return undefined;
        }
        if (error instanceof MattermostError && (error.status === 404 || error.status === 403)) {
          this.env.log.error({ channel, status: error.status }, 'the Mattermost channel does not exist or the bot is not in its team: nothing is relayed to or from it');
          return undefined;
        }
        this.env.log.warn({ channel, ...failureFields(error) }, 'could not look the Mattermost channel up; trying again');
        await sleep(backoff.next(), this.stopper.signal);
      }
    }
    return undefined;
  }

  /** A channel read for the first time: its newest post is where the intake starts (inbound.ts); tried until the server answers. */
  private async firstMark(channelId: string, backoff: Backoff): Promise<void> {
    while (!this.stopper.signal.aborted) {
      try {
        return await this.inbound.firstMark(channelId);
      } catch (error) {
        if (isRefusal(error)) return this.fail(error);
        if (error instanceof MattermostError && (error.status === 404 || error.status === 403)) {
          this.env.log.error({ channel: channelId, status: error.status }, 'the Mattermost channel does not exist or the bot cannot read it: nothing is relayed from it');
          return;
        }
        this.env.log.warn({ channel: channelId, ...failureFields(error) }, 'could not read the Mattermost channel; trying again');
        await sleep(backoff.next(), this.stopper.signal);
      }
    }
  }

  /**
   * The server's settings, from its client config: whether posts go out under their speakers' names
   * (asked for with `post_as: override`, the server's "Enable integrations to override usernames" on,
   * and the token a bot account's: Mattermost shows the override on integrations' posts only; otherwise
   * `format`), and what files it takes.
   */
  private async decideOverrides(me: Me): Promise<void> {
    let config: Record<string, string> | undefined;
    try {
      config = await this.rest.get<Record<string, string>>(`${this.rest.client.getBaseRoute()}/config/client?format=old`);
      this.fileSettings = fileSettingsOf(config, this.options.max_file_size);
      if (!this.fileSettings.enabled) this.env.log.warn({}, 'the Mattermost server does not take file attachments: files go as links');
    } catch (error) {
      this.env.log.warn({ ...failureFields(error) }, 'could not read the Mattermost server\'s settings: files up to max_file_size (100 MB by default) are uploaded');
      if (this.options.post_as === 'override') this.overrideNote = `could not read the server's settings (${(error as Error).message}): posting as the bot (**name**: text)`;
    }
    if (this.options.post_as === 'override' && config) {
      if (config.EnablePostUsernameOverride !== 'true') this.overrideNote = 'the server does not let integrations override usernames: posting as the bot (**name**: text)';
      else if (me.is_bot !== true) this.overrideNote = 'the token is not a bot account\'s, whose posts Mattermost shows under another name: posting as the bot (**name**: text)';
      else this.overrides = true;
    }
    if (this.overrideNote) this.env.log.warn({}, this.overrideNote);
  }



  private event(event: SocketEvent): void {
    if (event.event !== 'posted' && event.event !== 'post_edited' && event.event !== 'post_deleted') return;
    let post: MattermostPost;
    try {
      // The post travels as a JSON string inside the event's data.
      post = JSON.parse(String(event.data.post)) as MattermostPost;
    } catch {
      this.env.log.warn({ event: event.event }, 'a Mattermost event without a readable post: ignored');
      return;
    }
    if (!this.channelsOfId.has(post.channel_id)) return;
    if (post.root_id) this.outbound.noteRoot(post.id, post.root_id);
    if (event.event === 'posted') this.inbound.live(post);
    else if (event.event === 'post_edited') this.inbound.changed(post, 'edit');
    else if (!this.ownPosts.has(post.id)) this.inbound.changed(post, 'delete');
  }

  /** A gateway line for one of the relay's channels: queued durably (as said: rendered when sent), never waiting on Mattermost. */
  private send(channel: string, message: OutgoingMessage): void {
    if (this.state === 'failed') return;
    if (message.kind !== 'message' && message.kind !== 'action' && message.kind !== 'edit' && message.kind !== 'delete') return;
    // Only the relay's own posts can be changed; without the target there is nothing to change.
    if ((message.kind === 'edit' || message.kind === 'delete') && !message.target) return;
    if (message.kind === 'delete') {
      this.outbound.push({ key: message.key, channel, kind: 'delete', target: message.target! });
      return;
    }
    const { name, id, platform } = message.speaker;
    const line: LineParts = { speaker: { name, id, platform }, text: message.text, action: message.kind === 'action' };
    if (message.kind === 'edit') {
      this.outbound.push({ key: message.key, channel, kind: 'edit', target: message.target!, line });
      return;
    }
    // A reply whose parent the map does not know carries a quote of it (left out when it answers the thread after all).
    if (!message.replyTo && message.quote) line.quote = message.quote;
    this.outbound.push({
      key: message.key, channel, kind: 'post', line,
      // Files are uploaded when the line is sent (the server's limit read at start); refused ones are lines of its text.
      ...(message.files?.length ? { files: message.files } : {}),
      ...(message.refusedFiles?.length ? { refused: message.refusedFiles } : {}),
      ...(message.replyTo ? { target: message.replyTo } : {}),
      ...(message.replyToKey && !message.replyTo ? { parentKey: message.replyToKey } : {}),
    });
  }

  /** A line as posted: under its speaker's name (the text alone) where the server allows it, else `format`. */
  private render(line: LineParts, quoted: boolean): Rendered {
    const quote = quoted ? line.quote : undefined;
    if (!this.overrides) {
      return { message: renderLine({ template: this.options.format, name: line.speaker.name, text: line.text, action: line.action, ...(quote ? { quote } : {}) }) };
    }
    const { speaker } = line;
    const icon = this.options.icon_url
      ?.replace(/\{name\}/g, () => encodeURIComponent(speaker.name)).replace(/\{id\}/g, () => encodeURIComponent(speaker.id)).replace(/\{platform\}/g, () => encodeURIComponent(speaker.platform));
    return {
      message: renderText({ text: line.text, action: line.action, ...(quote ? { quote } : {}) }),
      as: { username: overrideName(speaker.name), ...(icon ? { icon_url: icon } : {}) },
    };
  }

  private connected(): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    if (this.state !== 'connected') this.env.log.info({ channels: this.channelsOfId.size }, 'Mattermost connected');
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
    this.detail = isRefusal(error) ? `Mattermost refused the token (${error.message})` : error instanceof Error ? error.message : String(error);
    this.env.log.error({ ...failureFields(error) }, 'Mattermost relay stopped: the token was refused; the rest of the bot goes on');
    this.stopper.abort();
    // Every call now ends at once (the stop aborts it): the queue waits, kept, for a token that works.
    void this.outbound.stop();
  }

  private async stop(): Promise<void> {
    this.stopper.abort();
    if (this.state !== 'failed') this.state = 'stopped';
    await this.outbound.stop();
    await this.running;
    await this.inbound.idle();
  }

  private status(): PluginStatus {
    const detail = this.detail ?? this.overrideNote;
    return {
      connection: { state: this.state, ...(detail ? { detail } : {}) },
      queues: { to_mattermost: this.outbound.size },
      backlogs: { to_mattermost: { ...this.outbound.backlog, limit: 'Mattermost\'s rate limits (429, Retry-After, X-RateLimit-Reset)' } },
    };
  }
}
