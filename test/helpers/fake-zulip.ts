import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Zulip written from its REST API documentation (/api/v1), close enough that the relay's client
 * cannot tell: HTTP basic auth with a bot's email and API key (401 INVALID_API_KEY otherwise), users/me,
 * get_stream_id, register (an event queue narrowed to a stream: message, update_message, delete_message
 * events, `max_message_id`), events (a long poll answered with what came after `last_event_id`, or a
 * heartbeat; BAD_EVENT_QUEUE_ID for a queue it dropped), messages (send with `queue_id` + `local_id`,
 * whose event carries `local_message_id` to that queue only; read by `anchor`, `num_before`,
 * `num_after`, `include_anchor`, a `narrow` of stream, topic and sender, with found_newest), one message,
 * PATCH and DELETE; DELETE /events (a queue deleted by its client); 429 RATE_LIMIT_HIT with `retry-after` in the body and the Retry-After header.
 * Files: POST /user_uploads (multipart; `url` and the older `uri`, refused past `max_file_upload_size_mib`,
 * which register answers), GET /api/v1/user_uploads/{realm_id_str}/{filename} (authenticated: a
 * temporary `url` for the file), GET /user_uploads/temporary/{token} (the bytes, no auth: the token is
 * the authority) and GET /user_uploads/{realm}/{path} (the bytes, only with the API key's basic auth).
 * Simpler than Zulip: every stream public and every user in it, no markdown rendering (content as sent),
 * no message edit or delete time limits, queues dropped only when the test says, ids from one counter.
 */

export interface FakeZulipUser {
  user_id: number;
  full_name: string;
  email: string;
  is_bot: boolean;
}

export interface FakeZulipMessage {
  id: number;
  sender_id: number;
  sender_full_name: string;
  sender_email: string;
  content: string;
  subject: string;
  stream_id: number;
  display_recipient: string;
  type: 'stream';
  timestamp: number;
  deleted?: boolean;
}

interface EventQueue {
  id: string;
  userId: number;
  /** The stream its narrow names (lower case), or undefined for every stream. */
  stream?: string;
  events: Array<Record<string, unknown> & { id: number }>;
  nextEventId: number;
  waiting?: () => void;
  polls: Set<ServerResponse>;
}

type Json = Record<string, unknown>;

export class FakeZulip {
  readonly users = new Map<number, FakeZulipUser>();
  readonly streams = new Map<number, { stream_id: number; name: string }>();
  readonly messages: FakeZulipMessage[] = [];
  /** Every call, as `METHOD path` (for assertions on what the relay asked). */
  readonly calls: string[] = [];
  /** The parameters of every POST /messages, in order. */
  readonly sends: Array<Record<string, string>> = [];
  /** How long a poll with nothing to answer is held before a heartbeat (Zulip's is about 50 s). */
  heartbeatMs = 2_000;
  /** Queues registered (every register, including those after a drop). */
  registers = 0;
  /** Queues deleted by their client (DELETE /events). */
  deletedQueues = 0;
  /** Files as uploaded, by path (`/user_uploads/2/ab/xyz/name.png`): bytes, name, type, owner. */
  readonly uploads = new Map<string, { bytes: Buffer; name: string; type: string; owner: number }>();
  /** POST /user_uploads taken; temporary URLs handed out; file downloads served (authenticated or by a temporary URL). */
  uploadCount = 0;
  temporaryUrls = 0;
  downloads = 0;
  /** Downloads refused (no or a wrong API key). */
  refusedDownloads = 0;
  /** What register answers as `max_file_upload_size_mib` (an upload past it is refused). */
  maxUploadMib = 25;
  readonly realmId = 2;
  private readonly temporary = new Map<string, string>();
  private stallUploadAt = 0;
  private readonly keys = new Map<string, number>();
  private readonly queues = new Map<string, EventQueue>();
  /** Events queued, one a queue an event. */
  private queued = 0;
  private nextId = 100;
  private rateLimitNext = 0;
  private loseAnswers = 0;
  private stallAnswers = 0;
  private http!: Server;
  bot!: FakeZulipUser;
  botKey!: string;

  static async start(): Promise<FakeZulip> {
    const fake = new FakeZulip();
    ({ user: fake.bot, key: fake.botKey } = fake.addUser('groupwire', { is_bot: true }));
    fake.http = createServer((req, res) => void fake.route(req, res));
    await new Promise<void>((ready) => fake.http.listen(0, '127.0.0.1', ready));
    return fake;
  }

  /** What the relay's `server_url` takes. */
  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  /** What the fake holds for its clients (the platforms bench reads it each round): event queues kept, those polled now, events kept in them and queued in all. */
  holding(): Record<string, number> {
    let kept = 0;
    let polled = 0;
    for (const queue of this.queues.values()) {
      kept += queue.events.length;
      if (queue.polls.size > 0) polled += 1;
    }
    return { queues: this.queues.size, polled, events_kept: kept, queued: this.queued };
  }

  /** Event queues kept now (registered, neither deleted nor dropped). */
  get queueCount(): number {
    return this.queues.size;
  }

  /** Polls held open now. */
  get polling(): number {
    let open = 0;
    for (const queue of this.queues.values()) open += queue.polls.size;
    return open;
  }

  addUser(name: string, extra: { is_bot?: boolean; full_name?: string } = {}): { user: FakeZulipUser; key: string } {
    const user: FakeZulipUser = { user_id: this.id(), full_name: extra.full_name ?? name, email: `${name}${extra.is_bot ? '-bot' : ''}@zulip.example.org`, is_bot: extra.is_bot ?? false };
    const key = randomBytes(16).toString('hex');
    this.users.set(user.user_id, user);
    this.keys.set(`${user.email}:${key}`, user.user_id);
    return { user, key };
  }

  addStream(name: string): number {
    const stream = { stream_id: this.id(), name };
    this.streams.set(stream.stream_id, stream);
    return stream.stream_id;
  }

  /** The next `count` sends answer 429 RATE_LIMIT_HIT. */
  rateLimit(count: number): void {
    this.rateLimitNext = count;
  }

  /** The next `count` sends are made, but their answers are lost (the connection is cut). */
  loseAnswer(count: number): void {
    this.loseAnswers = count;
  }

  /** The next `count` sends are made, but never answered (the caller kills the relay meanwhile). */
  stallAnswer(count: number): void {
    this.stallAnswers = count;
  }

  /** The `nth` upload from now is kept, but never answered (the caller kills the relay meanwhile). */
  stallUpload(nth = 1): void {
    this.stallUploadAt = this.uploadCount + nth;
  }

  /** Drops every event queue, as Zulip does after 10 minutes unpolled or a restart: held polls answer BAD_EVENT_QUEUE_ID. */
  expireQueues(): void {
    for (const queue of this.queues.values()) {
      this.queues.delete(queue.id);
      for (const res of queue.polls) this.badQueue(res, queue.id);
      queue.polls.clear();
    }
  }

  /** Cuts every held poll's connection (the queue stays: the relay asks again from the same event). */
  dropPolls(): void {
    for (const queue of this.queues.values()) {
      for (const res of queue.polls) res.socket?.destroy();
      queue.polls.clear();
    }
  }

  /** A file `user` uploaded (as the web app does before it is said): its path. */
  addUpload(user: FakeZulipUser, name: string, bytes: Buffer, type = 'application/octet-stream'): string {
    const path = `/user_uploads/${this.realmId}/${randomBytes(1).toString('hex')}/${randomBytes(12).toString('base64url')}/${encodeURIComponent(name)}`;
    this.uploads.set(path, { bytes, name, type, owner: user.user_id });
    return path;
  }

  /** Someone says something in a stream's topic. */
  say(streamId: number, user: FakeZulipUser, content: string, topic = 'lobby'): FakeZulipMessage {
    const message = this.store(streamId, user, content, topic);
    this.broadcast(message.display_recipient, { type: 'message', message: { ...message }, flags: [] });
    return message;
  }

  edit(messageId: number, content: string, by?: number): void {
    const message = this.messages.find((m) => m.id === messageId)!;
    message.content = content;
    this.broadcast(message.display_recipient, {
      type: 'update_message', message_id: message.id, message_ids: [message.id], stream_id: message.stream_id, content, rendered_content: content,
      orig_content: content, user_id: by ?? message.sender_id, edit_timestamp: Math.floor(Date.now() / 1000), rendering_only: false,
    });
  }

  remove(messageId: number): void {
    const message = this.messages.find((m) => m.id === messageId)!;
    message.deleted = true;
    this.broadcast(message.display_recipient, { type: 'delete_message', message_ids: [message.id], message_type: 'stream', stream_id: message.stream_id, topic: message.subject });
  }

  /** What is in a stream (one topic, or all), not deleted, oldest first. */
  inStream(streamId: number, topic?: string): FakeZulipMessage[] {
    return this.messages.filter((m) => m.stream_id === streamId && !m.deleted && (topic === undefined || m.subject.toLowerCase() === topic.toLowerCase()));
  }

  async close(): Promise<void> {
    for (const queue of this.queues.values()) for (const res of queue.polls) res.socket?.destroy();
    this.queues.clear();
    this.http.closeAllConnections();
    await new Promise<void>((done) => this.http.close(() => done()));
  }

  private id(): number {
    this.nextId += 1;
    return this.nextId;
  }

  private store(streamId: number, user: FakeZulipUser, content: string, topic: string): FakeZulipMessage {
    const stream = this.streams.get(streamId)!;
    const message: FakeZulipMessage = {
      id: this.id(), sender_id: user.user_id, sender_full_name: user.full_name, sender_email: user.email, content, subject: topic,
      stream_id: streamId, display_recipient: stream.name, type: 'stream', timestamp: Math.floor(Date.now() / 1000),
    };
    this.messages.push(message);
    return message;
  }

  /** An event to every queue whose narrow takes the stream; `own` adds `local_message_id` for the sender's queue. */
  private broadcast(stream: string, event: Json, own?: { queueId: string; localId: string }): void {
    for (const queue of this.queues.values()) {
      if (queue.stream !== undefined && queue.stream !== stream.toLowerCase()) continue;
      queue.nextEventId += 1;
      this.queued += 1;
      queue.events.push({ ...event, id: queue.nextEventId, ...(own && own.queueId === queue.id ? { local_message_id: own.localId } : {}) });
      queue.waiting?.();
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (url.pathname.startsWith('/user_uploads/')) return this.serveUpload(req, res, url.pathname);
    const path = url.pathname.replace(/^\/api\/v1/, '');
    this.calls.push(`${req.method} ${path}`);
    const multipart = String(req.headers['content-type'] ?? '').startsWith('multipart/form-data');
    const params = Object.fromEntries(req.method === 'GET' || req.method === 'DELETE' ? url.searchParams : multipart ? [] : new URLSearchParams(body.toString('utf8')));
    const userId = this.authenticated(req);
    if (userId === undefined) return send(res, 401, { result: 'error', msg: 'Invalid API key', code: 'INVALID_API_KEY' });
    const user = this.users.get(userId)!;
    if (req.method === 'POST' && path === '/user_uploads') return this.upload(req, res, userId, body);
    if (req.method === 'GET' && path.startsWith('/user_uploads/')) {
      const file = decodeURI(`${path}`);
      if (!this.uploads.has(path) && !this.uploads.has(file)) return send(res, 404, { result: 'error', msg: 'Invalid file', code: 'BAD_REQUEST' });
      const token = randomBytes(24).toString('hex');
      this.temporary.set(token, this.uploads.has(path) ? path : file);
      this.temporaryUrls += 1;
      return send(res, 200, { result: 'success', msg: '', url: `/user_uploads/temporary/${token}/${path.split('/').at(-1)}` });
    }
    if (req.method === 'GET' && path === '/users/me') return send(res, 200, { result: 'success', msg: '', ...user });
    if (req.method === 'GET' && path === '/get_stream_id') {
      const stream = [...this.streams.values()].find((s) => s.name.toLowerCase() === String(params.stream).toLowerCase());
      if (!stream) return send(res, 400, { result: 'error', msg: `Invalid channel name '${params.stream}'`, code: 'BAD_REQUEST' });
      return send(res, 200, { result: 'success', msg: '', stream_id: stream.stream_id });
    }
    if (req.method === 'POST' && path === '/register') return this.register(res, userId, params);
    if (req.method === 'GET' && path === '/events') return this.events(res, params);
    if (req.method === 'DELETE' && path === '/events') return this.deleteQueue(res, params.queue_id ?? '');
    if (req.method === 'POST' && path === '/messages') return this.send(res, user, params);
    if (req.method === 'GET' && path === '/messages') return this.read(res, params);
    const one = /^\/messages\/(\d+)$/.exec(path);
    const message = one ? this.messages.find((m) => m.id === Number(one[1]) && !m.deleted) : undefined;
    if (one && !message) return send(res, 400, { result: 'error', msg: 'Invalid message(s)', code: 'BAD_REQUEST' });
    if (message && req.method === 'GET') return send(res, 200, { result: 'success', msg: '', message, raw_content: message.content });
    if (message && req.method === 'PATCH') {
      if (message.sender_id !== userId) return send(res, 400, { result: 'error', msg: 'You don\'t have permission to edit this message', code: 'BAD_REQUEST' });
      this.edit(message.id, String(params.content), userId);
      return send(res, 200, { result: 'success', msg: '' });
    }
    if (message && req.method === 'DELETE') {
      this.remove(message.id);
      return send(res, 200, { result: 'success', msg: '' });
    }
    send(res, 404, { result: 'error', msg: 'Endpoint not found', code: 'BAD_REQUEST' });
  }

  /** POST /user_uploads: the first file of the multipart body, kept; its path as `url` (and `uri`, its older name). */
  private async upload(req: IncomingMessage, res: ServerResponse, userId: number, body: Buffer): Promise<void> {
    const form = await new Response(body, { headers: { 'content-type': String(req.headers['content-type']) } }).formData();
    const file = [...form.values()].find((value): value is File => typeof value !== 'string');
    if (!file) return send(res, 400, { result: 'error', msg: 'You must specify a file to upload', code: 'BAD_REQUEST' });
    if (file.size > this.maxUploadMib * 1024 * 1024) {
      return send(res, 400, { result: 'error', msg: `File is larger than this server's configured maximum upload size (${this.maxUploadMib} MiB).`, code: 'BAD_REQUEST' });
    }
    this.uploadCount += 1;
    const path = this.addUpload(this.users.get(userId)!, file.name, Buffer.from(await file.arrayBuffer()), file.type || 'application/octet-stream');
    if (this.uploadCount === this.stallUploadAt) return;
    send(res, 200, { result: 'success', msg: '', uri: path, url: path, filename: file.name });
  }

  /** The bytes of an upload: by a temporary URL's token, or by its path with the API key (anything else: 401). */
  private serveUpload(req: IncomingMessage, res: ServerResponse, pathname: string): void {
    const temporary = /^\/user_uploads\/temporary\/([0-9a-f]+)\//.exec(pathname);
    const path = temporary ? this.temporary.get(temporary[1]!) : this.authenticated(req) !== undefined ? pathname : undefined;
    const file = path === undefined ? undefined : this.uploads.get(path) ?? this.uploads.get(decodeURI(path));
    if (!file) {
      this.refusedDownloads += 1;
      res.writeHead(path === undefined ? 401 : 404, { 'content-type': 'text/plain' });
      res.end('Not logged in');
      return;
    }
    this.downloads += 1;
    res.writeHead(200, { 'content-type': file.type, 'content-length': file.bytes.length, 'x-content-type-options': 'nosniff' });
    res.end(file.bytes);
  }

  private authenticated(req: IncomingMessage): number | undefined {
    const header = req.headers.authorization ?? '';
    if (!header.startsWith('Basic ')) return undefined;
    return this.keys.get(Buffer.from(header.slice(6), 'base64').toString('utf8'));
  }

  private register(res: ServerResponse, userId: number, params: Record<string, string>): void {
    const narrow = JSON.parse(params.narrow ?? '[]') as Array<[string, string]>;
    const stream = narrow.find(([operator]) => operator === 'stream' || operator === 'channel')?.[1];
    const queue: EventQueue = { id: `${Date.now()}:${this.id()}`, userId, events: [], nextEventId: -1, polls: new Set(), ...(stream ? { stream: String(stream).toLowerCase() } : {}) };
    this.queues.set(queue.id, queue);
    this.registers += 1;
    const visible = this.messages.filter((m) => !m.deleted);
    send(res, 200, { result: 'success', msg: '', queue_id: queue.id, last_event_id: -1, max_message_id: visible.at(-1)?.id ?? -1, max_file_upload_size_mib: this.maxUploadMib });
  }

  private events(res: ServerResponse, params: Record<string, string>): void {
    const queue = this.queues.get(params.queue_id ?? '');
    if (!queue) return this.badQueue(res, params.queue_id ?? '');
    const last = Number(params.last_event_id);
    queue.events = queue.events.filter((event) => event.id > last);
    const answer = () => {
      queue.waiting = undefined;
      clearTimeout(timer);
      if (!queue.polls.delete(res)) return;
      if (queue.events.length === 0) {
        queue.nextEventId += 1;
        queue.events.push({ type: 'heartbeat', id: queue.nextEventId });
      }
      send(res, 200, { result: 'success', msg: '', events: queue.events, queue_id: queue.id });
    };
    queue.polls.add(res);
    const timer = setTimeout(answer, queue.events.length > 0 ? 0 : this.heartbeatMs);
    if (queue.events.length === 0) queue.waiting = answer;
    res.on('close', () => {
      clearTimeout(timer);
      queue.polls.delete(res);
    });
  }

  /** DELETE /events: the queue is gone (a poll still held on it is cut); an unknown one answers BAD_EVENT_QUEUE_ID. */
  private deleteQueue(res: ServerResponse, queueId: string): void {
    const queue = this.queues.get(queueId);
    if (!queue) return this.badQueue(res, queueId);
    this.queues.delete(queueId);
    this.deletedQueues += 1;
    for (const poll of queue.polls) this.badQueue(poll, queueId);
    queue.polls.clear();
    send(res, 200, { result: 'success', msg: '' });
  }

  private badQueue(res: ServerResponse, queueId: string): void {
    send(res, 400, { result: 'error', msg: `Bad event queue ID: ${queueId}`, queue_id: queueId, code: 'BAD_EVENT_QUEUE_ID' });
  }

  private send(res: ServerResponse, user: FakeZulipUser, params: Record<string, string>): void {
    this.sends.push(params);
    if (this.rateLimitNext > 0) {
      this.rateLimitNext -= 1;
      res.setHeader('Retry-After', '0.05');
      return send(res, 429, { result: 'error', msg: 'API usage exceeded rate limit', 'retry-after': 0.05, code: 'RATE_LIMIT_HIT' });
    }
    const to = String(params.to);
    const stream = [...this.streams.values()].find((s) => s.name.toLowerCase() === to.toLowerCase() || String(s.stream_id) === to);
    if (!stream) return send(res, 400, { result: 'error', msg: `Channel '${to}' does not exist`, code: 'STREAM_DOES_NOT_EXIST', stream: to });
    const message = this.store(stream.stream_id, user, String(params.content), String(params.topic ?? ''));
    this.broadcast(stream.name, { type: 'message', message: { ...message }, flags: [] },
      params.queue_id && params.local_id ? { queueId: params.queue_id, localId: params.local_id } : undefined);
    if (this.stallAnswers > 0) {
      this.stallAnswers -= 1;
      return;
    }
    if (this.loseAnswers > 0) {
      this.loseAnswers -= 1;
      res.socket?.destroy();
      return;
    }
    send(res, 200, { result: 'success', msg: '', id: message.id });
  }

  private read(res: ServerResponse, params: Record<string, string>): void {
    const narrow = JSON.parse(params.narrow ?? '[]') as Array<[string, string | number]>;
    let found = this.messages.filter((m) => !m.deleted);
    for (const [operator, operand] of narrow) {
      if (operator === 'stream' || operator === 'channel') found = found.filter((m) => m.display_recipient.toLowerCase() === String(operand).toLowerCase() || m.stream_id === operand);
      else if (operator === 'topic') found = found.filter((m) => m.subject.toLowerCase() === String(operand).toLowerCase());
      else if (operator === 'sender') found = found.filter((m) => m.sender_id === Number(operand) || m.sender_email === operand);
    }
    const before = Number(params.num_before ?? 0);
    const after = Number(params.num_after ?? 0);
    const includeAnchor = params.include_anchor !== 'false';
    const anchorParam = params.anchor ?? 'newest';
    const anchor = anchorParam === 'newest' ? Number.MAX_SAFE_INTEGER : anchorParam === 'oldest' ? 0 : Number(anchorParam);
    const below = found.filter((m) => m.id < anchor);
    const older = before === 0 ? [] : below.slice(-before);
    const at = includeAnchor ? found.filter((m) => m.id === anchor) : [];
    const newer = found.filter((m) => m.id > anchor || (anchorParam === 'oldest' && m.id === anchor));
    const taken = newer.slice(0, after);
    send(res, 200, {
      result: 'success', msg: '', anchor, messages: [...older, ...at, ...taken],
      found_newest: taken.length === newer.length, found_oldest: older.length === below.length,
    });
  }
}

function send(res: ServerResponse, status: number, body: Json): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
