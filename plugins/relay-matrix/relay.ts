import { join } from 'node:path';
import { MatrixError, Method, type MatrixClient } from 'matrix-js-sdk';
import { Backoff, DurableQueue, failureFields, fileLines, RecentIds, sleep, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus } from '../../src/index.js';
import { MatrixInbound } from './inbound.js';
import { MatrixMedia } from './media.js';
import type { RelayMatrixOptions } from './options.js';
import { MatrixOutbound, type OutboundFile, type OutboundItem } from './outbound.js';
import { editContent, fileContent, fileLinkContent, renderLine } from './render.js';
import { isRefusal, openSession, requestOptions } from './session.js';
import { MatrixSync } from './sync.js';

type ConnectionState = 'connecting' | 'connected' | 'stopped' | 'failed';
const RELOGIN_EVERY_MS = 60_000;

/**
 * The Matrix relay, a gateway endpoint, on matrix-js-sdk's client without its sync (startClient keeps
 * its position in memory stores): the SDK logs in, joins and resolves aliases, and its HTTP layer
 * (auth, Matrix errors, timeouts, aborts) carries the relay's own /sync loop (sync.ts) and sends
 * (outbound.ts). Start: log in, resolve each room to its id, join it, then send and sync. A refused
 * token or password stops the relay only: the rest of the bot goes on.
 */
export class MatrixRelay {
  private client: MatrixClient | undefined;
  private readonly outbound: MatrixOutbound;
  private readonly inbound: MatrixInbound;
  private readonly sync: MatrixSync;
  private readonly stopper = new AbortController();
  private readonly counters = {
    posted: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, rate_limited: 0, received: 0, receive_retries: 0, syncs: 0, gaps_filled: 0, invites_joined: 0,
  };
  private state: ConnectionState = 'connecting';
  private detail: string | undefined;
  private selfId = '';
  /** channel (as written) → room id, and back: one room may be written twice (its id and its alias). */
  private readonly roomOfChannel = new Map<string, string>();
  private readonly channelsOfRoom = new Map<string, string[]>();
  /** Event ids of the relay's own posts: their redaction by a moderator is not relayed back as a deletion. */
  private readonly ownPosts = new RecentIds(10_000);
  /** Rooms with end-to-end encryption on: nothing is sent there (plain text would undo what the room chose). */
  private readonly encrypted = new Set<string>();
  private running: Promise<void> | undefined;
  private relogin: Promise<boolean> | undefined;
  private lastLogin = 0;

  constructor(
    private readonly options: RelayMatrixOptions,
    private readonly env: PluginEnv,
  ) {
    const client = () => this.client!;
    // Media through the configured homeserver alone, with the token of the session the relay holds now.
    const media = new MatrixMedia({ homeserver: options.homeserver, token: () => this.client!.getAccessToken() ?? '', timeoutMs: options.request_timeout_ms });
    this.outbound = new MatrixOutbound(
      DurableQueue.open<OutboundItem>(join(env.dataDir, 'to-matrix.json'), {
        storage: env.storage,
        maxItems: options.queue_max,
        onHighWater: (size, max) => env.log.warn({ size, max }, 'the queue to Matrix is filling up'),
      }),
      {
        client, media, files: env.media, maxFileSize: options.max_file_size, roomOf: (channel) => this.roomOfChannel.get(channel), encrypted: (roomId) => this.encrypted.has(roomId), log: env.log, counters: this.counters, durable: () => env.storage.durable(),
        posted: (item, eventId) => {
          this.ownPosts.add(eventId);
          this.env.gateway.posted(item.key, item.channel, eventId);
        },
        nativeOf: (key, channel) => env.gateway.nativeOf(key, channel),
        refused: (error) => this.refused(error),
      },
    );
    this.inbound = new MatrixInbound({
      gateway: env.gateway, log: env.log, counters: this.counters, incoming: options.incoming, client, media, self: () => this.selfId,
      channelsOf: (roomId) => this.channelsOfRoom.get(roomId) ?? [], ownPost: (id) => this.ownPosts.has(id), stopping: this.stopper.signal,
      encrypted: (roomId) => this.markEncrypted(roomId),
    });
    this.sync = new MatrixSync({
      client, store: env.store, log: env.log, counters: this.counters, inbound: this.inbound, ours: (roomId) => this.channelsOfRoom.has(roomId), self: () => this.selfId,
      rooms: () => [...this.channelsOfRoom.keys()],
      autoJoinInvites: options.auto_join_invites, requestTimeoutMs: options.request_timeout_ms, stopping: this.stopper.signal,
      connected: () => this.connected(), trouble: (detail) => this.trouble(detail), refused: (error) => this.refused(error),
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

  /** Logs in, resolves and joins the rooms, then sends and syncs until stopped; a homeserver that does not answer is tried again. */
  private async run(): Promise<void> {
    const channels = this.env.gateway.channels();
    const signal = this.stopper.signal;
    const backoff = new Backoff(500, 30_000);
    while (!this.client && !signal.aborted) {
      try {
        this.client = await openSession(this.options, this.env.store, this.env.log, this.stopper.signal);
      } catch (error) {
        if (isRefusal(error)) return this.fail(error);
        this.trouble(`cannot reach the homeserver: ${(error as Error).message}`);
        this.env.log.warn({ ...failureFields(error) }, 'could not log in to Matrix; trying again');
        await sleep(backoff.next(), signal);
      }
    }
    if (signal.aborted) return;
    this.selfId = this.client!.getUserId()!;
    for (const channel of channels) {
      const roomId = await this.resolve(channel, backoff);
      if (roomId === undefined) continue;
      this.roomOfChannel.set(channel, roomId);
      this.channelsOfRoom.set(roomId, [...(this.channelsOfRoom.get(roomId) ?? []), channel]);
      await this.joinAtStart(channel, roomId);
    }
    if (signal.aborted || this.state === 'failed') return;
    this.env.log.info({ user_id: this.selfId, rooms: this.channelsOfRoom.size }, 'Matrix relay logged in; rooms resolved');
    this.outbound.start();
    // From a kept position the first /sync may be held for a while: logged in and joined is connected (a sync failure says otherwise).
    if (this.sync.positioned) this.connected();
    await this.sync.run();
  }

  /** A room id as is; an alias through the room directory (undefined when the directory does not know it). */
  private async resolve(channel: string, backoff: Backoff): Promise<string | undefined> {
    if (channel.startsWith('!')) return channel;
    while (!this.stopper.signal.aborted) {
      try {
        return (await this.client!.getRoomIdForAlias(channel)).room_id;
      } catch (error) {
        if (error instanceof MatrixError && error.httpStatus === 404) {
          this.env.log.error({ channel }, 'the Matrix room alias does not exist: nothing is relayed to or from it');
          return undefined;
        }
        this.env.log.warn({ channel, ...failureFields(error) }, 'could not resolve a Matrix room alias; trying again');
        await sleep(backoff.next(), this.stopper.signal);
      }
    }
    return undefined;
  }

  /** Joins a room (a no-op when joined already); an invite-only room the relay is not invited to yet is joined on invite. */
  private async joinAtStart(channel: string, roomId: string): Promise<void> {
    try {
      await this.client!.joinRoom(channel, channel.includes(':') ? { viaServers: [channel.slice(channel.indexOf(':') + 1)] } : {});
    } catch (error) {
      if (isRefusal(error) && error.httpStatus === 401) return this.fail(error);
      this.env.log.warn({ channel, ...failureFields(error) }, 'could not join the Matrix room (it may be invite-only): it is joined when the relay is invited');
      return;
    }
    try {
      // A room joined later (on invite) shows its encryption in the state /sync gives with the join.
      await this.client!.http.authedRequest(Method.Get, `/rooms/${encodeURIComponent(roomId)}/state/m.room.encryption/`, undefined, undefined, requestOptions({ abortSignal: this.stopper.signal }));
      this.markEncrypted(roomId);
    } catch (error) {
      if (!(error instanceof MatrixError && error.httpStatus === 404)) this.env.log.warn({ channel, ...failureFields(error) }, 'could not read whether the Matrix room is encrypted');
    }
  }

  private markEncrypted(roomId: string): void {
    if (this.encrypted.has(roomId)) return;
    this.encrypted.add(roomId);
    this.env.log.error({ room: roomId, channels: this.channelsOfRoom.get(roomId) }, 'the Matrix room is end-to-end encrypted, which the relay does not support: nothing is sent there');
  }

  /** A gateway line for one of the relay's rooms: queued durably, never waiting on Matrix. */
  private send(channel: string, message: OutgoingMessage): void {
    if (this.state === 'failed') return;
    if (message.kind !== 'message' && message.kind !== 'action' && message.kind !== 'edit' && message.kind !== 'delete') return;
    // Only the relay's own posts can be changed; without the target there is nothing to change.
    if ((message.kind === 'edit' || message.kind === 'delete') && !message.target) return;
    if (message.kind === 'delete') {
      this.outbound.push({ key: message.key, channel, kind: 'delete', target: message.target! });
      return;
    }
    // Files refused on the way say so in the text; files kept go as events of their own after it (outbound.ts).
    const text = message.kind === 'edit' ? message.text : [message.text, ...fileLines(undefined, message.refusedFiles)].filter((part) => part !== '').join('\n');
    const files = message.kind === 'edit' ? [] : (message.files ?? []).map((file) => this.outboundFile(message.speaker.name, file));
    const content = renderLine({
      template: this.options.format, msgtype: this.options.msgtype, name: message.speaker.name, text, action: message.kind === 'action',
      ...(message.kind !== 'edit' && !message.replyTo && message.quote ? { quote: message.quote } : {}),
    });
    if (message.kind === 'edit') {
      this.outbound.push({ key: message.key, channel, kind: 'edit', target: message.target!, content: editContent(content, message.target!) });
      return;
    }
    // A line of files alone has no text event: the first file's event is the line's.
    const hasText = text !== '' || files.length === 0;
    if (message.replyTo) content['m.relates_to'] = { 'm.in_reply_to': { event_id: message.replyTo } };
    const unquoted = hasText && message.replyToKey && !message.replyTo
      ? renderLine({ template: this.options.format, msgtype: this.options.msgtype, name: message.speaker.name, text, action: message.kind === 'action' })
      : undefined;
    this.outbound.push({
      key: message.key, channel, kind: 'post', ...(hasText ? { content } : {}), ...(unquoted ? { parentKey: message.replyToKey, replyContent: unquoted } : {}),
      ...(files.length > 0 ? { files } : {}),
    });
  }

  /** A file of a line, both ways it may go: natively (once uploaded) and as its link line. */
  private outboundFile(name: string, file: NonNullable<OutgoingMessage['files']>[number]): OutboundFile {
    return {
      attachment: file,
      native: fileContent({ template: this.options.format, name, file }),
      link: fileLinkContent({ template: this.options.format, msgtype: this.options.msgtype, name, file }),
    };
  }

  /**
   * The homeserver stopped taking the token mid-run (expired, logged out). With a password the relay
   * logs in again, at most once a minute (a homeserver refusing every new token would otherwise be
   * logged in to in a loop); without one, or when the password is refused too, the relay stops.
   */
  private refused(error: unknown): Promise<boolean> {
    const again = this.options.password !== undefined && error instanceof MatrixError && error.errcode === 'M_UNKNOWN_TOKEN' &&
      Date.now() - this.lastLogin >= RELOGIN_EVERY_MS;
    if (!again) {
      this.fail(error);
      return Promise.resolve(false);
    }
    this.relogin ??= (async () => {
      this.lastLogin = Date.now();
      this.env.log.warn({}, 'the homeserver no longer takes the relay\'s Matrix token: logging in again');
      const backoff = new Backoff(500, 30_000);
      try {
        for (;;) {
          try {
            this.client = await openSession(this.options, this.env.store, this.env.log, this.stopper.signal);
            return true;
          } catch (failure) {
            if (isRefusal(failure)) {
              this.fail(failure);
              return false;
            }
            if (this.stopper.signal.aborted) return false;
            this.trouble(`cannot reach the homeserver: ${(failure as Error).message}`);
            await sleep(backoff.next(), this.stopper.signal);
          }
        }
      } finally {
        this.relogin = undefined;
      }
    })();
    return this.relogin;
  }

  private connected(): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    if (this.state !== 'connected') this.env.log.info({ rooms: this.channelsOfRoom.size }, 'Matrix connected');
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
    this.detail = error instanceof MatrixError ? `the homeserver refused the relay's account (${error.errcode ?? error.httpStatus}): ${error.data?.error ?? error.message}`
      : error instanceof Error ? error.message : String(error);
    this.env.log.error({ ...failureFields(error) }, 'Matrix relay stopped: the homeserver refused its token or password; the rest of the bot goes on');
    this.stopper.abort();
  }

  private async stop(): Promise<void> {
    this.stopper.abort();
    if (this.state !== 'failed') this.state = 'stopped';
    // The stop signal aborted every request in flight (sends, the long poll, a login or join).
    await this.outbound.stop();
    await this.running;
    this.client?.stopClient();
  }

  private status(): PluginStatus {
    return { connection: { state: this.state, ...(this.detail ? { detail: this.detail } : {}) }, queues: { to_matrix: this.outbound.size },
      backlogs: { to_matrix: { ...this.outbound.backlog, limit: 'the homeserver\'s rate limits (M_LIMIT_EXCEEDED)' } } };
  }
}
