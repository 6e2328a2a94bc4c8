import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeFile, FakeFiles } from './files.js';
import { SocketMode, type SentEnvelope } from './socket-mode.js';
import { APP_ID, BOT, defaultChannels, defaultUsers, type FakeChannel, type FakeUser } from './state.js';
import { WebApi, type Answer, type Change, type Fault, type Posted, type StoredMessage } from './web-api.js';

export interface FakeSlackOptions {
  users?: FakeUser[];
  channels?: FakeChannel[];
  /**
   * Send the relay's own posts back as message events (subtype bot_message, bot_id), and its updates
   * and deletions as message_changed / message_deleted, as Slack does. Default true.
   */
  echoPosts?: boolean;
}

/**
 * A local Slack for tests, on plain HTTP over loopback: the Web API at `apiUrl` (the SDK's
 * slackApiUrl) and Socket Mode websockets at the URLs apps.connections.open hands out. It records
 * what it received (`api.calls`, `posts`, `acks`) and can be told to fail: `rateLimit`, `fault`,
 * `loseAnswer` (carried out, never answered), `revoke` (a token answers invalid_auth), and on the
 * socket `disconnect`, `drop`, duplicates.
 */
export class FakeSlack {
  readonly api: WebApi;
  readonly socket = new SocketMode();
  private server!: Server;
  private base = '';
  private eventCount = 0;

  private constructor(private readonly options: FakeSlackOptions) {
    this.api = new WebApi(options.users ?? defaultUsers(), options.channels ?? defaultChannels(), {
      socketUrl: () => this.socket.url(this.base.replace(/^http/, 'ws')),
      base: () => this.base,
      posted: (post) => this.echo(post),
      shared: (channel, message) => this.echoShare(channel, message),
      changed: (change, after) => this.echoChange(change, after),
    });
  }

  static async start(options: FakeSlackOptions = {}): Promise<FakeSlack> {
    const fake = new FakeSlack(options);
    fake.server = createServer((request, response) => void fake.request(request, response));
    fake.server.on('upgrade', (request, socket, head) => fake.socket.upgrade(request, socket, head));
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    fake.base = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  /** The Web API's base, for `api_url` / slackApiUrl. */
  get apiUrl(): string {
    return `${this.base}/api/`;
  }

  get posts(): Posted[] {
    return this.api.posts;
  }

  /** People's files, the app's uploads and shares, and the downloads made (files.ts). */
  get files(): FakeFiles {
    return this.api.files;
  }

  get acks(): string[] {
    return this.socket.acks;
  }

  /** The next `times` calls of `method` answer 429 with Retry-After `seconds`. */
  rateLimit(method: string, times: number, seconds = 1): void {
    this.api.fault(method, { times, status: 429, retryAfterSeconds: seconds });
  }

  /** The next `times` calls of `method` fail with a Slack error (HTTP 200, ok: false) or an HTTP status. */
  fault(method: string, fault: Fault): void {
    this.api.fault(method, fault);
  }

  /**
   * The next `times` calls of `method` are carried out (a post is stored and echoed) but never
   * answered: `destroy` drops the connection at once (an answer lost on the way), `hang` keeps it open
   * unanswered (the caller's time limit, or the caller killed while it waits).
   */
  loseAnswer(method: string, how: 'destroy' | 'hang' = 'destroy', times = 1): void {
    this.api.fault(method, { times, lose: how });
  }

  /** From now on this token answers invalid_auth. */
  revoke(kind: 'bot' | 'app'): void {
    this.api.revoked.add(kind);
  }

  /** A person's message in a channel, as a Socket Mode events_api envelope (kept: it can be edited, deleted, replied to). */
  message(channel: string, user: string, text: string, extra: Record<string, unknown> = {}, options: { eventId?: string } = {}): SentEnvelope {
    const ts = (extra.ts as string | undefined) ?? this.api.clock.ts();
    this.eventCount += 1;
    if (!extra.bot_id && !extra.subtype) {
      this.api.store(channel, { type: 'message', ts, text, user, ...(typeof extra.thread_ts === 'string' ? { thread_ts: extra.thread_ts } : {}) });
    }
    return this.socket.send({
      type: 'message', channel, user, text, ts, event_ts: ts, channel_type: 'channel', team: 'T0FAKE0001',
      client_msg_id: `msg-${this.eventCount}`, ...extra,
    }, options);
  }

  /**
   * A person shares a file in a channel, with `text`: the file kept (served at its url_private_download
   * with the bot token), and the message event Slack sends (subtype file_share, `files` with the file
   * object). `override` changes fields of the file object in the event (a hostile URL, say).
   */
  shareFile(channel: string, user: string, text: string, file: { name: string; mimetype: string; bytes: Buffer }, override: Record<string, unknown> = {}): { file: FakeFile; envelope: SentEnvelope } {
    const stored = this.api.files.add(user, file);
    const ts = this.api.clock.ts();
    stored.shares[channel] = [{ ts }];
    const object = { ...this.api.files.object(stored), ...override };
    this.api.store(channel, { type: 'message', subtype: 'file_share', ts, text, user, upload: true, files: [object] });
    this.eventCount += 1;
    const envelope = this.socket.send({
      type: 'message', subtype: 'file_share', channel, user, text, ts, event_ts: ts, channel_type: 'channel', team: 'T0FAKE0001',
      upload: true, display_as_bot: false, files: [object], client_msg_id: `msg-${this.eventCount}`,
    });
    return { file: stored, envelope };
  }

  /** A person's reply in the thread of `parentTs` (Slack's message event with `thread_ts`). */
  threadReply(channel: string, user: string, text: string, parentTs: string, extra: Record<string, unknown> = {}): SentEnvelope {
    return this.message(channel, user, text, { thread_ts: parentTs, parent_user_id: this.api.message(channel, parentTs)?.user, ...extra });
  }

  /**
   * A person edits their message `ts`: the Events API's message_changed (hidden, `message` with the new
   * text and `edited: {user, ts}`, `previous_message` as it was). Answers the envelope; the edit's ts is
   * `message.edited.ts`.
   */
  messageChanged(channel: string, ts: string, text: string, options: { eventId?: string } = {}): SentEnvelope {
    const before = this.api.message(channel, ts);
    if (!before) throw new Error(`the fake Slack has no message ${ts} in ${channel}`);
    const eventTs = this.api.clock.ts();
    const after: StoredMessage = { ...before, text, edited: { user: before.user ?? before.bot_id ?? '', ts: eventTs } };
    this.api.store(channel, after);
    return this.socket.send({
      type: 'message', subtype: 'message_changed', hidden: true, channel, ts: eventTs, event_ts: eventTs, channel_type: 'channel',
      message: after, previous_message: before,
    }, options);
  }

  /** A person deletes their message `ts`: the Events API's message_deleted (hidden, `deleted_ts`, `previous_message`). */
  messageDeleted(channel: string, ts: string, options: { eventId?: string } = {}): SentEnvelope {
    const before = this.api.message(channel, ts);
    if (!before) throw new Error(`the fake Slack has no message ${ts} in ${channel}`);
    this.api.messages.get(channel)!.delete(ts);
    const eventTs = this.api.clock.ts();
    return this.socket.send({
      type: 'message', subtype: 'message_deleted', hidden: true, channel, ts: eventTs, event_ts: eventTs, deleted_ts: ts, channel_type: 'channel',
      previous_message: before,
    }, options);
  }

  /** Any event (message subtypes, other types). */
  event(event: Record<string, unknown>, options: { eventId?: string } = {}): SentEnvelope {
    return this.socket.send(event, options);
  }

  private echo(post: Posted): void {
    if (this.options.echoPosts === false) return;
    this.socket.send({
      type: 'message', subtype: 'bot_message', channel: post.channel, text: post.text, ts: post.ts, event_ts: post.ts,
      username: post.username, bot_id: BOT.botId, app_id: APP_ID, channel_type: 'channel', ...(post.thread_ts ? { thread_ts: post.thread_ts } : {}),
    });
  }

  /** The app's own file share, as Slack sends it back: a file_share message event by the app's bot user. */
  private echoShare(channel: string, message: StoredMessage): void {
    if (this.options.echoPosts === false) return;
    this.socket.send({ ...message, channel, event_ts: message.ts, channel_type: 'channel', app_id: APP_ID });
  }

  /** The app's own chat.update / chat.delete, as Slack sends them back: message_changed / message_deleted of a bot_message. */
  private echoChange(change: Change, after: StoredMessage | undefined): void {
    if (this.options.echoPosts === false) return;
    const eventTs = this.api.clock.ts();
    const common = { type: 'message', hidden: true, channel: change.channel, ts: eventTs, event_ts: eventTs, channel_type: 'channel', previous_message: change.before };
    this.socket.send(after
      ? { ...common, subtype: 'message_changed', message: after }
      : { ...common, subtype: 'message_deleted', deleted_ts: change.ts });
  }

  private async request(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.base);
    // Files' bytes, both ways: not a Web API call (no form or JSON body).
    if (this.api.files.serve(request, response, url.pathname)) return;
    const method = url.pathname.startsWith('/api/') ? url.pathname.slice('/api/'.length) : '';
    const body = await readBody(request);
    const args: Record<string, string> = Object.fromEntries(url.searchParams);
    const type = request.headers['content-type'] ?? '';
    if (type.includes('application/json') && body) {
      for (const [key, value] of Object.entries(JSON.parse(body) as Record<string, unknown>)) args[key] = typeof value === 'string' ? value : JSON.stringify(value);
    } else if (body) {
      for (const [key, value] of new URLSearchParams(body)) args[key] = value;
    }
    const bearer = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1] ?? args.token;
    delete args.token;
    const answer: Answer = method ? this.api.call(method, bearer, args) : { status: 404, body: { ok: false, error: 'unknown_method' } };
    // Carried out, never answered: the connection dies now, or stays open until the caller goes away.
    if (answer.lost === 'destroy') return void request.socket.destroy();
    if (answer.lost === 'hang') return;
    response.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', ...answer.headers });
    response.end(JSON.stringify(answer.body));
  }

  async close(): Promise<void> {
    this.socket.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}
