import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { FakeDiscordFiles, type FakeAttachment, type Multipart } from './fake-discord-files.js';

/**
 * A local Discord written from the developer docs (Gateway: hello, identify, ready, heartbeat and its
 * ack, resume, invalid session, MESSAGE_CREATE/UPDATE/DELETE dispatches; REST v10: gateway/bot,
 * users/@me, channel messages with `nonce` + `enforce_nonce` deduplication, 429 with `retry_after`
 * and the X-RateLimit-* headers), so the official @discordjs packages talk to it as to Discord.
 * Simpler than Discord: one guild, no shards, JSON encoding without compression, snowflakes from a
 * counter (still increasing, so `after=` paging works). Channel webhooks (list, create, execute with
 * `wait`, edit and delete their messages) as documented; a webhook's message has the webhook's id as its
 * author's and the username it was executed with. Attachments (fake-discord-files.ts): people's files on
 * a signed CDN URL, and files posted with a message or through a webhook as multipart/form-data.
 */

export interface FakeUser {
  id: string;
  username: string;
  global_name?: string | null;
  bot?: boolean;
}

interface StoredMessage {
  id: string;
  channel_id: string;
  guild_id: string;
  author: FakeUser;
  content: string;
  timestamp: string;
  edited_timestamp: string | null;
  nonce?: string | number;
  message_reference?: { message_id: string; channel_id: string };
  allowed_mentions?: unknown;
  type: 0 | 19;
  webhook_id?: string;
  attachments: FakeAttachment[];
}

interface FakeWebhook {
  id: string;
  token: string;
  channel_id: string;
  name: string;
}

interface Session {
  id: string;
  socket?: WebSocket;
  /** Every dispatch sent in this session, by its sequence number (for RESUME). */
  sent: Array<{ s: number; t: string; d: unknown }>;
}

const GUILD = '900000000000000001';
const HEARTBEAT_MS = 1_000;

export class FakeDiscord {
  readonly bot: FakeUser = { id: '800000000000000001', username: 'groupwire-bot', bot: true };
  /** The channels that exist (ids); messages to others are 404 Unknown Channel. */
  readonly channels = new Set<string>();
  readonly messages: StoredMessage[] = [];
  /** Every REST call, as `METHOD path` (for assertions on what the relay asked). */
  readonly calls: string[] = [];
  /** The IDENTIFY payloads received (intents, properties), in order. */
  readonly identifies: unknown[] = [];
  readonly webhooks = new Map<string, FakeWebhook>();
  /** Attachments: people's, and those posted with messages (uploads, CDN downloads). */
  readonly files = new FakeDiscordFiles(() => `http://127.0.0.1:${this.port}`, () => this.snowflake());
  /** Bytes of files one message may carry (Discord's 10 MiB for bots); more answers 413 (code 40005). */
  maxUpload = 10 * 1024 * 1024;
  /** When false, the bot lacks Manage Webhooks: listing and creating webhooks answer 403 Missing Permissions. */
  webhooksAllowed = true;
  private readonly sessions = new Map<string, Session>();
  /** Dispatches made, one a session (live or not) an event. */
  private dispatched = 0;
  private nextId = 1_000_000_000_000_000_000n;
  private rateLimitNext = 0;
  private loseAnswers = 0;
  private http!: Server;
  private wss!: WebSocketServer;

  private constructor(readonly token: string) {}

  static async start(token = 'fake-discord-bot-token'): Promise<FakeDiscord> {
    const fake = new FakeDiscord(token);
    fake.http = createServer((req, res) => void fake.route(req, res));
    fake.wss = new WebSocketServer({ server: fake.http });
    fake.wss.on('connection', (socket) => fake.connected(socket));
    await new Promise<void>((ready) => fake.http.listen(0, '127.0.0.1', ready));
    return fake;
  }

  get port(): number {
    return (this.http.address() as AddressInfo).port;
  }

  /** What the relay's `api_url` option takes. */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  get connections(): number {
    return [...this.sessions.values()].filter((session) => session.socket).length;
  }

  /** What the fake holds for its gateway clients (the platforms bench reads it each round): sessions kept, those with a socket now, dispatches kept for RESUME and made in all. */
  holding(): Record<string, number> {
    let kept = 0;
    for (const session of this.sessions.values()) kept += session.sent.length;
    return { sessions: this.sessions.size, live: this.connections, frames_kept: kept, dispatched: this.dispatched };
  }

  addChannel(id: string): void {
    this.channels.add(id);
  }

  /** The next `count` messages posted are made, but their answers are lost (the connection is cut). */
  loseAnswer(count: number): void {
    this.loseAnswers = count;
  }

  /** The next `count` POSTs of messages answer 429 with `retry_after`. */
  rateLimit(count: number): void {
    this.rateLimitNext = count;
  }

  /** A person says something in a channel: stored, and dispatched as MESSAGE_CREATE. */
  say(channelId: string, author: FakeUser, content: string, replyTo?: string): StoredMessage {
    const message = this.store(channelId, author, content, replyTo ? { message_id: replyTo, channel_id: channelId } : undefined);
    this.dispatch('MESSAGE_CREATE', message);
    return message;
  }

  /**
   * A person says something with files: each kept on the CDN, the message's `attachments` their objects
   * (`override` changes fields of every attachment object, a hostile URL say), dispatched as MESSAGE_CREATE.
   */
  sayWithFiles(channelId: string, author: FakeUser, content: string, files: Array<{ filename: string; contentType: string; bytes: Buffer }>, override: Partial<FakeAttachment> = {}): StoredMessage {
    const message = this.store(channelId, author, content);
    message.attachments = files.map((file) => ({ ...this.files.add(channelId, file), ...override }));
    this.dispatch('MESSAGE_CREATE', message);
    return message;
  }

  edit(messageId: string, content: string): void {
    const message = this.messages.find((m) => m.id === messageId)!;
    message.content = content;
    message.edited_timestamp = new Date().toISOString();
    this.dispatch('MESSAGE_UPDATE', message);
  }

  remove(messageId: string): void {
    const index = this.messages.findIndex((m) => m.id === messageId);
    const [message] = this.messages.splice(index, 1);
    this.dispatch('MESSAGE_DELETE', { id: message!.id, channel_id: message!.channel_id, guild_id: GUILD });
  }

  /** Closes every gateway connection abruptly (code 1006-like): clients resume. */
  dropConnections(): void {
    for (const session of this.sessions.values()) session.socket?.terminate();
  }

  /**
   * Ends every session as Discord does when it cannot resume one: an Invalid Session (op 9, `d: false`)
   * on each open connection, and the sessions forgotten. Clients identify again and get a new READY;
   * what is said in between is dispatched to nobody (a client reads it back by REST).
   */
  invalidateSessions(): void {
    for (const session of this.sessions.values()) session.socket?.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
    this.sessions.clear();
  }

  /** What is in a channel, oldest first. */
  inChannel(channelId: string): StoredMessage[] {
    return this.messages.filter((m) => m.channel_id === channelId);
  }

  async close(): Promise<void> {
    for (const client of this.wss.clients) client.terminate();
    await new Promise<void>((done) => this.wss.close(() => done()));
    this.http.closeAllConnections();
    await new Promise<void>((done) => this.http.close(() => done()));
  }

  private tooLarge(upload: Multipart): boolean {
    return upload.files.reduce((total, file) => total + file.bytes.length, 0) > this.maxUpload;
  }

  private snowflake(): string {
    this.nextId += 1n;
    return String(this.nextId);
  }

  /** Posts through a webhook made in the channel. */
  private executeWebhook(hook: FakeWebhook, upload: Multipart): StoredMessage {
    const json = upload.json as { content?: string; username?: string; avatar_url?: string; allowed_mentions?: unknown };
    const author: FakeUser & { avatar_url?: string } = { id: hook.id, username: json.username ?? hook.name, bot: true, ...(json.avatar_url ? { avatar_url: json.avatar_url } : {}) };
    const message = this.store(hook.channel_id, author, json.content ?? '');
    message.attachments = this.files.attach(hook.channel_id, upload);
    message.webhook_id = hook.id;
    message.allowed_mentions = json.allowed_mentions;
    this.dispatch('MESSAGE_CREATE', message);
    return message;
  }

  private store(channelId: string, author: FakeUser, content: string, reference?: StoredMessage['message_reference']): StoredMessage {
    const message: StoredMessage = {
      id: this.snowflake(), channel_id: channelId, guild_id: GUILD, author, content, timestamp: new Date().toISOString(),
      edited_timestamp: null, type: reference ? 19 : 0, ...(reference ? { message_reference: reference } : {}), attachments: [],
    };
    this.messages.push(message);
    return message;
  }

  private dispatch(t: string, d: unknown): void {
    for (const session of this.sessions.values()) {
      const frame = { s: session.sent.length + 2, t, d };
      session.sent.push(frame);
      this.dispatched += 1;
      session.socket?.send(JSON.stringify({ op: 0, ...frame }));
    }
  }

  // --- Gateway ---

  private connected(socket: WebSocket): void {
    let session: Session | undefined;
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: HEARTBEAT_MS }, s: null, t: null }));
    socket.on('message', (raw) => {
      const payload = JSON.parse(String(raw)) as { op: number; d: any };
      if (payload.op === 1) socket.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
      else if (payload.op === 2) {
        if (payload.d.token !== this.token) {
          socket.close(4004, 'Authentication failed.');
          return;
        }
        this.identifies.push(payload.d);
        session = { id: this.snowflake(), socket, sent: [] };
        this.sessions.set(session.id, session);
        const ready = {
          v: 10, user: this.bot, guilds: [{ id: GUILD, unavailable: true }], session_id: session.id,
          resume_gateway_url: `ws://127.0.0.1:${this.port}`, application: { id: this.bot.id, flags: 0 },
        };
        socket.send(JSON.stringify({ op: 0, s: 1, t: 'READY', d: ready }));
      } else if (payload.op === 6) {
        const known = this.sessions.get(payload.d.session_id);
        if (!known || payload.d.token !== this.token) {
          socket.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
          return;
        }
        session = known;
        session.socket = socket;
        for (const frame of session.sent.filter((f) => f.s > payload.d.seq)) socket.send(JSON.stringify({ op: 0, ...frame }));
        const resumed = { s: session.sent.length + 2, t: 'RESUMED', d: {} };
        session.sent.push(resumed);
        socket.send(JSON.stringify({ op: 0, ...resumed }));
      }
    });
    socket.on('close', () => {
      if (session?.socket === socket) session.socket = undefined;
    });
  }

  // --- REST ---

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await new Promise<Buffer>((done) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => done(Buffer.concat(chunks)));
    });
    const body = raw.toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    // The CDN: attachments' bytes, by signed URL (no token).
    if (this.files.serve(req, res, url)) return;
    const path = url.pathname.replace(/^\/api\/v10/, '');
    this.calls.push(`${req.method} ${path}`);
    const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(value === undefined ? undefined : JSON.stringify(value));
    };
    const hookMatch = /^\/webhooks\/(\d+)\/([\w-]+)(?:\/messages\/(\d+))?$/.exec(path);
    if (hookMatch) return this.webhookRoute(req, res, send, raw, url, hookMatch);
    if (req.headers.authorization !== `Bot ${this.token}`) return send(401, { message: '401: Unauthorized', code: 0 });
    if (req.method === 'GET' && path === '/gateway/bot') {
      return send(200, { url: `ws://127.0.0.1:${this.port}`, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
    }
    if (req.method === 'GET' && path === '/users/@me') return send(200, this.bot);
    const hooksOf = /^\/channels\/(\d+)\/webhooks$/.exec(path);
    if (hooksOf) {
      if (!this.webhooksAllowed) return send(403, { message: 'Missing Permissions', code: 50013 });
      const channelId = hooksOf[1]!;
      if (req.method === 'GET') return send(200, [...this.webhooks.values()].filter((hook) => hook.channel_id === channelId).map((hook) => ({ type: 1, ...hook })));
      const hook = { id: this.snowflake(), token: `wh-${this.snowflake()}`, channel_id: channelId, name: (JSON.parse(body) as { name: string }).name };
      this.webhooks.set(hook.id, hook);
      return send(200, { type: 1, ...hook });
    }
    const match = /^\/channels\/(\d+)\/messages(?:\/(\d+))?$/.exec(path);
    if (!match) return send(404, { message: '404: Not Found', code: 0 });
    const [, channelId, messageId] = match as unknown as [string, string, string | undefined];
    if (!this.channels.has(channelId)) return send(404, { message: 'Unknown Channel', code: 10003 });
    const bucket = { 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '4', 'x-ratelimit-reset-after': '0.001', 'x-ratelimit-bucket': `b-${channelId}` };
    if (req.method === 'GET' && !messageId) {
      const after = url.searchParams.get('after');
      const limit = Number(url.searchParams.get('limit') ?? 50);
      // Discord answers newest first.
      const found = this.inChannel(channelId).filter((m) => !after || BigInt(m.id) > BigInt(after)).slice(0, limit).reverse();
      return send(200, found, bucket);
    }
    if (req.method === 'POST' && !messageId) {
      if (this.rateLimitNext > 0) {
        this.rateLimitNext -= 1;
        return send(429, { message: 'You are being rate limited.', retry_after: 0.05, global: false },
          { ...bucket, 'x-ratelimit-remaining': '0', 'x-ratelimit-reset-after': '0.05', 'retry-after': '1', 'x-ratelimit-scope': 'user' });
      }
      const upload = await this.files.parse(raw, req.headers['content-type']);
      if (this.tooLarge(upload)) return send(413, { message: 'Request entity too large', code: 40005 });
      const json = upload.json as { content?: string; nonce?: string; enforce_nonce?: boolean; message_reference?: { message_id: string }; allowed_mentions?: unknown };
      if (json.enforce_nonce && json.nonce !== undefined) {
        const same = this.messages.find((m) => m.channel_id === channelId && m.author.id === this.bot.id && m.nonce === json.nonce);
        if (same) return send(200, same, bucket);
      }
      const message = this.store(channelId, this.bot, json.content ?? '', json.message_reference ? { message_id: json.message_reference.message_id, channel_id: channelId } : undefined);
      message.attachments = this.files.attach(channelId, upload);
      if (json.nonce !== undefined) message.nonce = json.nonce;
      message.allowed_mentions = json.allowed_mentions;
      this.dispatch('MESSAGE_CREATE', message);
      if (this.loseAnswers > 0) {
        this.loseAnswers -= 1;
        req.socket.destroy();
        return;
      }
      return send(200, message, bucket);
    }
    const message = this.messages.find((m) => m.id === messageId && m.channel_id === channelId);
    if (!message) return send(404, { message: 'Unknown Message', code: 10008 });
    if (req.method === 'PATCH') {
      message.content = (JSON.parse(body) as { content: string }).content;
      message.edited_timestamp = new Date().toISOString();
      this.dispatch('MESSAGE_UPDATE', message);
      return send(200, message, bucket);
    }
    if (req.method === 'DELETE') {
      this.remove(message.id);
      res.writeHead(204, bucket);
      res.end();
      return;
    }
    return send(405, { message: '405: Method Not Allowed', code: 0 });
  }

  /** Execute a webhook, edit or delete one of its messages: the webhook's token authorises, not the bot's. */
  private async webhookRoute(req: IncomingMessage, res: ServerResponse, send: (status: number, value: unknown) => void, raw: Buffer, url: URL, match: RegExpExecArray): Promise<void> {
    const [, id, token, messageId] = match as unknown as [string, string, string, string | undefined];
    const hook = this.webhooks.get(id);
    if (!hook || hook.token !== token) return send(404, { message: 'Unknown Webhook', code: 10015 });
    if (req.method === 'POST' && !messageId) {
      if (this.rateLimitNext > 0) {
        this.rateLimitNext -= 1;
        return send(429, { message: 'You are being rate limited.', retry_after: 0.05, global: false });
      }
      const upload = await this.files.parse(raw, req.headers['content-type']);
      if (this.tooLarge(upload)) return send(413, { message: 'Request entity too large', code: 40005 });
      const message = this.executeWebhook(hook, upload);
      if (this.loseAnswers > 0) {
        this.loseAnswers -= 1;
        req.socket.destroy();
        return;
      }
      if (url.searchParams.get('wait') !== 'true') {
        res.writeHead(204);
        res.end();
        return;
      }
      return send(200, message);
    }
    const message = this.messages.find((m) => m.id === messageId && m.webhook_id === hook.id);
    if (!message) return send(404, { message: 'Unknown Message', code: 10008 });
    if (req.method === 'PATCH') {
      message.content = (JSON.parse(raw.toString('utf8')) as { content: string }).content;
      message.edited_timestamp = new Date().toISOString();
      this.dispatch('MESSAGE_UPDATE', message);
      return send(200, message);
    }
    this.remove(message.id);
    res.writeHead(204);
    res.end();
  }
}
