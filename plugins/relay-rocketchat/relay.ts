import { join } from 'node:path';
import { Backoff, DurableQueue, failureFields, RecentIds, sleep, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus } from '../../src/index.js';
import { DEFAULT_MAX_FILE_SIZE, uploadLimitOf } from './files.js';
import { itemOf } from './line-item.js';
import { RocketInbound, type Room } from './inbound.js';
import { ROOM_ID, type RelayRocketchatOptions } from './options.js';
import { RocketOutbound, type LineParts, type OutboundItem, type Rendered } from './outbound.js';
import { aliasName, renderLine, renderText } from './render.js';
import { RocketSocket } from './ddp.js';
import { isRefusal, RocketError, RocketRest } from './rest.js';

type ConnectionState = 'connecting' | 'connected' | 'stopped' | 'failed';

interface Me {
  _id: string;
  username: string;
  roles?: string[];
}

/**
 * The Rocket.Chat relay, a gateway endpoint, on a thin client of Rocket.Chat's REST API (rest.ts,
 * undici) and its realtime DDP websocket (ddp.ts, ws). Start: sign in (a personal access token, or a
 * login), resolve each `#name` to its room, ask whether the bot may send under other names
 * (`message-impersonate`), then send (outbound.ts) and listen (inbound.ts: the room streams, and a
 * catch-up by REST after each session). A refused token stops the relay only: the rest of the bot goes on.
 */
export class RocketchatRelay {
  private readonly rest: RocketRest;
  private readonly outbound: RocketOutbound;
  private readonly inbound: RocketInbound;
  private readonly socket: RocketSocket;
  private readonly stopper = new AbortController();
  private readonly counters = {
    posted: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, rate_limited: 0, found_after_retry: 0, received: 0, caught_up: 0, receive_retries: 0, sessions: 0,
  };
  private state: ConnectionState = 'connecting';
  private detail: string | undefined;
  private selfId = '';
  /** Lines go out under their speakers' names (`post_as: alias`, and the bot may impersonate). */
  private aliases = false;
  private aliasNote: string | undefined;
  /** room (as written) → room, and a room id → the gateway's channels (one room may be written twice: its id and its name). */
  private readonly roomOfChannel = new Map<string, Room>();
  private readonly channelsOfRoom = new Map<string, string[]>();
  private readonly rooms = new Map<string, Room>();
  private readonly ownMessages = new RecentIds(10_000);
  /** The server's FileUpload_MaxFileSize (read at start; Infinity for -1, 0 when uploads are off). */
  private serverMaxFile = DEFAULT_MAX_FILE_SIZE;
  private running: Promise<void> | undefined;

  constructor(
    private readonly options: RelayRocketchatOptions,
    private readonly env: PluginEnv,
  ) {
    this.rest = new RocketRest(options.server_url, options.request_timeout_ms, this.stopper.signal);
    if (options.user_id && options.token) this.rest.credentials = { userId: options.user_id, token: options.token };
    this.outbound = new RocketOutbound(
      DurableQueue.open<OutboundItem>(join(env.dataDir, 'to-rocketchat.json'), {
        storage: env.storage,
        maxItems: options.queue_max,
        onHighWater: (size, max) => env.log.warn({ size, max }, 'the queue to Rocket.Chat is filling up'),
      }),
      {
        rest: () => this.rest, idOf: (channel) => this.roomOfChannel.get(channel)?.id, self: () => this.selfId, log: env.log, counters: this.counters,
        durable: () => env.storage.durable(),
        posted: (item, message) => {
          this.ownMessages.add(message._id);
          this.env.gateway.posted(item.key, item.channel, message._id);
        },
        nativeOf: (key, channel) => env.gateway.nativeOf(key, channel),
        render: (line, quoted) => this.render(line, quoted),
        fatal: (error) => this.fail(error),
        media: env.media,
        uploadLimit: () => options.max_upload_bytes ?? this.serverMaxFile,
        roomType: (roomId) => this.rooms.get(roomId)?.type,
      },
    );
    this.inbound = new RocketInbound({
      gateway: env.gateway, store: env.store, log: env.log, counters: this.counters, incoming: options.incoming, rest: () => this.rest,
      self: () => this.selfId, channelsOf: (roomId) => this.channelsOfRoom.get(roomId) ?? [], room: (roomId) => this.rooms.get(roomId),
      isOwn: (messageId) => this.ownMessages.has(messageId), noteRoot: (messageId, rootId) => this.outbound.noteRoot(messageId, rootId),
      showName: options.show_name, ignoreBots: options.ignore_bots, refused: (error) => this.fail(error), stopping: this.stopper.signal,
      serverUrl: options.server_url,
    });
    this.socket = new RocketSocket({
      url: `${options.server_url.replace(/^http/, 'ws')}/websocket`, token: () => this.rest.credentials?.token ?? '', rooms: () => [...this.rooms.keys()],
      log: env.log, stopping: this.stopper.signal,
      check: async () => {
        await this.signIn();
      },
      refused: (error) => this.fail(error),
      ready: () => {
        this.counters.sessions += 1;
        this.connected();
        this.inbound.catchUp([...this.rooms.keys()]);
      },
      message: (roomId, message) => {
        if (this.rooms.has(roomId)) this.inbound.live(roomId, message as Parameters<RocketInbound['live']>[1]);
      },
      deleted: (roomId, messageId) => {
        if (this.rooms.has(roomId)) this.inbound.deleted(roomId, messageId);
      },
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

  /** The credentials still good: `me` answers (a login first when the relay signs in by password and holds no token yet). */
  private async signIn(): Promise<Me> {
    if (!this.rest.credentials && this.options.username && this.options.password) await this.rest.login(this.options.username, this.options.password);
    try {
      return await this.rest.get<Me>('me');
    } catch (error) {
      // A login's token expired or was revoked: log in again once before giving up.
      if (isRefusal(error) && this.options.username && this.options.password) {
        await this.rest.login(this.options.username, this.options.password);
        return await this.rest.get<Me>('me');
      }
      throw error;
    }
  }

  /** Signs in, resolves the rooms, then sends and listens until stopped; a server that does not answer is tried again. */
  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    const backoff = new Backoff(500, 30_000);
    let me: Me | undefined;
    while (!me && !signal.aborted) {
      try {
        me = await this.signIn();
      } catch (error) {
        if (isRefusal(error)) return this.fail(error);
        if (signal.aborted) return;
        this.trouble(`cannot reach the server: ${(error as Error).message}`);
        this.env.log.warn({ ...failureFields(error) }, 'could not reach Rocket.Chat; trying again');
        await sleep(backoff.next(), signal);
      }
    }
    if (!me || signal.aborted) return;
    this.selfId = me._id;
    for (const channel of this.env.gateway.channels()) {
      const room = await this.resolve(channel, backoff);
      if (room === undefined) continue;
      this.roomOfChannel.set(channel, room);
      this.channelsOfRoom.set(room.id, [...(this.channelsOfRoom.get(room.id) ?? []), channel]);
    }
    for (const roomId of this.channelsOfRoom.keys()) {
      const room = [...this.roomOfChannel.values()].find((known) => known.id === roomId)!;
      if (await this.firstMark(room, backoff)) this.rooms.set(roomId, room);
    }
    if (signal.aborted || this.state === 'failed') return;
    await this.decideAliases(me);
    await this.readUploadLimit();
    this.env.log.info({ user: me.username, rooms: this.rooms.size, post_as: this.aliases ? 'alias' : 'bot' }, 'Rocket.Chat relay signed in; rooms resolved');
    this.outbound.start();
    await this.socket.run();
  }

  /** A room by its id or `#name` (rooms.info): undefined when there is no such room or the bot cannot see it. */
  private async resolve(channel: string, backoff: Backoff): Promise<Room | undefined> {
    const query = ROOM_ID.test(channel) ? { roomId: channel } : { roomName: channel.slice(1) };
    while (!this.stopper.signal.aborted) {
      try {
        const { room } = await this.rest.get<{ room: { _id: string; t: string } }>('rooms.info', query);
        if (room.t !== 'c' && room.t !== 'p') {
          this.env.log.error({ channel, type: room.t }, 'the Rocket.Chat room is not a channel or a private group (a direct message, a livechat): nothing is relayed to or from it');
          return undefined;
        }
        return { id: room._id, type: room.t };
      } catch (error) {
        if (isRefusal(error)) {
          this.fail(error);
          return undefined;
        }
        if (error instanceof RocketError && error.status >= 400 && error.status < 500 && error.status !== 429) {
          this.env.log.error({ channel, status: error.status, reason: error.message }, 'the Rocket.Chat room does not exist or the bot cannot see it: nothing is relayed to or from it');
          return undefined;
        }
        this.env.log.warn({ channel, ...failureFields(error) }, 'could not look the Rocket.Chat room up; trying again');
        await sleep(error instanceof RocketError && error.retryAfterMs ? error.retryAfterMs : backoff.next(), this.stopper.signal);
      }
    }
    return undefined;
  }

  /** A room read for the first time: its newest message is where the intake starts; tried until the server answers. False: the bot cannot read it. */
  private async firstMark(room: Room, backoff: Backoff): Promise<boolean> {
    while (!this.stopper.signal.aborted) {
      try {
        await this.inbound.firstMark(room);
        return true;
      } catch (error) {
        if (isRefusal(error)) {
          this.fail(error);
          return false;
        }
        if (error instanceof RocketError && error.status >= 400 && error.status < 500 && error.status !== 429) {
          this.env.log.error({ room: room.id, status: error.status, reason: error.message }, 'the bot cannot read the Rocket.Chat room (is it a member?): nothing is relayed from it');
          return false;
        }
        this.env.log.warn({ room: room.id, ...failureFields(error) }, 'could not read the Rocket.Chat room; trying again');
        await sleep(backoff.next(), this.stopper.signal);
      }
    }
    return false;
  }

  /** Whether lines go out under their speakers' names: asked for (`post_as: alias`) and one of the bot's roles holds `message-impersonate`. */
  private async decideAliases(me: Me): Promise<void> {
    if (this.options.post_as !== 'alias') return;
    try {
      const { update } = await this.rest.get<{ update: Array<{ _id: string; roles: string[] }> }>('permissions.listAll');
      const roles = update.find((permission) => permission._id === 'message-impersonate')?.roles ?? [];
      if ((me.roles ?? []).some((role) => roles.includes(role))) this.aliases = true;
      else this.aliasNote = 'the bot has no role with the message-impersonate permission (give it the bot role): sending as the bot (**name**: text)';
    } catch (error) {
      this.aliasNote = `could not read the server's permissions (${(error as Error).message}): sending as the bot (**name**: text)`;
    }
    if (this.aliasNote) this.env.log.warn({}, this.aliasNote);
  }

  /** The server's upload limit (files.ts); unread, Rocket.Chat's default stands. */
  private async readUploadLimit(): Promise<void> {
    if (this.options.max_upload_bytes !== undefined) return;
    try {
      this.serverMaxFile = await uploadLimitOf(this.rest);
    } catch (error) {
      this.env.log.warn({ ...failureFields(error) }, `could not read the server's upload limit: files up to ${DEFAULT_MAX_FILE_SIZE} bytes are uploaded, larger ones linked`);
    }
  }

  /** A gateway line for one of the relay's rooms: queued durably (as said: rendered when sent), never waiting on Rocket.Chat. */
  private send(channel: string, message: OutgoingMessage): void {
    if (this.state === 'failed') return;
    const item = itemOf(channel, message);
    if (item) this.outbound.push(item);
  }

  /** A line as sent: under its speaker's name (the text alone) where the bot may, else `format`. */
  private render(line: LineParts, quoted: boolean): Rendered {
    const quote = quoted ? line.quote : undefined;
    if (!this.aliases) {
      return { msg: renderLine({ template: this.options.format, name: line.speaker.name, text: line.text, action: line.action, ...(quote ? { quote } : {}) }) };
    }
    const { speaker } = line;
    const avatar = this.options.avatar_url
      ?.replace(/\{name\}/g, () => encodeURIComponent(speaker.name)).replace(/\{id\}/g, () => encodeURIComponent(speaker.id)).replace(/\{platform\}/g, () => encodeURIComponent(speaker.platform));
    return {
      msg: renderText({ text: line.text, action: line.action, ...(quote ? { quote } : {}) }),
      as: { alias: aliasName(speaker.name), ...(avatar ? { avatar } : this.options.emoji ? { emoji: this.options.emoji } : {}) },
    };
  }

  private connected(): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    if (this.state !== 'connected') this.env.log.info({ rooms: this.rooms.size }, 'Rocket.Chat connected');
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
    const refused = isRefusal(error) || (error as { status?: number }).status === 401;
    this.detail = refused ? `Rocket.Chat refused the bot's credentials (${(error as Error).message}): make a new personal access token` : error instanceof Error ? error.message : String(error);
    this.env.log.error({ ...failureFields(error) }, refused ? 'Rocket.Chat relay stopped: the credentials were refused; the rest of the bot goes on' : 'Rocket.Chat relay stopped; the rest of the bot goes on');
    this.stopper.abort();
    // Every call now ends at once (the stop aborts it): the queue waits, kept, for credentials that work.
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
    const detail = this.detail ?? this.aliasNote;
    return {
      connection: { state: this.state, ...(detail ? { detail } : {}) },
      queues: { to_rocketchat: this.outbound.size },
      backlogs: { to_rocketchat: { ...this.outbound.backlog, limit: 'Rocket.Chat\'s rate limits (429, X-RateLimit-Reset)' } },
    };
  }

}
