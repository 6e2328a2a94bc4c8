import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { Element } from '@xmpp/client';
import { DurableQueue, failureFields, fileLines, RecentIdsFile, type Attachment, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus } from '../../src/index.js';
import { XmppConnection } from './connection.js';
import { XmppInbound } from './inbound.js';
import { bareOf, errorCondition, hasArchive, joinRoom, NS, readRoomMessage } from './muc.js';
import type { RelayXmppOptions } from './options.js';
import { RoomAbsences } from './room-absences.js';
import { RoomFiles } from './room-files.js';
import { XmppOutbound, type OutboundItem } from './outbound.js';
import { renderLine } from './render.js';

type ConnectionState = 'connecting' | 'connected' | 'stopped' | 'failed';

/** Where versions before #32 kept the relay's posts, in the plugin's key-value store (read once into posts.json, then removed). */
const POSTS = 'posts';
/** The relay's posts remembered: the room's stanza-id → the message id it was sent with (XEP-0308 corrections name the latter). */
const POSTS_KEPT = 2_000;
/**
 * Refusals that are the room's settings (banned, members only, a password): an owner must change them,
 * so the relay's lines for the room are dropped meanwhile (one queue serves every room: they would hold
 * up the lines of the others). The relay still tries the room again, at the backoff's pace.
 */
const SETTINGS_REFUSALS = new Set(['forbidden', 'registration-required', 'not-authorized']);
/** How long a stop waits for a room's chain (a join or an archive read in flight ends with the stream anyway). */
const STOP_WAIT_MS = 5_000;

/**
 * The XMPP relay, a gateway endpoint for multi-user chat rooms (XEP-0045). The stream is @xmpp/client's
 * (connection.ts); on every new session the relay joins its rooms without history and reads each
 * room's archive from its last position (inbound.ts), then lets the queued lines go (outbound.ts). A
 * resumed session (XEP-0198) keeps the rooms and changes nothing. Refused credentials or TLS stop the
 * relay only: the rest of the bot goes on.
 */
export class XmppRelay {
  private readonly connection: XmppConnection;
  private readonly outbound: XmppOutbound;
  private readonly inbound: XmppInbound;
  private readonly stopper = new AbortController();
  private readonly counters = { joins: 0, sent: 0, posted: 0, files: 0, files_in: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, received: 0, caught_up: 0, receive_retries: 0, sessions: 0, resumes: 0 };
  private state: ConnectionState = 'connecting';
  private detail: string | undefined;
  /** Room (lower-cased) → the nick the relay has there in this session. */
  private readonly nicks = new Map<string, string>();
  /** Rooms joined and read up to date in this session (a resumed session lets lines go to these at once). */
  private readonly caughtUp = new Set<string>();
  private rooms: string[] = [];
  /** Counts sessions, so a join of an old session does not mark a room ready in a new one. */
  private session = 0;
  /** Rooms not joined (yet), each tried again with backoff: the relay shows as down while there is one. */
  private readonly absences = new RoomAbsences((room) => {
    if (!this.stopper.signal.aborted && this.connection.online) this.join(room);
  });
  /** The relay's last POSTS_KEPT posts (posts.json, a journal): what an edit of one of them corrects. */
  private readonly posts: RecentIdsFile;
  /** Files: the server's HTTP Upload service (XEP-0363) for uploads, and the only place shared URLs are read from. */
  private readonly files: RoomFiles;

  constructor(
    private readonly options: RelayXmppOptions,
    private readonly env: PluginEnv,
  ) {
    const [username, domain] = options.jid ? options.jid.split('@') as [string, string] : [options.username!, options.domain!];
    const ca = this.readCa();
    this.files = new RoomFiles({
      domain: options.domain ?? domain, ask: (iq) => this.connection.request(iq), media: env.media, log: env.log, counters: this.counters,
      tls: { allowSelfSigned: options.tls.allow_self_signed, ...(ca ? { ca } : {}) }, timeoutMs: options.file_timeout_ms,
      ...(options.upload_url_prefix ? { prefix: options.upload_url_prefix } : {}),
    });
    this.posts = RecentIdsFile.open(join(env.dataDir, 'posts.json'), POSTS_KEPT, env.storage, env.store.get<Array<[string, string]>>(POSTS) ?? []);
    if (env.store.get(POSTS) !== undefined) env.store.delete(POSTS);
    this.connection = new XmppConnection(
      { service: options.service, domain: options.domain ?? domain, username, password: options.password, allowSelfSigned: options.tls.allow_self_signed, log: env.log, ...(ca ? { ca } : {}) },
      {
        online: () => this.online(),
        resumed: () => {
          this.counters.resumes += 1;
          this.connected();
          this.outbound.resumed(this.caughtUp);
          // The rooms it was not in (their retries paused with the drop, or a join cut short) are tried now.
          for (const room of this.absences.rooms()) this.join(room);
        },
        offline: (reason) => {
          if (this.state === 'connected') this.state = 'connecting';
          this.detail = reason;
          // A new session joins every room anyway; a resumed one still has them.
          this.absences.pause();
          this.outbound.offline();
        },
        stanza: (stanza) => this.stanza(stanza),
        fatal: (error) => this.fail(error),
      },
    );
    this.outbound = new XmppOutbound(
      DurableQueue.open<OutboundItem>(join(env.dataDir, 'to-xmpp.json'), {
        storage: env.storage,
        maxItems: options.queue_max,
        onHighWater: (size, max) => env.log.warn({ size, max }, 'the queue to XMPP is filling up'),
      }),
      {
        send: (stanza) => this.connection.send(stanza), log: env.log, counters: this.counters, durable: () => env.storage.durable(),
        reflectionTimeoutMs: options.reflection_timeout_ms,
        posted: (item, nativeId, originId) => {
          this.rememberPost(nativeId, originId);
          env.gateway.posted(item.key, item.room, nativeId);
        },
        upload: (file, signal) => this.files.upload(file, signal),
      },
    );
    this.inbound = new XmppInbound({
      gateway: env.gateway, store: env.store, log: env.log, counters: this.counters, incoming: options.incoming, incomingAction: options.incoming_action,
      nick: (room) => this.nicks.get(room) ?? options.nick, sending: (originId) => this.outbound.sending(originId),
      own: (message) => this.outbound.own(message), fileAt: (url) => this.files.fileAt(url), stopping: this.stopper.signal,
    });
  }

  instance(): PluginInstance {
    return {
      start: () => this.start(),
      stop: () => this.stop(),
      endpoint: { send: (channel, message) => this.send(channel, message) },
      stats: () => ({ ...this.counters, queued: this.outbound.size, rooms: this.rooms.length, rooms_not_joined: this.absences.size, room_refusals: this.absences.refusals }),
      status: () => this.status(),
    };
  }

  /** tls.ca_file's PEM; a file that cannot be read leaves the relay failed (not the bot). */
  private readCa(): string | undefined {
    const file = this.options.tls.ca_file;
    if (!file) return undefined;
    const path = isAbsolute(file) ? file : join(this.env.configDir, file);
    try {
      return readFileSync(path, 'utf8');
    } catch (error) {
      this.state = 'failed';
      this.detail = `cannot read tls.ca_file ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
      this.env.log.error({ path, ...failureFields(error) }, 'XMPP relay stopped: its tls.ca_file cannot be read; the rest of the bot goes on');
      return undefined;
    }
  }

  private start(): void {
    // A relay that failed before it began (its CA file) connects to nothing: without the CA it would trust the wrong certificates.
    if (this.state === 'failed') return;
    this.rooms = [...new Set(this.env.gateway.channels().map(bareOf))];
    this.outbound.start();
    this.connection.start();
  }

  /** A new session: join every room, read what it said meanwhile, then let its queued lines go. */
  private online(): void {
    this.counters.sessions += 1;
    this.session += 1;
    this.nicks.clear();
    this.caughtUp.clear();
    this.outbound.newSession();
    this.connected();
    // What the server's upload service is (and takes) is asked once a session; a file waits for the answer.
    this.files.newSession();
    for (const room of this.rooms) this.join(room);
  }

  /** Joins the room and reads what it said meanwhile, in its chain: live messages that arrive meanwhile wait behind it. */
  private join(room: string): void {
    const session = this.session;
    this.nicks.delete(room);
    this.caughtUp.delete(room);
    this.absences.joining(room);
    void this.inbound.inOrder(room, async () => {
      try {
        await this.joinAndCatchUp(room, session);
      } catch (error) {
        // A new session joins every room anyway.
        if (session !== this.session || this.stopper.signal.aborted || !this.connection.online) return;
        // Locked, not made yet, the MUC service away, an iq that timed out, an archive page refused: the
        // room stays closed to the queue (its lines wait) until it is joined and read.
        const condition = error instanceof RoomRefusal ? error.condition : 'error';
        const waitMs = this.absences.refused(room, condition);
        this.env.log.warn({ room, condition, wait_ms: waitMs, ...(error instanceof RoomRefusal ? {} : failureFields(error)) },
          'could not join the XMPP room or read its archive; trying again');
      }
    });
  }

  private async joinAndCatchUp(room: string, session: number): Promise<void> {
    const client = this.connection.client;
    const joined = await joinRoom(client, room, this.options.nick);
    if (session !== this.session || this.stopper.signal.aborted) return;
    if (!joined.joined) {
      if (SETTINGS_REFUSALS.has(joined.condition)) {
        this.env.log.error({ room, condition: joined.condition }, 'the XMPP room will not have the relay (its settings): lines for it are dropped until it does');
        this.outbound.roomGone(room);
      }
      throw new RoomRefusal(joined.condition);
    }
    this.nicks.set(room, joined.nick);
    this.counters.joins += 1;
    if (await hasArchive(client, room)) await this.inbound.catchUp(client, room);
    else this.env.log.warn({ room }, 'the room keeps no archive (XEP-0313): what it says while the relay is away is not relayed, and a line lost in a crash may be sent twice');
    // Put out of the room while its archive was read (a kick): the rejoin already waits its turn.
    if (session !== this.session || !this.nicks.has(room)) return;
    this.caughtUp.add(room);
    this.absences.joined(room);
    this.outbound.roomReady(room);
  }

  private stanza(stanza: Element): void {
    const room = bareOf(stanza.attrs.from);
    if (!this.rooms.includes(room)) return;
    if (stanza.name === 'presence') {
      this.presence(room, stanza);
      return;
    }
    if (stanza.name !== 'message') return;
    if (stanza.attrs.type === 'error') {
      // The room refused one of the relay's lines (not an occupant, no voice, too long, ...).
      const condition = errorCondition(stanza);
      if (condition === 'not-acceptable' && this.nicks.has(room)) {
        this.env.log.warn({ room }, 'the room says the relay is not in it; joining again');
        this.outbound.roomLost(room);
        this.join(room);
      }
      this.outbound.refused(stanza.attrs.id ?? '', condition);
      return;
    }
    // Archive results are not groupchat messages (the catch-up reads them); this is what the rooms say live.
    if (stanza.attrs.type !== 'groupchat') return;
    const message = readRoomMessage(stanza);
    if (message) this.inbound.live(message);
  }

  /**
   * The relay's own presence in a room went away (kicked, the room destroyed, shut down or restarted):
   * it joins again after the room's backoff wait (a room destroyed may be made again later).
   */
  private presence(room: string, stanza: Element): void {
    const nick = this.nicks.get(room);
    const from = stanza.attrs.from ?? '';
    if (stanza.attrs.type !== 'unavailable' || nick === undefined || from.slice(from.indexOf('/') + 1) !== nick || this.stopper.signal.aborted) return;
    const x = stanza.getChild('x', NS.mucUser);
    const codes = x?.getChildren('status').map((status) => status.attrs.code) ?? [];
    this.nicks.delete(room);
    this.caughtUp.delete(room);
    this.outbound.roomLost(room);
    // 301 banned, 321/322 no longer a member: the room's settings; its lines are dropped until it lets the relay in.
    const banned = codes.some((code) => code === '301' || code === '321' || code === '322');
    if (banned) this.outbound.roomGone(room);
    const why = banned ? 'banned' : x?.getChild('destroy') ? 'destroyed' : codes.includes('307') ? 'kicked' : codes.includes('332') ? 'service shut down' : 'left';
    const waitMs = this.absences.refused(room, why);
    const line = banned ? 'the relay was removed from the XMPP room: lines for it are dropped until it is let in again; trying again' : 'the relay is out of the XMPP room; joining again';
    this.env.log[banned ? 'error' : 'warn']({ room, codes, why, wait_ms: waitMs }, line);
  }

  private connected(): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    if (this.state !== 'connected') this.env.log.info({ rooms: this.rooms.length }, 'XMPP connected');
    this.state = 'connected';
    this.detail = undefined;
  }

  /** A gateway line for one of the relay's rooms: queued durably, never waiting on XMPP. */
  private send(channel: string, message: OutgoingMessage): void {
    if (this.state === 'failed') return;
    const room = bareOf(channel);
    const body = message.kind === 'action'
      ? renderLine(this.options.action_format, message.speaker.name, message.text)
      : renderLine(this.options.format, message.speaker.name, message.text);
    if (message.kind === 'edit') {
      // Only the relay's own posts can be corrected, and only those whose message id it still knows.
      const original = message.target && this.postOf(message.target);
      if (original) this.outbound.push({ key: message.key, room, kind: 'edit', body, target: original });
      return;
    }
    if (message.kind === 'delete') {
      if (message.target) this.outbound.push({ key: message.key, room, kind: 'delete', target: message.target });
      return;
    }
    if (message.kind !== 'message' && message.kind !== 'action') return;
    const files = message.files ?? [];
    const refused = fileLines(undefined, message.refusedFiles);
    if (files.length === 0 && refused.length === 0) {
      this.outbound.push({ key: message.key, room, kind: 'post', body });
      return;
    }
    // The line's message says the text and names its files (and those refused), with the speaker; each
    // file follows as a message of its own whose body is its URL (the upload's, with OOB, else the store's link).
    const named = fileLines(files.map((file) => ({ ...file, url: undefined } as Attachment)));
    const text = [message.text, ...refused, ...named].filter((part) => part !== '').join('\n');
    const said = renderLine(message.kind === 'action' ? this.options.action_format : this.options.format, message.speaker.name, text);
    this.outbound.push({ key: message.key, room, kind: 'post', body: said });
    for (const file of files) this.outbound.push({ key: message.key, room, kind: 'post', file });
  }

  private rememberPost(stanzaId: string, originId: string): void {
    this.posts.add(stanzaId, originId);
  }

  private postOf(stanzaId: string): string | undefined {
    return this.posts.get(stanzaId);
  }

  private fail(error: Error): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    this.state = 'failed';
    this.detail = error.message;
    this.env.log.error({ ...failureFields(error) }, 'XMPP relay stopped: the server refused the credentials or its TLS; the rest of the bot goes on');
    void this.connection.stop();
  }

  private async stop(): Promise<void> {
    this.stopper.abort();
    this.absences.pause();
    if (this.state !== 'failed') this.state = 'stopped';
    await this.outbound.stop();
    await this.connection.stop();
    await this.files.close();
    await Promise.race([this.inbound.idle(), new Promise((done) => setTimeout(done, STOP_WAIT_MS).unref())]);
  }

  private status(): PluginStatus {
    // Connected but out of a room (refused, kicked, still joining): down for /readyz, with the rooms and why.
    const connection = this.state === 'connected' && this.absences.size > 0
      ? { state: 'rooms-missing', detail: this.absences.describe(this.rooms.length) }
      : { state: this.state, ...(this.detail ? { detail: this.detail } : {}) };
    return { connection, queues: { to_xmpp: this.outbound.size },
      backlogs: { to_xmpp: { ...this.outbound.backlog, limit: 'the XMPP server (one line at a time, each confirmed by its reflection)' } } };
  }
}

/** A room's refusal of the relay's join (a stanza error's condition, or `no answer`). */
class RoomRefusal extends Error {
  constructor(readonly condition: string) {
    super(`the room did not let the relay in (${condition})`);
  }
}
