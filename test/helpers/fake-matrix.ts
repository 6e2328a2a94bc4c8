import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Matrix homeserver written from the client-server API spec (v1.x): versions, password login
 * (m.id.user), whoami, join (by id or alias; invite-only rooms need an invite), the room directory,
 * filters, /sync (since tokens, the filter's rooms and timeline limit, `limited` and `prev_batch`, room
 * state on a first sync or a fresh join, invites, a long poll held until an event or the timeout), send
 * and redact with transaction ids idempotent per device, /messages (dir, from, to, limit), state, a room
 * event, joined_members; errors as `{ errcode, error }` (M_UNKNOWN_TOKEN 401, M_FORBIDDEN 403,
 * M_NOT_FOUND 404, M_LIMIT_EXCEEDED 429 with retry_after_ms). Simpler than a homeserver: one server
 * (`localhost`), no federation, no power levels (any member may redact), no E2EE (a room may only say it
 * is encrypted), no lazy loading of members, stream tokens `s<n>` shared by /sync and /messages.
 *
 * Media (spec v1.11 authenticated media): `POST /_matrix/media/v3/upload` (the bytes as the body,
 * Content-Type and `?filename=`; 413 M_TOO_LARGE past `uploadLimit`), `GET /_matrix/client/v1/media/download/
 * {serverName}/{mediaId}[/{fileName}]` and `GET /_matrix/client/v1/media/config` (`m.upload.size`), every
 * one with the access token (a download without it is refused, 401 M_MISSING_TOKEN); counted in `media`.
 */

export interface MatrixEvent {
  event_id: string;
  type: string;
  room_id: string;
  sender: string;
  origin_server_ts: number;
  content: Record<string, any>;
  state_key?: string;
  redacts?: string;
  unsigned?: Record<string, unknown>;
}

/** A file the fake keeps: what an upload gave, or what a test put there as if someone had uploaded it. */
export interface StoredMedia {
  bytes: Buffer;
  contentType: string;
  filename?: string;
  /** Who uploaded it (undefined: put there by the test). */
  uploader?: string;
}

interface Room {
  id: string;
  alias?: string;
  public: boolean;
  membership: Map<string, 'join' | 'invite' | 'leave'>;
}

const HOST = 'localhost';

export class FakeMatrix {
  /** Every request, as `METHOD path` with the path decoded (for assertions on what the relay asked). */
  readonly calls: string[] = [];
  /** The transaction id of every send and redact received, retries included. */
  readonly txnIds: string[] = [];
  /** The filter of every /sync, parsed. */
  readonly syncFilters: any[] = [];
  logins = 0;
  /** Media requests answered: uploads taken, authenticated downloads served, refusals (no token or an unknown one). */
  readonly media = { uploads: 0, downloads: 0, refused: 0, configs: 0 };
  /** The largest upload taken (m.upload.size in the media config); larger ones are refused with 413 M_TOO_LARGE. */
  uploadLimit = 50 * 1024 * 1024;
  /** mediaId → the file. */
  readonly files = new Map<string, StoredMedia>();
  /** Holds the answer to the next send whose content has `url` (a file event) after taking the event: a crash before the relay read it. */
  holdNextFileSend = false;
  /** The answers held (ended by close()). */
  private readonly heldAnswers: ServerResponse[] = [];
  /** The most events one /sync timeline holds, whatever the filter asks (lower it to make `limited` gaps). */
  timelineLimit = 50;
  /** The stream: an event's position is its index + 1; the token `s<n>` stands after the n-th event. */
  private readonly events: MatrixEvent[] = [];
  /** Each event's position in `events` (its index + 1). */
  private readonly positions = new Map<MatrixEvent, number>();
  private readonly rooms = new Map<string, Room>();
  private readonly passwords = new Map<string, string>();
  private readonly names = new Map<string, string | undefined>();
  private readonly tokens = new Map<string, { userId: string; deviceId: string }>();
  private readonly txns = new Map<string, string>();
  private readonly filters = new Map<string, unknown>();
  private readonly waiters = new Set<() => void>();
  /** Events looked at by /sync answers (a count of the fake's own work, which must stay linear in the room's history). */
  looked = 0;
  private rateLimitNext = 0;
  private dropSync = false;
  private counter = 0;
  private http!: Server;

  static async start(): Promise<FakeMatrix> {
    const fake = new FakeMatrix();
    fake.http = createServer((req, res) => void fake.route(req, res));
    await new Promise<void>((ready) => fake.http.listen(0, '127.0.0.1', ready));
    return fake;
  }

  /** What the relay's `homeserver` option takes. */
  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  /** What the fake holds for its clients (the platforms bench reads it each round): its history, the events /sync looked at, long polls waiting now, logins kept. */
  holding(): Record<string, number> {
    return { events: this.events.length, looked: this.looked, syncs_waiting: this.waiters.size, logins: this.tokens.size };
  }

  /** Makes an account (`@localpart:localhost`) with a display name; answers its user id and an access token. */
  addUser(localpart: string, displayname?: string, password?: string): { userId: string; token: string } {
    const userId = `@${localpart}:${HOST}`;
    if (password !== undefined) this.passwords.set(userId, password);
    const token = this.issue(userId, 'FAKEDEVICE');
    this.names.set(userId, displayname);
    return { userId, token };
  }

  /** A room with these members joined; public rooms may be joined by anyone, others on invite. */
  addRoom(local: string, options: { alias?: string; public?: boolean; members?: string[]; encrypted?: boolean } = {}): string {
    const id = `!${local}:${HOST}`;
    this.rooms.set(id, { id, public: options.public ?? true, membership: new Map(), ...(options.alias ? { alias: `#${options.alias}:${HOST}` } : {}) });
    for (const member of options.members ?? []) this.member(id, member, 'join', member);
    if (options.encrypted) this.send(id, options.members![0]!, 'm.room.encryption', { algorithm: 'm.megolm.v1.aes-sha2' }, { state_key: '' });
    return id;
  }

  invite(roomId: string, userId: string, by: string): MatrixEvent {
    return this.member(roomId, userId, 'invite', by);
  }

  /** A person says something: an m.room.message (m.text unless `extra` says otherwise). */
  say(roomId: string, sender: string, body: string, extra: Record<string, unknown> = {}): MatrixEvent {
    return this.send(roomId, sender, 'm.room.message', { msgtype: 'm.text', body, ...extra });
  }

  /** Any event (a reaction, ...). */
  send(roomId: string, sender: string, type: string, content: Record<string, any>, extra: Partial<MatrixEvent> = {}): MatrixEvent {
    const event: MatrixEvent = { event_id: `$ev${++this.counter}_${randomBytes(4).toString('hex')}`, type, room_id: roomId, sender, origin_server_ts: Date.now(), content, ...extra };
    this.events.push(event);
    this.positions.set(event, this.events.length);
    for (const wake of this.waiters) wake();
    return event;
  }

  edit(roomId: string, sender: string, eventId: string, body: string): MatrixEvent {
    return this.say(roomId, sender, `* ${body}`, { 'm.new_content': { msgtype: 'm.text', body }, 'm.relates_to': { rel_type: 'm.replace', event_id: eventId } });
  }

  redact(roomId: string, sender: string, eventId: string): MatrixEvent {
    const target = this.events.find((e) => e.event_id === eventId)!;
    const redaction = this.send(roomId, sender, 'm.room.redaction', { redacts: eventId }, { redacts: eventId });
    target.content = {};
    target.unsigned = { redacted_because: redaction };
    return redaction;
  }

  /** A room's events, oldest first. */
  eventsIn(roomId: string): MatrixEvent[] {
    return this.events.filter((e) => e.room_id === roomId);
  }

  /** Puts a file on the homeserver as if someone uploaded it; answers its mxc:// URI. */
  addMedia(bytes: Buffer, contentType: string, filename?: string): string {
    const mediaId = `m${++this.counter}${randomBytes(6).toString('hex')}`;
    this.files.set(mediaId, { bytes, contentType, ...(filename ? { filename } : {}) });
    return `mxc://${HOST}/${mediaId}`;
  }

  /** The file an mxc:// URI names, if the fake has it. */
  mediaOf(mxc: string): StoredMedia | undefined {
    return this.files.get(mxc.slice(`mxc://${HOST}/`.length));
  }

  membershipOf = (roomId: string, userId: string): string | undefined => this.rooms.get(roomId)?.membership.get(userId);

  /** Logs the user out everywhere: every access token of theirs is refused from now on (M_UNKNOWN_TOKEN). */
  logoutAll(userId: string): void {
    for (const [token, owner] of this.tokens) if (owner.userId === userId) this.tokens.delete(token);
  }

  /** The next `count` sends and redactions answer 429 M_LIMIT_EXCEEDED (with retry_after_ms 50). */
  rateLimit = (count: number): void => void (this.rateLimitNext = count);

  /**
   * The next /sync that has something to say loses its answer: a 502 from the proxy in front, as in an
   * outage. (A cut connection would not do: Node's fetch sends an idempotent GET again by itself.)
   */
  dropNextSyncAnswer = (): void => void (this.dropSync = true);

  async close(): Promise<void> {
    for (const wake of this.waiters) wake();
    for (const res of this.heldAnswers) res.destroy();
    this.http.closeAllConnections();
    await new Promise<void>((done) => this.http.close(() => done()));
  }

  private issue(userId: string, deviceId: string): string {
    const token = `syt_${randomBytes(12).toString('hex')}`;
    this.tokens.set(token, { userId, deviceId });
    return token;
  }

  private member(roomId: string, userId: string, membership: 'join' | 'invite' | 'leave', by: string): MatrixEvent {
    this.rooms.get(roomId)!.membership.set(userId, membership);
    const displayname = this.names.get(userId);
    return this.send(roomId, by, 'm.room.member', { membership, ...(displayname ? { displayname } : {}) }, { state_key: userId });
  }

  /** A long poll waits until an event comes, its time is up, or its client goes. */
  private held(res: ServerResponse, ms: number): Promise<void> {
    return new Promise((wake) => {
      const done = () => (clearTimeout(timer), this.waiters.delete(done), res.off('close', done), wake());
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
      res.once('close', done);
    });
  }

  /** An event's position, kept as it is stored: a scan of the history for it made each /sync quadratic in the history. */
  private pos(event: MatrixEvent): number {
    this.looked += 1;
    return this.positions.get(event)!;
  }

  /** The rooms part of a /sync answer for `userId` after stream position `from` (undefined: a first sync). */
  private syncRooms(userId: string, from: number | undefined, limit: number, only?: Set<string>): { join: Record<string, unknown>; invite: Record<string, unknown>; news: boolean } {
    const join: Record<string, unknown> = {};
    const invite: Record<string, unknown> = {};
    for (const room of this.rooms.values()) {
      if (only && !only.has(room.id)) continue;
      const inRoom = this.eventsIn(room.id);
      this.looked += this.events.length;
      const mine = inRoom.filter((e) => e.type === 'm.room.member' && e.state_key === userId).at(-1);
      if (room.membership.get(userId) === 'invite' && (from === undefined || this.pos(mine!) > from)) {
        invite[room.id] = { invite_state: { events: [{ type: 'm.room.member', state_key: userId, sender: mine!.sender, content: mine!.content }] } };
      }
      if (room.membership.get(userId) !== 'join') continue;
      const news = inRoom.filter((e) => this.pos(e) > (from ?? 0));
      if (from !== undefined && news.length === 0) continue;
      const timeline = limit === 0 ? [] : news.slice(-Math.min(limit, this.timelineLimit));
      const start = timeline[0] ? this.pos(timeline[0]) : this.events.length + 1;
      // The members as the timeline begins, on a first sync or in a room joined in this batch.
      const fresh = from === undefined || this.pos(mine!) > from;
      const state = fresh ? [...new Map(inRoom.filter((e) => e.state_key !== undefined && this.pos(e) < start).map((e) => [e.state_key, e])).values()] : [];
      join[room.id] = { state: { events: state }, timeline: { events: timeline, limited: timeline.length < news.length, prev_batch: `s${start - 1}` } };
    }
    return { join, invite, news: Object.keys(join).length + Object.keys(invite).length > 0 };
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://fake');
    const upload = req.method === 'POST' && url.pathname === '/_matrix/media/v3/upload';
    const raw = upload ? '' : bytes.toString();
    const parts = url.pathname.split('/').map(decodeURIComponent);
    const path = parts.join('/').replace(/^\/_matrix\/client\/(v3|r0)/, '');
    this.calls.push(`${req.method} ${path}`);
    const send = (status: number, value: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    const error = (status: number, errcode: string, message: string, extra: object = {}) => send(status, { errcode, error: message, ...extra });
    const body = raw ? JSON.parse(raw) as Record<string, any> : {};
    const query = (name: string) => url.searchParams.get(name) ?? undefined;
    if (req.method === 'GET' && url.pathname === '/_matrix/client/versions') return send(200, { versions: ['v1.1', 'v1.5', 'v1.11'], unstable_features: {} });
    if (req.method === 'POST' && path === '/login') {
      this.logins += 1;
      const user = String(body.identifier?.user ?? '');
      const userId = user.startsWith('@') ? user : `@${user}:${HOST}`;
      if (body.type !== 'm.login.password' || this.passwords.get(userId) !== body.password) return error(403, 'M_FORBIDDEN', 'Invalid username or password');
      const deviceId = String(body.device_id ?? `DEV${randomBytes(3).toString('hex').toUpperCase()}`);
      return send(200, { user_id: userId, access_token: this.issue(userId, deviceId), device_id: deviceId, home_server: HOST });
    }
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? query('access_token');
    const mediaPath = url.pathname.startsWith('/_matrix/client/v1/media/') || url.pathname.startsWith('/_matrix/media/');
    if (!token) {
      if (mediaPath) this.media.refused += 1;
      return error(401, 'M_MISSING_TOKEN', 'Missing access token');
    }
    const who = this.tokens.get(token);
    if (!who) {
      if (mediaPath) this.media.refused += 1;
      return error(401, 'M_UNKNOWN_TOKEN', 'Invalid access token passed.', { soft_logout: false });
    }
    const me = who.userId;
    let m: RegExpExecArray | null;
    if (upload) {
      if (bytes.length > this.uploadLimit) return error(413, 'M_TOO_LARGE', 'Cannot upload files larger than the limit');
      const mediaId = `u${++this.counter}${randomBytes(6).toString('hex')}`;
      const filename = query('filename');
      this.files.set(mediaId, { bytes, contentType: req.headers['content-type'] ?? 'application/octet-stream', uploader: me, ...(filename ? { filename } : {}) });
      this.media.uploads += 1;
      return send(200, { content_uri: `mxc://${HOST}/${mediaId}` });
    }
    if (req.method === 'GET' && url.pathname === '/_matrix/client/v1/media/config') {
      this.media.configs += 1;
      return send(200, { 'm.upload.size': this.uploadLimit });
    }
    if (req.method === 'GET' && (m = /^\/_matrix\/client\/v1\/media\/download\/([^/]+)\/([^/]+)(\/[^/]+)?$/.exec(url.pathname))) {
      const file = decodeURIComponent(m[1]!) === HOST ? this.files.get(decodeURIComponent(m[2]!)) : undefined;
      if (!file) return error(404, 'M_NOT_FOUND', 'Not found');
      this.media.downloads += 1;
      const name = file.filename ? `; filename*=utf-8''${encodeURIComponent(file.filename)}` : '';
      return void res.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length, 'content-disposition': `attachment${name}` }).end(file.bytes);
    }
    if (req.method === 'GET' && path === '/account/whoami') return send(200, { user_id: me, device_id: who.deviceId, is_guest: false });
    if (req.method === 'POST' && (m = /^\/user\/([^/]+)\/filter$/.exec(path))) {
      const id = String(this.filters.size + 1);
      this.filters.set(id, body);
      return send(200, { filter_id: id });
    }
    if (req.method === 'GET' && (m = /^\/directory\/room\/(.+)$/.exec(path))) {
      const room = [...this.rooms.values()].find((r) => r.alias === m![1]);
      return room ? send(200, { room_id: room.id, servers: [HOST] }) : error(404, 'M_NOT_FOUND', 'Room alias not found');
    }
    if (req.method === 'POST' && (m = /^\/join\/(.+)$/.exec(path))) {
      const room = this.rooms.get(m[1]!) ?? [...this.rooms.values()].find((r) => r.alias === m![1]);
      if (!room) return error(404, 'M_NOT_FOUND', 'No known servers');
      const now = room.membership.get(me);
      if (now !== 'join' && now !== 'invite' && !room.public) return error(403, 'M_FORBIDDEN', 'You are not invited to this room.');
      if (now !== 'join') this.member(room.id, me, 'join', me);
      return send(200, { room_id: room.id });
    }
    if (req.method === 'GET' && path === '/sync') {
      const since = query('since');
      const filterParam = query('filter') ?? '{}';
      const filter = (filterParam.startsWith('{') ? JSON.parse(filterParam) : this.filters.get(filterParam)) as any;
      this.syncFilters.push(filter);
      const limit = Number(filter?.room?.timeline?.limit ?? 10);
      const from = since === undefined ? undefined : Number(since.slice(1));
      const deadline = Date.now() + Number(query('timeout') ?? 0);
      const only = Array.isArray(filter?.room?.rooms) ? new Set<string>(filter.room.rooms) : undefined;
      let rooms = this.syncRooms(me, from, limit, only);
      while (!rooms.news && Date.now() < deadline && this.http.listening && !res.destroyed) {
        await this.held(res, deadline - Date.now());
        rooms = this.syncRooms(me, from, limit, only);
      }
      // A client that gave up (aborted its long poll) is not answered, nor does it take a dropped answer.
      if (res.destroyed) return;
      if (rooms.news && this.dropSync) {
        this.dropSync = false;
        return void res.writeHead(502, { 'content-type': 'text/plain' }).end('Bad Gateway');
      }
      return send(200, { next_batch: `s${this.events.length}`, rooms: { join: rooms.join, invite: rooms.invite, leave: {} } });
    }
    if (!(m = /^\/rooms\/([^/]+)\/(.+)$/.exec(path))) return error(404, 'M_UNRECOGNIZED', 'Unrecognized request');
    const room = this.rooms.get(m[1]!);
    const rest = m[2]!.split('/');
    if (!room) return error(404, 'M_NOT_FOUND', 'Unknown room');
    if (room.membership.get(me) !== 'join') return error(403, 'M_FORBIDDEN', `User ${me} not in room ${room.id}`);
    if (req.method === 'GET' && rest[0] === 'joined_members') {
      const joined = Object.fromEntries([...room.membership].filter(([, state]) => state === 'join').map(([id]) => [id, { display_name: this.names.get(id) ?? null }]));
      return send(200, { joined });
    }
    if (req.method === 'GET' && rest[0] === 'state' && rest.length >= 2) {
      const event = this.eventsIn(room.id).filter((e) => e.type === rest[1] && e.state_key === (rest[2] ?? '')).at(-1);
      return event ? send(200, event.content) : error(404, 'M_NOT_FOUND', 'Event not found');
    }
    if (req.method === 'GET' && rest[0] === 'event') {
      const event = this.eventsIn(room.id).find((e) => e.event_id === rest[1]);
      return event ? send(200, event) : error(404, 'M_NOT_FOUND', 'Event not found');
    }
    if (req.method === 'GET' && rest[0] === 'messages') {
      const backwards = query('dir') === 'b';
      const from = Number(query('from')?.slice(1) ?? (backwards ? this.events.length : 0));
      const to = query('to') === undefined ? undefined : Number(query('to')!.slice(1));
      const limit = Number(query('limit') ?? 10);
      const inRange = this.eventsIn(room.id).filter((e) => backwards ? this.pos(e) <= from && (to === undefined || this.pos(e) > to) : this.pos(e) > from && (to === undefined || this.pos(e) <= to));
      const ordered = backwards ? inRange.reverse() : inRange;
      const chunk = ordered.slice(0, limit);
      const last = chunk.at(-1);
      const end = chunk.length < ordered.length && last ? `s${backwards ? this.pos(last) - 1 : this.pos(last)}` : undefined;
      return send(200, { chunk, start: query('from'), ...(end ? { end } : {}) });
    }
    if (req.method === 'PUT' && (rest[0] === 'send' || rest[0] === 'redact') && rest.length === 3) {
      const txnId = rest[2]!;
      this.txnIds.push(txnId);
      if (this.rateLimitNext > 0) {
        this.rateLimitNext -= 1;
        return error(429, 'M_LIMIT_EXCEEDED', 'Too many requests', { retry_after_ms: 50 });
      }
      // Idempotent per device and request path (since v1.7 the spec scopes a txnId to the device and endpoint).
      const key = `${me} ${who.deviceId} ${path}`;
      const known = this.txns.get(key);
      if (known) return send(200, { event_id: known });
      let event: MatrixEvent;
      if (rest[0] === 'send') event = this.send(room.id, me, rest[1]!, body);
      else {
        if (!this.events.some((e) => e.event_id === rest[1] && e.room_id === room.id)) return error(404, 'M_NOT_FOUND', 'Unknown event');
        event = this.redact(room.id, me, rest[1]!);
      }
      this.txns.set(key, event.event_id);
      if (this.holdNextFileSend && typeof body.url === 'string') {
        // Taken, but the answer never comes: the relay dies (or is stopped) before it knows.
        this.holdNextFileSend = false;
        this.heldAnswers.push(res);
        return;
      }
      return send(200, { event_id: event.event_id });
    }
    return error(404, 'M_UNRECOGNIZED', 'Unrecognized request');
  }
}
