import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * A local Rocket.Chat written from its API documentation (REST /api/v1 and the realtime DDP API), close
 * enough that the relay's client cannot tell: X-User-Id + X-Auth-Token (401 `You must be logged in to do
 * this.` otherwise), login, me, rooms.info by id or name, permissions.listAll, channels.history and
 * groups.history (newest first, `oldest`/`latest`/`inclusive`/`count`/`offset`), chat.sendMessage with a client's
 * `_id` (a second message of one id refused as MongoDB's duplicate key error), chat.getMessage,
 * chat.update, chat.delete, and `alias`/`avatar`/`emoji` only with message-impersonate; the websocket's
 * DDP: `connect` → `connected`, `method login` (resume) → `result`, `sub` → `ready`, `changed` frames
 * of `stream-room-messages` (dates as EJSON `$date`) and `stream-notify-room` `<rid>/deleteMessage`,
 * ping/pong. The REST limiter answers 429 `error-too-many-requests` with X-RateLimit-* (Reset in ms
 * since the epoch). Simpler than Rocket.Chat: open rooms everybody may read and write, no message
 * history copies, no rate limit but the one asked for, ids from a counter (still 17 characters).
 * Files: rooms.media/:rid (multipart `file`, kept as a temporary upload, refused past
 * FileUpload_MaxFileSize), rooms.mediaConfirm/:rid/:fileId (the message with `file`, `files` and
 * `attachments` as sendFileMessage makes it; its body checked like Rocket.Chat's `check`: an unknown
 * field such as `_id` is a Match error), settings.public (FileUpload_MaxFileSize), and the bytes at
 * /file-upload/:id/:name only with X-User-Id + X-Auth-Token (403 otherwise).
 */

export interface FakeUser {
  _id: string;
  username: string;
  name?: string;
  roles: string[];
}

export interface FakeAttachment {
  title?: string;
  type?: string;
  title_link?: string;
  title_link_download?: boolean;
  image_url?: string;
  image_type?: string;
  image_size?: number;
  size?: number;
  description?: string;
  fileId?: string;
}

export interface FakeUpload {
  _id: string;
  name: string;
  type: string;
  size: number;
  bytes: Buffer;
  rid: string;
  userId: string;
  confirmed: boolean;
}

export interface FakeMessage {
  _id: string;
  rid: string;
  msg: string;
  ts: number;
  u: { _id: string; username: string; name?: string };
  tmid?: string;
  editedAt?: number;
  t?: string;
  alias?: string;
  avatar?: string;
  emoji?: string;
  bot?: { i: string };
  deleted?: boolean;
  file?: { _id: string; name: string; type: string; size: number };
  files?: Array<{ _id: string; name: string; type: string; size: number }>;
  attachments?: FakeAttachment[];
}

interface Connection {
  socket: WebSocket;
  userId?: string;
  subs: Map<string, string>;
}

export class FakeRocketchat {
  readonly users = new Map<string, FakeUser>();
  readonly rooms = new Map<string, { _id: string; t: 'c' | 'p'; name: string }>();
  readonly messages: FakeMessage[] = [];
  /** Every REST call, as `METHOD path` (for assertions on what the relay asked). */
  readonly calls: string[] = [];
  /** The bodies of every chat.sendMessage, in order. */
  readonly sends: Array<Record<string, any>> = [];
  /** Realtime sessions whose login succeeded. */
  logins = 0;
  /** Uploads by id (temporary until a mediaConfirm sends them). */
  readonly uploads = new Map<string, FakeUpload>();
  /** The bodies of every rooms.mediaConfirm, in order. */
  readonly confirms: Array<Record<string, unknown>> = [];
  /** rooms.media calls that kept a file; file downloads served; downloads refused (no or wrong credentials). */
  mediaUploads = 0;
  downloads = 0;
  refusedDownloads = 0;
  /** The FileUpload_MaxFileSize setting (bytes; Rocket.Chat's default is 100 MB). */
  maxFileSize = 104_857_600;
  /** The roles holding message-impersonate (Rocket.Chat's default: bot and app). */
  impersonateRoles = ['bot', 'app'];
  /** "Show deleted status": a deletion keeps the message as `t: 'rm'` (sent on the room stream) instead of the deleteMessage event. */
  showDeleted = false;
  private readonly tokens = new Map<string, string>();
  private readonly passwords = new Map<string, string>();
  private readonly connections = new Set<Connection>();
  private nextId = 0;
  private rateLimitNext = 0;
  private loseAnswers = 0;
  private stallAnswers = 0;
  private failConfirms = 0;
  private http!: Server;
  private wss!: WebSocketServer;
  bot!: FakeUser;
  botToken!: string;

  static async start(): Promise<FakeRocketchat> {
    const fake = new FakeRocketchat();
    ({ user: fake.bot, token: fake.botToken } = fake.addUser('groupwire', { roles: ['user', 'bot'], password: 'bot-password' }));
    fake.http = createServer((req, res) => void fake.route(req, res));
    fake.wss = new WebSocketServer({ noServer: true });
    fake.http.on('upgrade', (req, socket, head) => {
      if (!req.url?.startsWith('/websocket')) return socket.destroy();
      fake.wss.handleUpgrade(req, socket, head, (ws) => fake.connected(ws));
    });
    await new Promise<void>((ready) => fake.http.listen(0, '127.0.0.1', ready));
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  /** Realtime connections logged in now. */
  get sockets(): number {
    return [...this.connections].filter((c) => c.userId !== undefined).length;
  }

  /** What the fake holds for its clients (the platforms bench reads it each round): realtime connections open, those logged in. */
  holding(): Record<string, number> {
    return { connections: this.connections.size, live: this.sockets };
  }

  addUser(username: string, extra: { name?: string; roles?: string[]; password?: string } = {}): { user: FakeUser; token: string } {
    const user: FakeUser = { _id: this.id(), username, roles: extra.roles ?? ['user'], ...(extra.name ? { name: extra.name } : {}) };
    const token = randomBytes(32).toString('base64url');
    this.users.set(user._id, user);
    this.tokens.set(token, user._id);
    if (extra.password) this.passwords.set(username, extra.password);
    return { user, token };
  }

  addRoom(name: string, type: 'c' | 'p' = 'c'): string {
    const room = { _id: this.id(), t: type, name };
    this.rooms.set(room._id, room);
    return room._id;
  }

  /** Revokes a token (the user's personal access token removed). */
  revoke(token: string): void {
    this.tokens.delete(token);
  }

  /** The next `count` chat.sendMessage calls answer 429. */
  rateLimit(count: number): void {
    this.rateLimitNext = count;
  }

  /** The next `count` messages are made, but their answers are lost (the connection is cut). */
  loseAnswer(count: number): void {
    this.loseAnswers = count;
  }

  /** The next `count` messages are made, but never answered (the caller kills the relay meanwhile). */
  stallAnswer(count: number): void {
    this.stallAnswers = count;
  }

  /** The next `count` rooms.mediaConfirm calls fail with a 500 before making anything. */
  failConfirm(count: number): void {
    this.failConfirms = count;
  }

  /** Closes every realtime connection abruptly. */
  dropConnections(): void {
    for (const connection of this.connections) connection.socket.terminate();
  }

  /** Someone says something in a room (in a thread when `tmid` is given). */
  say(roomId: string, user: FakeUser, msg: string, extra: { tmid?: string; t?: string; alias?: string; bot?: boolean; attachments?: FakeAttachment[] } = {}): FakeMessage {
    const message = this.store({ _id: this.id(), rid: roomId, msg, user, ...(extra.tmid ? { tmid: extra.tmid } : {}), ...(extra.t ? { t: extra.t } : {}),
      ...(extra.alias ? { alias: extra.alias } : {}), ...(extra.bot ? { bot: { i: 'integration' } } : {}) });
    if (extra.attachments) message.attachments = extra.attachments;
    this.streamMessage(message);
    return message;
  }

  /** Someone sends a file (the web app's upload and confirm): the message with the file's fields. */
  sayFile(roomId: string, user: FakeUser, name: string, type: string, bytes: Buffer, msg = ''): FakeMessage {
    const upload = this.keep(roomId, user._id, name, type, bytes);
    const message = this.store({ _id: this.id(), rid: roomId, msg, user });
    this.attach(message, upload);
    this.streamMessage(message);
    return message;
  }

  private keep(rid: string, userId: string, name: string, type: string, bytes: Buffer): FakeUpload {
    const upload: FakeUpload = { _id: this.id(), name, type, size: bytes.length, bytes, rid, userId, confirmed: false };
    this.uploads.set(upload._id, upload);
    return upload;
  }

  /** The file fields sendFileMessage gives a message (an image's `image_url` is the file itself here: no thumbnails). */
  private attach(message: FakeMessage, upload: FakeUpload, description?: string): void {
    upload.confirmed = true;
    const link = `/file-upload/${upload._id}/${encodeURI(upload.name)}`;
    const file = { _id: upload._id, name: upload.name, type: upload.type, size: upload.size };
    message.file = file;
    message.files = [file];
    const base = { title: upload.name, type: 'file', title_link: link, title_link_download: true, fileId: upload._id, ...(description ? { description } : {}) };
    message.attachments = [upload.type.startsWith('image/') ? { ...base, image_url: link, image_type: upload.type, image_size: upload.size } : { ...base, size: upload.size }];
  }

  edit(messageId: string, msg: string): void {
    const message = this.messages.find((m) => m._id === messageId)!;
    message.msg = msg;
    message.editedAt = Date.now();
    this.streamMessage(message);
  }

  /** A reaction: the message goes out on the room stream again, unchanged but for its reactions. */
  react(messageId: string): void {
    this.streamMessage(this.messages.find((m) => m._id === messageId)!);
  }

  remove(messageId: string): void {
    const message = this.messages.find((m) => m._id === messageId)!;
    if (this.showDeleted) {
      Object.assign(message, { t: 'rm', msg: '' });
      this.streamMessage(message);
      return;
    }
    message.deleted = true;
    this.stream('stream-notify-room', `${message.rid}/deleteMessage`, { _id: message._id });
  }

  /** What is in a room (not deleted), oldest first. */
  inRoom(roomId: string): FakeMessage[] {
    return this.messages.filter((m) => m.rid === roomId && !m.deleted && m.t !== 'rm');
  }

  async close(): Promise<void> {
    for (const connection of this.connections) connection.socket.terminate();
    await new Promise<void>((done) => this.wss.close(() => done()));
    this.http.closeAllConnections();
    await new Promise<void>((done) => this.http.close(() => done()));
  }

  private id(): string {
    this.nextId += 1;
    return `${this.nextId.toString(36)}`.padStart(17, 'R');
  }

  private store(fields: { _id: string; rid: string; msg: string; user: FakeUser; tmid?: string; t?: string; alias?: string; avatar?: string; emoji?: string; bot?: { i: string } }): FakeMessage {
    const { user, ...rest } = fields;
    const message: FakeMessage = { ...rest, ts: Date.now(), u: { _id: user._id, username: user.username, ...(user.name ? { name: user.name } : {}) } };
    this.messages.push(message);
    return message;
  }

  /** A message as REST shows it (ISO dates) or as DDP does (EJSON `$date`). */
  private shown(message: FakeMessage, ddp: boolean): Record<string, unknown> {
    const { deleted: _deleted, ts, editedAt, ...rest } = message;
    const date = (ms: number) => (ddp ? { $date: ms } : new Date(ms).toISOString());
    return { ...rest, ts: date(ts), _updatedAt: date(editedAt ?? ts), ...(editedAt !== undefined ? { editedAt: date(editedAt), editedBy: { _id: message.u._id, username: message.u.username } } : {}) };
  }

  private streamMessage(message: FakeMessage): void {
    this.stream('stream-room-messages', message.rid, message);
  }

  private stream(collection: string, eventName: string, arg: FakeMessage | { _id: string }): void {
    for (const connection of this.connections) {
      if (connection.userId === undefined || connection.subs.get(`${collection} ${eventName}`) === undefined) continue;
      const shown = 'rid' in arg ? this.shown(arg, true) : arg;
      connection.socket.send(JSON.stringify({ msg: 'changed', collection, id: 'id', fields: { eventName, args: [shown] } }));
    }
  }

  // --- realtime (DDP) ---

  private connected(socket: WebSocket): void {
    const connection: Connection = { socket, subs: new Map() };
    this.connections.add(connection);
    socket.send(JSON.stringify({ server_id: '0' }));
    socket.on('message', (raw) => {
      const frame = JSON.parse(String(raw)) as { msg: string; id?: string; method?: string; name?: string; params?: any[] };
      const send = (value: unknown) => socket.send(JSON.stringify(value));
      if (frame.msg === 'connect') return send({ msg: 'connected', session: randomBytes(9).toString('hex') });
      if (frame.msg === 'ping') return send({ msg: 'pong', ...(frame.id ? { id: frame.id } : {}) });
      if (frame.msg === 'method' && frame.method === 'login') {
        const userId = this.tokens.get(String(frame.params?.[0]?.resume ?? ''));
        if (userId === undefined) {
          return send({ msg: 'result', id: frame.id, error: { isClientSafe: true, error: 403, reason: 'You\'ve been logged out by the server. Please log in again.', message: 'You\'ve been logged out by the server. Please log in again. [403]', errorType: 'Meteor.Error' } });
        }
        connection.userId = userId;
        this.logins += 1;
        return send({ msg: 'result', id: frame.id, result: { id: userId, token: frame.params![0].resume, tokenExpires: { $date: Date.now() + 86_400_000 }, type: 'resume' } });
      }
      if (frame.msg === 'sub') {
        if (connection.userId === undefined) return send({ msg: 'nosub', id: frame.id, error: { error: 'not-authorized', reason: 'Not authorized' } });
        const param = String(frame.params?.[0] ?? '');
        const roomId = param.split('/')[0]!;
        if (!this.rooms.has(roomId)) return send({ msg: 'nosub', id: frame.id, error: { error: 'not-allowed', reason: 'Not allowed' } });
        connection.subs.set(`${frame.name} ${param}`, frame.id!);
        return send({ msg: 'ready', subs: [frame.id] });
      }
      if (frame.msg === 'method') return send({ msg: 'result', id: frame.id, error: { error: 404, reason: `Method '${frame.method}' not found` } });
    });
    socket.on('close', () => this.connections.delete(connection));
  }

  // --- REST ---

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await new Promise<Buffer>((done) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => done(Buffer.concat(chunks)));
    });
    const body = String(req.headers['content-type'] ?? '').startsWith('multipart/') ? '' : raw.toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname.startsWith('/file-upload/')) return this.serveFile(req, res, url.pathname);
    const path = url.pathname.replace(/^\/api\/v1\//, '');
    this.calls.push(`${req.method} ${path}`);
    const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      res.end(JSON.stringify(value));
    };
    const fail = (error: string, errorType?: string) => send(400, { success: false, error, ...(errorType ? { errorType } : {}) });
    const json = () => JSON.parse(body || '{}') as Record<string, any>;
    const query = url.searchParams;
    if (req.method === 'POST' && path === 'login') {
      const given = json();
      const user = [...this.users.values()].find((u) => u.username === given.user);
      if (!user || this.passwords.get(user.username) !== given.password) return send(401, { status: 'error', error: 'Unauthorized', message: 'Unauthorized' });
      const token = randomBytes(32).toString('base64url');
      this.tokens.set(token, user._id);
      return send(200, { status: 'success', data: { userId: user._id, authToken: token, me: user } });
    }
    const userId = this.tokens.get(String(req.headers['x-auth-token'] ?? ''));
    if (userId === undefined || userId !== req.headers['x-user-id']) return send(401, { status: 'error', message: 'You must be logged in to do this.' });
    const me = this.users.get(userId)!;

    if (req.method === 'GET' && path === 'me') return send(200, { ...me, success: true });
    if (req.method === 'GET' && path === 'permissions.listAll') {
      return send(200, { update: [{ _id: 'message-impersonate', roles: this.impersonateRoles }, { _id: 'delete-message', roles: ['admin', 'owner', 'moderator'] }], remove: [], success: true });
    }
    if (req.method === 'GET' && path === 'rooms.info') {
      const room = query.has('roomId') ? this.rooms.get(query.get('roomId')!) : [...this.rooms.values()].find((r) => r.name === query.get('roomName'));
      return room ? send(200, { room, success: true }) : fail('The required "roomId" or "roomName" param provided does not match any channel [error-room-not-found]', 'error-room-not-found');
    }
    if (req.method === 'GET' && (path === 'channels.history' || path === 'groups.history')) {
      const room = this.rooms.get(query.get('roomId') ?? '');
      if (!room || (room.t === 'p') !== (path === 'groups.history')) return fail('The required "roomId" or "roomName" param provided does not match any channel [error-room-not-found]', 'error-room-not-found');
      const inclusive = query.get('inclusive') === 'true';
      const oldest = query.has('oldest') ? Date.parse(query.get('oldest')!) : -Infinity;
      const latest = query.has('latest') ? Date.parse(query.get('latest')!) : Infinity;
      const count = Number(query.get('count') ?? 20);
      const offset = Number(query.get('offset') ?? 0);
      const found = this.messages.filter((m) => m.rid === room._id && !m.deleted
        && (inclusive ? m.ts >= oldest && m.ts <= latest : m.ts > oldest && m.ts < latest)).toReversed().slice(offset, offset + count);
      return send(200, { messages: found.map((m) => this.shown(m, false)), success: true });
    }
    if (req.method === 'GET' && path === 'chat.getMessage') {
      const message = this.messages.find((m) => m._id === query.get('msgId') && !m.deleted);
      return message ? send(200, { message: this.shown(message, false), success: true }) : fail('Message not found', 'error-message-not-found');
    }
    if (req.method === 'POST' && path === 'chat.sendMessage') return this.sendMessage(req, res, send, fail, me, json());
    if (req.method === 'GET' && path === 'settings.public') {
      const wanted = query.get('_id')?.split(',');
      const settings = [{ _id: 'FileUpload_MaxFileSize', value: this.maxFileSize }, { _id: 'FileUpload_Enabled', value: true }].filter((setting) => !wanted || wanted.includes(setting._id));
      return send(200, { settings, count: settings.length, offset: 0, total: settings.length, success: true });
    }
    const media = /^rooms\.media\/([^/]+)$/.exec(path);
    if (req.method === 'POST' && media) return this.media(req, raw, media[1]!, me, send, fail);
    const confirm = /^rooms\.mediaConfirm\/([^/]+)\/([^/]+)$/.exec(path);
    if (req.method === 'POST' && confirm) return this.mediaConfirm(req, confirm[1]!, confirm[2]!, me, json(), send, fail);
    if (req.method === 'POST' && (path === 'chat.update' || path === 'chat.delete')) {
      const given = json();
      const message = this.messages.find((m) => m._id === given.msgId && m.rid === given.roomId && !m.deleted);
      if (!message) return fail('No message found with the id of "x".', 'error-message-not-found');
      if (message.u._id !== me._id) return fail('Not allowed', 'error-action-not-allowed');
      if (path === 'chat.update') {
        this.edit(message._id, String(given.text ?? ''));
        return send(200, { message: this.shown(message, false), success: true });
      }
      this.remove(message._id);
      return send(200, { _id: message._id, ts: Date.now(), message: this.shown(message, false), success: true });
    }
    return send(404, { success: false, error: 'Not found' });
  }

  /** GET /file-upload/:id/:name: the bytes, for a user signed in by X-User-Id + X-Auth-Token only. */
  private serveFile(req: IncomingMessage, res: ServerResponse, pathname: string): void {
    const userId = this.tokens.get(String(req.headers['x-auth-token'] ?? ''));
    const upload = this.uploads.get(pathname.split('/')[2] ?? '');
    if (userId === undefined || userId !== req.headers['x-user-id']) {
      this.refusedDownloads += 1;
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end('Forbidden');
      return;
    }
    if (!upload) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('Not found');
      return;
    }
    this.downloads += 1;
    res.writeHead(200, { 'content-type': upload.type, 'content-length': upload.bytes.length });
    res.end(upload.bytes);
  }

  /** rooms.media/:rid: the multipart `file` kept as a temporary upload (FileUpload_MaxFileSize enforced). */
  private async media(req: IncomingMessage, raw: Buffer, rid: string, me: FakeUser, send: (status: number, value: unknown) => void, fail: (error: string, errorType?: string) => void): Promise<void> {
    if (!this.rooms.has(rid)) return send(403, { success: false, error: 'unauthorized' });
    const form = await new Response(raw, { headers: { 'content-type': String(req.headers['content-type']) } }).formData();
    const file = form.get('file');
    if (!file || typeof file === 'string') return fail('[invalid-field]', 'invalid-field');
    if (this.maxFileSize >= 0 && file.size > this.maxFileSize) return fail(`File size exceeds allowed size of ${this.maxFileSize} bytes [error-file-too-large]`, 'error-file-too-large');
    const upload = this.keep(rid, me._id, file.name, file.type || 'application/octet-stream', Buffer.from(await file.arrayBuffer()));
    this.mediaUploads += 1;
    send(200, { file: { _id: upload._id, url: `/file-upload/${upload._id}/${encodeURI(upload.name)}` }, success: true });
  }

  /** rooms.mediaConfirm/:rid/:fileId: the file's message (sendFileMessage's fields; its body checked as Rocket.Chat's `check` does). */
  private mediaConfirm(
    req: IncomingMessage, rid: string, fileId: string, me: FakeUser, given: Record<string, any>,
    send: (status: number, value: unknown) => void, fail: (error: string, errorType?: string) => void,
  ): void {
    this.confirms.push(given);
    if (this.failConfirms > 0) {
      this.failConfirms -= 1;
      return send(500, { success: false, error: 'Internal server error' });
    }
    const allowed = ['avatar', 'emoji', 'alias', 'groupable', 'msg', 'tmid', 'customFields', 't', 'content', 'description'];
    const unknown = Object.keys(given).find((key) => !allowed.includes(key));
    if (unknown !== undefined) return fail(`Match error: Unknown key in field ${unknown}`);
    const upload = this.uploads.get(fileId);
    if (!upload || upload.rid !== rid || upload.userId !== me._id) return fail('invalid-file', 'invalid-file');
    if ((given.alias !== undefined || given.avatar !== undefined || given.emoji !== undefined) && !me.roles.some((role) => this.impersonateRoles.includes(role))) {
      return fail('Not enough permission [error-action-not-allowed]', 'error-action-not-allowed');
    }
    if (given.tmid !== undefined && !this.messages.some((m) => m._id === given.tmid && m.rid === rid)) return fail('Invalid thread', 'error-invalid-message');
    const message = this.store({
      _id: this.id(), rid, msg: String(given.msg ?? ''), user: me,
      ...(given.tmid ? { tmid: given.tmid } : {}), ...(given.alias ? { alias: given.alias } : {}), ...(given.avatar ? { avatar: given.avatar } : {}), ...(given.emoji ? { emoji: given.emoji } : {}),
    });
    this.attach(message, upload, typeof given.description === 'string' ? given.description : undefined);
    this.streamMessage(message);
    if (this.stallAnswers > 0) {
      this.stallAnswers -= 1;
      return;
    }
    if (this.loseAnswers > 0) {
      this.loseAnswers -= 1;
      req.socket.destroy();
      return;
    }
    send(200, { message: this.shown(message, false), success: true });
  }

  private sendMessage(
    req: IncomingMessage, res: ServerResponse, send: (status: number, value: unknown, headers?: Record<string, string>) => void,
    fail: (error: string, errorType?: string) => void, me: FakeUser, json: Record<string, any>,
  ): void {
    if (this.rateLimitNext > 0) {
      this.rateLimitNext -= 1;
      return send(429, { success: false, error: 'Error, too many requests. Please slow down. You must wait 1 seconds before trying this endpoint again. [error-too-many-requests]' }, {
        'X-RateLimit-Limit': '5', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(Date.now() + 300),
      });
    }
    const given = (json.message ?? {}) as Record<string, any>;
    this.sends.push(given);
    const room = this.rooms.get(String(given.rid ?? ''));
    if (!room) return fail('error-invalid-room', 'error-invalid-room');
    if ((given.alias !== undefined || given.avatar !== undefined || given.emoji !== undefined) && !me.roles.some((role) => this.impersonateRoles.includes(role))) {
      return fail('Not enough permission [error-action-not-allowed]', 'error-action-not-allowed');
    }
    if (given._id !== undefined && this.messages.some((m) => m._id === given._id)) {
      return fail(`E11000 duplicate key error collection: rocketchat.rocketchat_message index: _id_ dup key: { _id: "${given._id}" }`);
    }
    if (given.tmid !== undefined && !this.messages.some((m) => m._id === given.tmid && m.rid === room._id)) return fail('Invalid thread', 'error-invalid-message');
    const message = this.store({
      _id: typeof given._id === 'string' ? given._id : this.id(), rid: room._id, msg: String(given.msg ?? ''), user: me,
      ...(given.tmid ? { tmid: given.tmid } : {}), ...(given.alias ? { alias: given.alias } : {}), ...(given.avatar ? { avatar: given.avatar } : {}), ...(given.emoji ? { emoji: given.emoji } : {}),
    });
    this.streamMessage(message);
    if (this.loseAnswers > 0) {
      this.loseAnswers -= 1;
      req.socket.destroy();
      return;
    }
    if (this.stallAnswers > 0) {
      this.stallAnswers -= 1;
      return;
    }
    send(200, { message: this.shown(message, false), success: true });
  }
}
