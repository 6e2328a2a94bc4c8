import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { looksLikeImage, multipartParts } from './fake-telegram-multipart.js';

/**
 * A local Telegram Bot API written from its documentation (https://core.telegram.org/bots/api):
 * `/bot<token>/<method>` with JSON bodies (or query parameters) and `{ ok, result }` /
 * `{ ok: false, error_code, description, parameters }` answers; getMe, getUpdates (offset confirms
 * what is before it, a negative offset keeps only the last updates, limit, a long poll held until an
 * update or the timeout, allowed_updates kept from one call to the next, a second getUpdates ends the
 * first with 409 Conflict, 409 while a webhook is set, updates kept 24 hours), sendMessage (forum
 * topics, reply_parameters), editMessageText ("message is not modified"), deleteMessage, getChat,
 * setWebhook (then each update POSTed with the secret token header, one at a time, again until a 2xx),
 * deleteWebhook; 401 Unauthorized for a token it does not know, 429 with
 * `parameters.retry_after`. Files: getFile (400 `file is too big` over 20 MB) and the download at
 * `/file/bot<token>/<file_path>` (counted; another token is refused), sendPhoto and sendDocument as
 * multipart/form-data (grammY's `attach://` parts; caption up to 1,024; a photo that is not an image
 * refused with IMAGE_PROCESS_FAILED, over 10 MB too big; a document over 50 MB 413). People say, edit
 * and post in topics through the methods below, as updates.
 * Simpler than Telegram: plain HTTP on loopback (Telegram is HTTPS only), one bot, no
 * privacy mode (the bot gets every message of its chats), no flood limits but those a test asks for,
 * a clock of its own (`age`) for the 24 hours.
 */

export interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  last_name?: string;
  username?: string;
}

export interface TgChat {
  id: number;
  type: 'group' | 'supergroup' | 'channel';
  title: string;
  is_forum?: boolean;
}

export interface TgMessage {
  message_id: number;
  date: number;
  edit_date?: number;
  chat: TgChat;
  from?: TgUser;
  text?: string;
  message_thread_id?: number;
  is_topic_message?: boolean;
  reply_to_message?: TgMessage;
  [field: string]: unknown;
}

interface TgUpdate {
  update_id: number;
  /** When it was made, on the fake's clock (for the 24 hours). */
  at: number;
  kind: 'message' | 'edited_message' | 'channel_post' | 'edited_channel_post';
  message: TgMessage;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const DOWNLOAD_LIMIT = 20 * 1024 * 1024;

/** A file the fake keeps: its bytes (absent for one only declared, to test sizes without the bytes). */
interface TgStoredFile {
  file_id: string;
  file_unique_id: string;
  file_path: string;
  file_size: number;
  bytes?: Buffer;
}

export class FakeTelegram {
  readonly bot: TgUser = { id: 7000001, is_bot: true, first_name: 'groupwire', username: 'groupwire_bot' };
  readonly token = `${this.bot.id}:AAFakeTelegramTokenForTests_0123456789`;
  /** Every call, as `method` (for assertions on what the relay asked), and the sendMessage/edit bodies. */
  readonly calls: string[] = [];
  readonly bodies: Array<{ method: string; body: Record<string, any> }> = [];
  /** Every message in every chat, in order (the bot's too; deleted ones are taken out). */
  readonly messages: TgMessage[] = [];
  /** Files the fake keeps (said by people, or uploaded by the bot), by file_id. */
  readonly files = new Map<string, TgStoredFile>();
  /** Downloads of a file's bytes with the bot's token, and those refused (another token, no such path). */
  downloads = 0;
  downloadsRefused = 0;
  /** Every file the bot uploaded (sendPhoto, sendDocument), with its bytes as they came. */
  readonly uploads: Array<{ method: string; filename: string; bytes: Buffer; caption?: string; message_id: number }> = [];
  private nextFile = 1;
  /** Called with each message the bot posts, as the fake takes it (the platforms bench stamps its arrival). */
  onBotPost: ((message: TgMessage) => void) | undefined;
  private readonly chats = new Map<number, TgChat & { nextId: number }>();
  private updates: TgUpdate[] = [];
  private nextUpdate = 1;
  private allowed: string[] | undefined;
  private webhook = '';
  private webhookSecret = '';
  /** What setWebhook asked for; the fake delivers one update at a time whatever it is (Telegram's max_connections: 1). */
  webhookMaxConnections = 40;
  private delivering = false;
  /**
   * Where webhook deliveries really go: the TLS proxy in front of the relay's listener, played by the
   * test (Telegram posts to the https URL given to setWebhook; here, to this plain http address).
   */
  deliverTo: string | undefined;
  /** Webhook deliveries made, answered or not (retries included), and those answered 2xx. */
  readonly deliveries: Array<{ update_id: number; status: number }> = [];
  private skewMs = 0;
  private rateLimitNext = 0;
  private loseSends = 0;
  private loseSendsOf: string | undefined;
  private stallFiles = 0;
  private dropPolls = 0;
  private readonly waiters = new Set<() => void>();
  private heldPoll: ServerResponse | undefined;
  private http!: Server;

  static async start(): Promise<FakeTelegram> {
    const fake = new FakeTelegram();
    fake.http = createServer((req, res) => void fake.route(req, res));
    await new Promise<void>((ready) => fake.http.listen(0, '127.0.0.1', ready));
    return fake;
  }

  /** What the relay's `api_url` takes. */
  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  addChat(chat: TgChat): TgChat {
    this.chats.set(chat.id, { ...chat, nextId: 1 });
    return chat;
  }

  /** Makes a forum topic (a service message whose id is the topic's id). */
  addTopic(chatId: number, name: string): number {
    const message = this.make(chatId, { from: { id: 1, is_bot: false, first_name: 'Admin' }, forum_topic_created: { name } });
    return message.message_id;
  }

  /**
   * A file kept for people to send: its bytes, or only a declared size (`declaredSize` without bytes:
   * getFile refuses it past 20 MB, as Telegram does). Answers the Bot API's description of it.
   */
  addFile(bytes: Buffer | undefined, declaredSize?: number, extension = 'jpg'): { file_id: string; file_unique_id: string; file_size: number } {
    const n = this.nextFile++;
    const file: TgStoredFile = {
      file_id: `AgACAgFakeFile${n}`, file_unique_id: `AQADFake${n}`, file_path: `documents/file_${n}.${extension}`,
      file_size: declaredSize ?? bytes?.length ?? 0, ...(bytes ? { bytes } : {}),
    };
    this.files.set(file.file_id, file);
    return { file_id: file.file_id, file_unique_id: file.file_unique_id, file_size: file.file_size };
  }

  /** A person says something: a `message` update (a `channel_post` in a channel). */
  say(chatId: number, from: TgUser | undefined, text: string, options: { topic?: number; replyTo?: number; extra?: Record<string, unknown> } = {}): TgMessage {
    const chat = this.chats.get(chatId)!;
    const fields: Record<string, unknown> = { ...(from ? { from } : {}), text, ...options.extra };
    if (options.topic !== undefined) {
      fields.message_thread_id = options.topic;
      fields.is_topic_message = true;
    }
    // In a topic, a message that answers nothing answers the topic's first message (as Telegram sends it).
    const parent = options.replyTo ?? options.topic;
    if (parent !== undefined) fields.reply_to_message = this.find(chatId, parent);
    const message = this.make(chatId, fields);
    this.update(chat.type === 'channel' ? 'channel_post' : 'message', message);
    return message;
  }

  edit(chatId: number, messageId: number, text: string): TgMessage {
    const message = this.find(chatId, messageId)!;
    message.text = text;
    message.edit_date = this.nowS();
    this.update(this.chats.get(chatId)!.type === 'channel' ? 'edited_channel_post' : 'edited_message', { ...message });
    return message;
  }

  /** What the bot posted in a chat (a topic), oldest first. */
  botPosts(chatId: number, topic?: number): TgMessage[] {
    return this.messages.filter((m) => m.chat.id === chatId && m.from?.id === this.bot.id && (topic === undefined || m.message_thread_id === topic));
  }

  find(chatId: number, messageId: number): TgMessage | undefined {
    return this.messages.find((m) => m.chat.id === chatId && m.message_id === messageId);
  }

  /** What the fake holds for its pollers (the platforms bench reads it each round): updates kept, a poll held now. */
  holding(): Record<string, number> {
    return { updates_kept: this.updates.length, polling: this.heldPoll ? 1 : 0 };
  }

  /** Updates not yet confirmed by a getUpdates offset past them. */
  get pending(): number {
    return this.updates.length;
  }

  /** The next `count` sends, edits and deletions answer 429 with parameters.retry_after = `seconds`. */
  rateLimit(count: number): void {
    this.rateLimitNext = count;
  }

  /** The next `count` sendMessage, sendPhoto or sendDocument calls (those of `method` alone, when given) are carried out, but their answers are lost (a 502 from a proxy). */
  loseSendAnswers(count: number, method?: string): void {
    this.loseSends = count;
    this.loseSendsOf = method;
  }

  /** The next `count` sendPhoto or sendDocument calls are carried out but never answered (the test stops the relay meanwhile). */
  stallFileSends(count: number): void {
    this.stallFiles = count;
  }

  /** The next `count` getUpdates that have something to give lose their answer (a 502): nothing is confirmed. */
  dropPollAnswers(count: number): void {
    this.dropPolls = count;
  }

  /** Moves the fake's clock on: updates older than 24 hours are gone, as on Telegram. */
  age(ms: number): void {
    this.skewMs += ms;
  }

  setWebhook(url: string): void {
    this.webhook = url;
  }

  async close(): Promise<void> {
    for (const wake of this.waiters) wake();
    this.http.closeAllConnections();
    await new Promise<void>((done) => this.http.close(() => done()));
  }

  private now(): number {
    return Date.now() + this.skewMs;
  }

  private nowS(): number {
    return Math.floor(this.now() / 1000);
  }

  private make(chatId: number, fields: Record<string, unknown>): TgMessage {
    const chat = this.chats.get(chatId)!;
    const { nextId, ...shown } = chat;
    chat.nextId = nextId + 1;
    const message = { message_id: nextId, date: this.nowS(), chat: shown, ...fields } as TgMessage;
    this.messages.push(message);
    if (message.from?.id === this.bot.id) this.onBotPost?.(message);
    return message;
  }

  private update(kind: TgUpdate['kind'], message: TgMessage): void {
    this.updates.push({ update_id: this.nextUpdate++, at: this.now(), kind, message });
    for (const wake of this.waiters) wake();
    void this.deliver();
  }

  /**
   * Webhook delivery as Telegram does it with max_connections 1: the oldest update POSTed with the
   * secret token header, again (after a pause) until a 2xx, then the next; stops when the webhook is
   * deleted or the fake closes.
   */
  private async deliver(): Promise<void> {
    if (this.delivering || !this.webhook || !this.deliverTo) return;
    this.delivering = true;
    try {
      while (this.webhook && this.deliverTo && this.http.listening) {
        const next = this.available(0, 1)[0];
        if (!next) return;
        let status = 0;
        try {
          const answer = await fetch(this.deliverTo, {
            method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': this.webhookSecret },
            body: JSON.stringify({ update_id: next.update_id, [next.kind]: next.message }), signal: AbortSignal.timeout(10_000),
          });
          status = answer.status;
          await answer.arrayBuffer();
        } catch {
          status = 0;
        }
        this.deliveries.push({ update_id: next.update_id, status });
        if (status >= 200 && status < 300) this.updates = this.updates.filter((u) => u !== next);
        else await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      this.delivering = false;
    }
  }

  /** What a getUpdates gets: the updates from `offset` on (a negative offset: the last -offset), of the allowed kinds. */
  private available(offset: number, limit: number): TgUpdate[] {
    this.updates = this.updates.filter((u) => u.at > this.now() - DAY_MS);
    if (offset < 0) this.updates = this.updates.slice(offset);
    else this.updates = this.updates.filter((u) => u.update_id >= offset);
    return this.updates.filter((u) => !this.allowed || this.allowed.length === 0 || this.allowed.includes(u.kind)).slice(0, limit);
  }

  private held(res: ServerResponse, ms: number): Promise<void> {
    return new Promise((wake) => {
      const done = () => (clearTimeout(timer), this.waiters.delete(done), res.off('close', done), wake());
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
      res.once('close', done);
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBytes = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://fake');
    const answer = (status: number, value: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    const ok = (result: unknown) => answer(200, { ok: true, result });
    const error = (status: number, description: string, parameters?: Record<string, unknown>) =>
      answer(status, { ok: false, error_code: status, description, ...(parameters ? { parameters } : {}) });
    const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (download) {
      const file = download[1] === this.token ? [...this.files.values()].find((f) => f.file_path === download[2]) : undefined;
      if (!file?.bytes) {
        this.downloadsRefused += 1;
        return error(download[1] === this.token ? 404 : 401, download[1] === this.token ? 'Not Found' : 'Unauthorized');
      }
      this.downloads += 1;
      return void res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(file.bytes.length) }).end(file.bytes);
    }
    const m = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!m) return error(404, 'Not Found');
    const [, token, method] = m as unknown as [string, string, string];
    if (token !== this.token) return error(401, 'Unauthorized');
    const boundary = /^multipart\/form-data;\s*boundary=(.+)$/i.exec(req.headers['content-type'] ?? '')?.[1];
    const parts = boundary ? multipartParts(rawBytes, boundary.replace(/^"(.*)"$/, '$1')) : [];
    const raw = boundary ? '' : rawBytes.toString('utf8');
    const body: Record<string, any> = boundary
      // Multipart fields are text; grammY writes objects as JSON.
      ? Object.fromEntries(parts.filter((p) => p.filename === undefined).map((p) => {
        const text = p.value.toString('utf8');
        return [p.name, /^[[{]/.test(text) ? JSON.parse(text) : text];
      }))
      : raw ? JSON.parse(raw) : Object.fromEntries(url.searchParams);
    this.calls.push(method);
    const chat = body.chat_id === undefined ? undefined : this.chats.get(Number(body.chat_id));
    switch (method) {
      case 'getMe':
        return ok({ ...this.bot, can_join_groups: true, can_read_all_group_messages: true, supports_inline_queries: false });
      case 'setWebhook':
        if (!/^https:\/\//.test(String(body.url ?? ''))) return error(400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
        this.webhook = String(body.url);
        this.webhookSecret = String(body.secret_token ?? '');
        this.webhookMaxConnections = Number(body.max_connections ?? 40);
        if (Array.isArray(body.allowed_updates)) this.allowed = body.allowed_updates;
        if (body.drop_pending_updates) this.updates = [];
        this.bodies.push({ method, body });
        void this.deliver();
        return ok(true);
      case 'deleteWebhook':
        this.webhook = '';
        this.webhookSecret = '';
        if (body.drop_pending_updates) this.updates = [];
        return ok(true);
      case 'getFile': {
        const file = this.files.get(String(body.file_id ?? ''));
        if (!file) return error(400, 'Bad Request: invalid file_id');
        if (file.file_size > DOWNLOAD_LIMIT) return error(400, 'Bad Request: file is too big');
        return ok({ file_id: file.file_id, file_unique_id: file.file_unique_id, file_size: file.file_size, file_path: file.file_path });
      }
      case 'sendPhoto':
      case 'sendDocument': {
        this.bodies.push({ method, body });
        if (!chat) return error(400, 'Bad Request: chat not found');
        if (this.rateLimitNext > 0) {
          this.rateLimitNext -= 1;
          return error(429, 'Too Many Requests: retry after 1', { retry_after: 1 });
        }
        const field = method === 'sendPhoto' ? 'photo' : 'document';
        const attach = /^attach:\/\/(.+)$/.exec(String(body[field] ?? ''))?.[1];
        const part = parts.find((p) => p.filename !== undefined && p.name === attach);
        if (!part) return error(400, `Bad Request: there is no ${field} in the request`);
        const caption = body.caption === undefined ? undefined : String(body.caption);
        if (caption !== undefined && caption.length > 1024) return error(400, 'Bad Request: message caption is too long');
        if (method === 'sendPhoto' && part.value.length > 10 * 1024 * 1024) return error(400, 'Bad Request: PHOTO_SAVE_FILE_INVALID');
        if (method === 'sendPhoto' && !looksLikeImage(part.value)) return error(400, 'Bad Request: IMAGE_PROCESS_FAILED');
        if (part.value.length > 50 * 1024 * 1024) return error(413, 'Request Entity Too Large');
        const stored = this.addFile(Buffer.from(part.value));
        const thread = body.message_thread_id === undefined ? undefined : Number(body.message_thread_id);
        const parentId = body.reply_parameters?.message_id;
        const parent = parentId === undefined ? undefined : this.find(chat.id, Number(parentId));
        const sent = this.make(chat.id, {
          from: this.bot,
          ...(method === 'sendPhoto' ? { photo: [{ ...stored, width: 1, height: 1 }] } : { document: { ...stored, file_name: part.filename } }),
          ...(caption !== undefined ? { caption } : {}),
          ...(thread !== undefined ? { message_thread_id: thread, is_topic_message: true } : {}),
          ...(parent ? { reply_to_message: parent } : {}),
        });
        this.uploads.push({ method, filename: part.filename!, bytes: Buffer.from(part.value), ...(caption !== undefined ? { caption } : {}), message_id: sent.message_id });
        if (this.stallFiles > 0) {
          this.stallFiles -= 1;
          return;
        }
        if (this.loseSends > 0 && (this.loseSendsOf ?? method) === method) {
          this.loseSends -= 1;
          return void res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>502 Bad Gateway</body></html>');
        }
        return ok(sent);
      }
      case 'getChat':
        return chat ? ok({ ...chat, nextId: undefined }) : error(400, 'Bad Request: chat not found');
      case 'getUpdates': {
        if (this.webhook) return error(409, 'Conflict: can\'t use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first');
        // One poller at a time: a new getUpdates ends the one held (as Telegram does).
        if (this.heldPoll && !this.heldPoll.destroyed) {
          const previous = this.heldPoll;
          this.heldPoll = undefined;
          previous.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error_code: 409, description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running' }));
        }
        if (Array.isArray(body.allowed_updates)) this.allowed = body.allowed_updates;
        const offset = Number(body.offset ?? 0);
        const limit = Math.min(100, Number(body.limit ?? 100));
        const deadline = Date.now() + Number(body.timeout ?? 0) * 1000;
        let found = this.available(offset, limit);
        this.heldPoll = res;
        while (found.length === 0 && Date.now() < deadline && this.http.listening && !res.destroyed && this.heldPoll === res) {
          await this.held(res, deadline - Date.now());
          found = this.available(offset < 0 ? 0 : offset, limit);
        }
        if (res.destroyed || res.writableEnded) return;
        if (this.heldPoll === res) this.heldPoll = undefined;
        if (found.length > 0 && this.dropPolls > 0) {
          this.dropPolls -= 1;
          return void res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>502 Bad Gateway</body></html>');
        }
        return ok(found.map((u) => ({ update_id: u.update_id, [u.kind]: u.message })));
      }
      case 'sendMessage':
      case 'editMessageText':
      case 'deleteMessage': {
        this.bodies.push({ method, body });
        if (!chat) return error(400, 'Bad Request: chat not found');
        if (this.rateLimitNext > 0) {
          this.rateLimitNext -= 1;
          return error(429, 'Too Many Requests: retry after 1', { retry_after: 1 });
        }
        if (method === 'deleteMessage') {
          const index = this.messages.findIndex((x) => x.chat.id === chat.id && x.message_id === Number(body.message_id));
          if (index < 0) return error(400, 'Bad Request: message to delete not found');
          if (this.messages[index]!.from?.id !== this.bot.id) return error(400, 'Bad Request: message can\'t be deleted');
          this.messages.splice(index, 1);
          return ok(true);
        }
        const text = String(body.text ?? '');
        if (text.trim() === '') return error(400, 'Bad Request: message text is empty');
        if (text.length > 4096) return error(400, 'Bad Request: message is too long');
        if (method === 'editMessageText') {
          const target = this.find(chat.id, Number(body.message_id));
          if (!target) return error(400, 'Bad Request: message to edit not found');
          if (target.from?.id !== this.bot.id) return error(400, 'Bad Request: message can\'t be edited');
          if (target.text === text) return error(400, 'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message');
          target.text = text;
          target.edit_date = this.nowS();
          return ok(target);
        }
        const thread = body.message_thread_id === undefined ? undefined : Number(body.message_thread_id);
        if (thread !== undefined && !this.find(chat.id, thread)?.forum_topic_created) return error(400, 'Bad Request: message thread not found');
        const parentId = body.reply_parameters?.message_id;
        const parent = parentId === undefined ? undefined : this.find(chat.id, Number(parentId));
        if (parentId !== undefined && !parent && !body.reply_parameters.allow_sending_without_reply) return error(400, 'Bad Request: message to be replied not found');
        const sent = this.make(chat.id, {
          from: this.bot, text,
          ...(thread !== undefined ? { message_thread_id: thread, is_topic_message: true } : {}),
          ...(parent ?? (thread !== undefined ? this.find(chat.id, thread) : undefined) ? { reply_to_message: parent ?? this.find(chat.id, thread!) } : {}),
          ...(body.parse_mode ? { parse_mode_used: body.parse_mode } : {}),
        });
        if (method === 'sendMessage' && this.loseSends > 0 && (this.loseSendsOf ?? method) === method) {
          this.loseSends -= 1;
          return void res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>502 Bad Gateway</body></html>');
        }
        return ok(sent);
      }
      default:
        return error(404, 'Not Found: method not found');
    }
  }
}
