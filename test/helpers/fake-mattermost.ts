import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * A local Mattermost written from its API reference (REST v4 and the websocket), close enough that the
 * official @mattermost/client's Client4 and the relay's websocket cannot tell: Bearer tokens (401 with
 * the server's JSON error for a bad one), users/me and users/{id}, teams/name/{team}/channels/name/{channel},
 * config/client?format=old, posts (create with `pending_post_id` deduplication, patch, update, delete, get),
 * channels/{id}/posts by page and `since`; the websocket's authentication_challenge, `hello`, `posted`
 * (the post as a JSON string in `data.post`), `post_edited`, `post_deleted`, numbered by `seq` from 0,
 * and ping. Files: POST /files (multipart: channel_id and files; 413 over MaxFileSize, 501 with attachments
 * off), GET /files/{id} (the bytes, counted; without a token refused like every call) and /files/{id}/info,
 * posts with `file_ids` (the uploader's unattached files, 10 at most) and their `metadata.files`.
 * Rate limits answer 429 `limit exceeded` with X-RateLimit-* and Retry-After, as the server's
 * limiter does. Simpler than Mattermost: one team, open channels everybody may read and post in, no
 * websocket resumption (every connection is a new session, as after a server restart), `since` answers
 * every post changed after it (no 1,000 limit), ids from a counter (still 26 lowercase characters).
 */

export interface FakeUser {
  id: string;
  username: string;
  nickname?: string;
  first_name?: string;
  last_name?: string;
  is_bot?: boolean;
}

export interface FakePost {
  id: string;
  create_at: number;
  update_at: number;
  edit_at: number;
  delete_at: number;
  user_id: string;
  channel_id: string;
  root_id: string;
  original_id: string;
  message: string;
  type: string;
  props: Record<string, unknown>;
  hashtags: string;
  pending_post_id: string;
  metadata: Record<string, unknown>;
  file_ids?: string[];
}

/** A file the fake keeps (FileInfo, and its bytes). */
export interface FakeFile {
  id: string;
  user_id: string;
  channel_id: string;
  post_id: string;
  name: string;
  extension: string;
  mime_type: string;
  size: number;
  create_at: number;
  bytes: Buffer;
}

interface Connection {
  socket: WebSocket;
  userId?: string;
  seq: number;
}

const TEAM = { id: 'teamaaaaaaaaaaaaaaaaaaaaaa', name: 'acme', display_name: 'Acme' };

export class FakeMattermost {
  readonly users = new Map<string, FakeUser>();
  readonly channels = new Map<string, { id: string; team_id: string; name: string; display_name: string; type: 'O' }>();
  readonly posts: FakePost[] = [];
  /** Every REST call, as `METHOD path` (for assertions on what the relay asked). */
  readonly calls: string[] = [];
  /** Websocket sessions begun (each `hello` sent). */
  hellos = 0;
  /** The bodies of every POST /posts, in order. */
  readonly creates: Array<Record<string, unknown>> = [];
  /** The server's "Enable integrations to override usernames" (System Console → Integrations). */
  overrideUsernames = true;
  /** The server's MaxFileSize and EnableFileAttachments (System Console → File Storage), as its client config tells them. */
  maxFileSize = 104_857_600;
  fileAttachments = true;
  /** Every file uploaded, by id. */
  readonly files = new Map<string, FakeFile>();
  /** Uploads taken (POST /files), downloads of bytes (GET /files/{id}), and calls refused for want of a token. */
  uploads = 0;
  downloads = 0;
  refused = 0;
  /** How long a `pending_post_id` is remembered (the server's 30 s; 0 makes every retry rely on the relay's history look-up). */
  pendingTtlMs = 30_000;
  private readonly tokens = new Map<string, string>();
  private readonly pending = new Map<string, { post: FakePost; at: number }>();
  private readonly connections = new Set<Connection>();
  /** Events sent on websockets, one a connection an event. */
  private framesSent = 0;
  private nextId = 0;
  private rateLimitNext = 0;
  private loseAnswers = 0;
  private stallAnswers = 0;
  private stallUploads = 0;
  private stallUploadsAfter = 0;
  private skipSeqNext = false;
  private http!: Server;
  private wss!: WebSocketServer;
  /** The bot account the relay signs in as, and its token. */
  bot!: FakeUser;
  botToken!: string;

  static async start(): Promise<FakeMattermost> {
    const fake = new FakeMattermost();
    ({ user: fake.bot, token: fake.botToken } = fake.addUser('groupwire', { is_bot: true }));
    fake.http = createServer((req, res) => void fake.route(req, res));
    fake.wss = new WebSocketServer({ noServer: true });
    fake.http.on('upgrade', (req, socket, head) => {
      if (!req.url?.startsWith('/api/v4/websocket')) return socket.destroy();
      fake.wss.handleUpgrade(req, socket, head, (ws) => fake.connected(ws));
    });
    await new Promise<void>((ready) => fake.http.listen(0, '127.0.0.1', ready));
    return fake;
  }

  /** What the relay's `server_url` takes. */
  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  /** Authenticated websocket connections open now. */
  get sockets(): number {
    return [...this.connections].filter((c) => c.userId !== undefined).length;
  }

  /** What the fake holds for its clients (the platforms bench reads it each round): websockets open, those logged in, events sent on them in all. */
  holding(): Record<string, number> {
    return { connections: this.connections.size, live: this.sockets, frames: this.framesSent };
  }

  addUser(username: string, extra: Omit<FakeUser, 'id' | 'username'> = {}): { user: FakeUser; token: string } {
    const user: FakeUser = { id: this.id(), username, ...extra };
    const token = randomBytes(13).toString('hex');
    this.users.set(user.id, user);
    this.tokens.set(token, user.id);
    return { user, token };
  }

  addChannel(name: string): string {
    const channel = { id: this.id(), team_id: TEAM.id, name, display_name: name, type: 'O' as const };
    this.channels.set(channel.id, channel);
    return channel.id;
  }

  /** The next `count` creates of posts answer 429 (the limiter's plain-text answer and headers). */
  rateLimit(count: number): void {
    this.rateLimitNext = count;
  }

  /** The next `count` posts are made, but their answers are lost (the connection is cut). */
  loseAnswer(count: number): void {
    this.loseAnswers = count;
  }

  /** After `skip` more uploads, the next `count` are kept but never answered (the caller kills the relay meanwhile). */
  stallUpload(count: number, skip = 0): void {
    this.stallUploads = count;
    this.stallUploadsAfter = skip;
  }

  /** The next `count` posts are made, but never answered (the caller kills the relay meanwhile). */
  stallAnswer(count: number): void {
    this.stallAnswers = count;
  }

  /** Closes every websocket connection abruptly: the relay connects again and reads back by REST. */
  dropConnections(): void {
    for (const connection of this.connections) connection.socket.terminate();
  }

  /** The next event skips a sequence number, as when the server lost one on the way. */
  skipSeq(): void {
    this.skipSeqNext = true;
  }

  /** Someone posts in a channel (a reply when `root_id` is given; `type: 'me'` for /me). */
  say(channelId: string, user: FakeUser, message: string, extra: { root_id?: string; type?: string; props?: Record<string, unknown> } = {}): FakePost {
    const post = this.store(channelId, user, message, extra.root_id ?? '', extra.props ?? {}, extra.type ?? '');
    this.broadcastPosted(post);
    return post;
  }

  /** Someone posts files (uploaded first, as the webapp does) with a message; `metadata` adds to what the server says of the post. */
  sayFiles(channelId: string, user: FakeUser, message: string, files: Array<{ name: string; mime_type: string; bytes: Buffer }>, metadata: Record<string, unknown> = {}): FakePost {
    const ids = files.map((file) => this.keepFile(user.id, channelId, file.name, file.mime_type, file.bytes).id);
    const post = this.store(channelId, user, message, '', {}, '', ids);
    post.metadata = { ...post.metadata, ...metadata };
    this.broadcastPosted(post);
    return post;
  }

  edit(postId: string, message: string): void {
    const post = this.posts.find((p) => p.id === postId)!;
    post.message = message;
    post.edit_at = post.update_at = this.now();
    this.broadcast('post_edited', { post: JSON.stringify(post) }, post.channel_id);
  }

  /** Pins a post: the server sends post_edited, with edit_at as it was (the writer changed nothing). */
  pin(postId: string): void {
    const post = this.posts.find((p) => p.id === postId)!;
    post.update_at = this.now();
    this.broadcast('post_edited', { post: JSON.stringify({ ...post, is_pinned: true }) }, post.channel_id);
  }

  remove(postId: string, by?: string): void {
    const post = this.posts.find((p) => p.id === postId)!;
    post.delete_at = post.update_at = this.now();
    this.broadcast('post_deleted', { post: JSON.stringify(post), delete_by: by ?? post.user_id }, post.channel_id);
  }

  /** What is in a channel (not deleted), oldest first. */
  inChannel(channelId: string): FakePost[] {
    return this.posts.filter((p) => p.channel_id === channelId && p.delete_at === 0);
  }

  async close(): Promise<void> {
    for (const connection of this.connections) connection.socket.terminate();
    await new Promise<void>((done) => this.wss.close(() => done()));
    this.http.closeAllConnections();
    await new Promise<void>((done) => this.http.close(() => done()));
  }

  private id(): string {
    this.nextId += 1;
    return `${this.nextId.toString(36)}`.padStart(26, 'x');
  }

  private now(): number {
    return Date.now();
  }

  private store(channelId: string, user: FakeUser, message: string, rootId: string, props: Record<string, unknown>, type = '', fileIds: string[] = []): FakePost {
    const now = this.now();
    const post: FakePost = {
      id: this.id(), create_at: now, update_at: now, edit_at: 0, delete_at: 0, user_id: user.id, channel_id: channelId, root_id: rootId, original_id: '',
      message, type, props: { ...props, ...(user.is_bot ? { from_bot: 'true' } : {}) }, hashtags: '', pending_post_id: '', metadata: {},
    };
    if (fileIds.length > 0) {
      post.file_ids = fileIds;
      for (const id of fileIds) this.files.get(id)!.post_id = post.id;
      post.metadata = { files: fileIds.map((id) => this.infoOf(this.files.get(id)!)) };
    }
    this.posts.push(post);
    return post;
  }

  private keepFile(userId: string, channelId: string, name: string, mimeType: string, bytes: Buffer): FakeFile {
    const dot = name.lastIndexOf('.');
    const file: FakeFile = {
      id: this.id(), user_id: userId, channel_id: channelId, post_id: '', name, extension: dot >= 0 ? name.slice(dot + 1) : '',
      mime_type: mimeType, size: bytes.length, create_at: this.now(), bytes,
    };
    this.files.set(file.id, file);
    return file;
  }

  /** A FileInfo as the server gives it (no bytes). */
  private infoOf(file: FakeFile): Omit<FakeFile, 'bytes'> & { delete_at: number; update_at: number } {
    const { bytes: _bytes, ...info } = file;
    return { ...info, update_at: file.create_at, delete_at: 0 };
  }

  private broadcastPosted(post: FakePost): void {
    const channel = this.channels.get(post.channel_id)!;
    const sender = this.users.get(post.user_id)!;
    this.broadcast('posted', {
      channel_display_name: channel.display_name, channel_name: channel.name, channel_type: 'O', post: JSON.stringify(post),
      sender_name: `@${sender.username}`, team_id: TEAM.id, set_online: true,
    }, post.channel_id);
  }

  private broadcast(event: string, data: Record<string, unknown>, channelId: string): void {
    for (const connection of this.connections) {
      if (connection.userId === undefined) continue;
      if (this.skipSeqNext) {
        this.skipSeqNext = false;
        connection.seq += 1;
      }
      this.framesSent += 1;
      connection.socket.send(JSON.stringify({ event, data, broadcast: { omit_users: null, user_id: '', channel_id: channelId, team_id: '' }, seq: connection.seq++ }));
    }
  }

  // --- websocket ---

  private connected(socket: WebSocket): void {
    const connection: Connection = { socket, seq: 0 };
    this.connections.add(connection);
    socket.on('message', (raw) => {
      const request = JSON.parse(String(raw)) as { action: string; seq: number; data?: { token?: string } };
      if (request.action === 'authentication_challenge') {
        const userId = this.tokens.get(request.data?.token ?? '');
        // Mattermost closes a connection whose challenge names no session.
        if (userId === undefined) return socket.close();
        connection.userId = userId;
        socket.send(JSON.stringify({ status: 'OK', seq_reply: request.seq }));
        this.hellos += 1;
        socket.send(JSON.stringify({
          event: 'hello', data: { connection_id: randomBytes(13).toString('hex'), server_version: '10.11.0.fake', server_hostname: 'fake' },
          broadcast: { omit_users: null, user_id: userId, channel_id: '', team_id: '' }, seq: connection.seq++,
        }));
      } else if (request.action === 'ping') {
        socket.send(JSON.stringify({ status: 'OK', seq_reply: request.seq, data: { text: 'pong', version: '10.11.0.fake', node_id: '' } }));
      } else {
        socket.send(JSON.stringify({ status: 'FAIL', seq_reply: request.seq, error: { id: 'api.web_socket_router.no_action.app_error' } }));
      }
    });
    socket.on('close', () => this.connections.delete(connection));
  }

  // --- REST ---

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const body = raw.toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = url.pathname.replace(/^\/api\/v4/, '');
    this.calls.push(`${req.method} ${path}`);
    // The server answers `application/json` exactly, which Client4 decodes.
    const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'X-Version-Id': '10.11.0.fake', ...headers });
      res.end(JSON.stringify(value));
    };
    const error = (status: number, id: string, message: string) => send(status, { id, message, detailed_error: '', request_id: 'fake', status_code: status });
    const auth = /^bearer (\S+)$/i.exec(req.headers.authorization ?? '');
    const me = auth ? this.tokens.get(auth[1]!) : undefined;
    if (me === undefined) {
      this.refused += 1;
      return error(401, 'api.context.session_expired.app_error', 'Invalid or expired session, please login again.');
    }
    const user = this.users.get(me)!;
    const json = () => JSON.parse(body || '{}') as Record<string, any>;
    let match: RegExpExecArray | null;

    if (req.method === 'GET' && path === '/users/me') return send(200, user);
    if (req.method === 'GET' && (match = /^\/users\/([a-z0-9]{26})$/.exec(path))) {
      const found = this.users.get(match[1]!);
      return found ? send(200, found) : error(404, 'app.user.missing_account.const', 'Unable to find the user.');
    }
    if (req.method === 'GET' && path === '/config/client') {
      return send(200, {
        Version: '10.11.0', EnablePostUsernameOverride: String(this.overrideUsernames), EnablePostIconOverride: String(this.overrideUsernames),
        MaxFileSize: String(this.maxFileSize), EnableFileAttachments: String(this.fileAttachments),
      });
    }
    if (req.method === 'POST' && path === '/files') return this.upload(req, res, raw, url, send, error, user);
    if (req.method === 'GET' && (match = /^\/files\/([a-z0-9]{26})(\/info)?$/.exec(path))) {
      const file = this.files.get(match[1]!);
      const post = file?.post_id ? this.posts.find((p) => p.id === file.post_id) : undefined;
      // Whoever can read the channel can read its files; an unattached one only its uploader.
      if (!file || (!post && file.user_id !== user.id)) return error(404, 'app.file_info.get.app_error', 'Unable to get the file info.');
      if (match[2]) return send(200, this.infoOf(file));
      this.downloads += 1;
      res.writeHead(200, { 'Content-Type': file.mime_type, 'Content-Length': String(file.size), 'Content-Disposition': `attachment; filename="${encodeURIComponent(file.name)}"`, 'X-Content-Type-Options': 'nosniff' });
      return void res.end(file.bytes);
    }
    if (req.method === 'GET' && (match = /^\/teams\/name\/([^/]+)\/channels\/name\/([^/]+)$/.exec(path))) {
      const found = decodeURIComponent(match[1]!) === TEAM.name ? [...this.channels.values()].find((c) => c.name === decodeURIComponent(match![2]!)) : undefined;
      return found ? send(200, found) : error(404, 'app.channel.get_by_name.missing.app_error', 'Channel does not exist.');
    }
    if (req.method === 'POST' && path === '/posts') return this.create(req, res, send, error, user, json());
    if ((match = /^\/posts\/([a-z0-9]{26})(\/patch)?$/.exec(path))) {
      const post = this.posts.find((p) => p.id === match![1] && p.delete_at === 0);
      if (!post) return error(404, 'app.post.get.app_error', 'Unable to get the post.');
      if (req.method === 'GET' && !match[2]) return send(200, post);
      if (post.user_id !== user.id) return error(403, 'api.context.permissions.app_error', 'You do not have the appropriate permissions.');
      if (req.method === 'PUT') {
        this.edit(post.id, String(json().message ?? post.message));
        return send(200, post);
      }
      if (req.method === 'DELETE' && !match[2]) {
        this.remove(post.id, user.id);
        return send(200, { status: 'OK' });
      }
    }
    if (req.method === 'GET' && (match = /^\/channels\/([a-z0-9]{26})\/posts$/.exec(path))) {
      if (!this.channels.has(match[1]!)) return error(404, 'app.channel.get.existing.app_error', 'Unable to find the existing channel.');
      const inChannel = this.posts.filter((p) => p.channel_id === match![1]);
      const since = url.searchParams.get('since');
      let found: FakePost[];
      if (since !== null) found = inChannel.filter((p) => p.update_at > Number(since));
      else {
        const page = Number(url.searchParams.get('page') ?? 0);
        const perPage = Number(url.searchParams.get('per_page') ?? 60);
        found = inChannel.filter((p) => p.delete_at === 0).reverse().slice(page * perPage, (page + 1) * perPage);
      }
      // Newest first; posts of one millisecond newest first too (the database's order).
      const order = found.toSorted((a, b) => a.create_at - b.create_at).reverse().map((p) => p.id);
      return send(200, { order, posts: Object.fromEntries(found.map((p) => [p.id, p])), next_post_id: '', prev_post_id: '', has_next: false });
    }
    return error(404, 'api.context.404.app_error', 'Sorry, we could not find the page.');
  }

  private async upload(
    req: IncomingMessage, res: ServerResponse, raw: Buffer, url: URL, send: (status: number, value: unknown, headers?: Record<string, string>) => void,
    error: (status: number, id: string, message: string) => void, user: FakeUser,
  ): Promise<void> {
    if (!this.fileAttachments) return error(501, 'api.file.attachments.disabled.app_error', 'File attachments have been disabled on this server.');
    // The whole request counts against MaxFileSize, as the server reads it.
    if (raw.length > this.maxFileSize) return error(413, 'api.file.upload_file.too_large_detailed.app_error', 'Unable to upload file. File is too large.');
    const form = await new Response(raw, { headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData().catch(() => undefined);
    const channelId = String(form?.get('channel_id') ?? url.searchParams.get('channel_id') ?? '');
    if (!this.channels.has(channelId)) return error(403, 'api.context.permissions.app_error', 'You do not have the appropriate permissions.');
    const parts = (form?.getAll('files') ?? []).filter((part): part is File => typeof part !== 'string');
    if (parts.length === 0) return error(400, 'api.file.upload_file.incorrect_number_of_files.app_error', 'Unable to upload files. Incorrect number of files specified.');
    const infos = [];
    for (const part of parts) infos.push(this.infoOf(this.keepFile(user.id, channelId, part.name, part.type || 'application/octet-stream', Buffer.from(await part.arrayBuffer()))));
    this.uploads += 1;
    if (this.stallUploadsAfter > 0) this.stallUploadsAfter -= 1;
    else if (this.stallUploads > 0) {
      this.stallUploads -= 1;
      return;
    }
    send(201, { file_infos: infos, client_ids: [] });
  }

  private create(
    req: IncomingMessage, res: ServerResponse, send: (status: number, value: unknown, headers?: Record<string, string>) => void,
    error: (status: number, id: string, message: string) => void, user: FakeUser, json: Record<string, any>,
  ): void {
    if (this.rateLimitNext > 0) {
      this.rateLimitNext -= 1;
      // The server's limiter (throttled): plain text, and when to come back.
      res.writeHead(429, { 'Content-Type': 'text/plain; charset=utf-8', 'X-RateLimit-Limit': '10', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '1', 'Retry-After': '1' });
      res.end('limit exceeded\n');
      return;
    }
    this.creates.push(json);
    const channelId = String(json.channel_id ?? '');
    if (!this.channels.has(channelId)) return error(403, 'api.context.permissions.app_error', 'You do not have the appropriate permissions.');
    const rootId = String(json.root_id ?? '');
    if (rootId !== '') {
      const root = this.posts.find((p) => p.id === rootId);
      if (!root || root.root_id !== '' || root.channel_id !== channelId) return error(400, 'api.post.create_post.root_id.app_error', 'Invalid RootId parameter.');
    }
    const pendingId = typeof json.pending_post_id === 'string' ? json.pending_post_id : '';
    const same = pendingId !== '' ? this.pending.get(pendingId) : undefined;
    if (same && Date.now() - same.at < this.pendingTtlMs) return send(201, same.post);
    // The uploader's own files, not yet attached (the server drops the others), at most 10.
    const fileIds = (Array.isArray(json.file_ids) ? json.file_ids as string[] : [])
      .filter((id) => this.files.get(id)?.user_id === user.id && this.files.get(id)?.post_id === '').slice(0, 10);
    if (String(json.message ?? '') === '' && fileIds.length === 0) return error(400, 'api.post.create_post.message.app_error', 'Invalid Message parameter.');
    const post = this.store(channelId, user, String(json.message ?? ''), rootId, (json.props ?? {}) as Record<string, unknown>, '', fileIds);
    if (pendingId !== '') {
      post.pending_post_id = pendingId;
      this.pending.set(pendingId, { post, at: Date.now() });
    }
    this.broadcastPosted(post);
    if (this.loseAnswers > 0) {
      this.loseAnswers -= 1;
      req.socket.destroy();
      return;
    }
    if (this.stallAnswers > 0) {
      this.stallAnswers -= 1;
      return;
    }
    send(201, post);
  }
}
