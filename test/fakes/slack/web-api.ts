import { fail, ok, parseMetadata, presentChannel, presentUser, rateLimited } from './answers.js';
import { FakeFiles } from './files.js';
import { conversationsHistory, conversationsReplies, type Listing } from './history.js';
import { APP_ID, BOT, Clock, mentionsIn, TEAM, TOKENS, type FakeChannel, type FakeUser } from './state.js';

/** One Web API call as the fake received and answered it. */
export interface ApiCall {
  method: string;
  token: string | undefined;
  args: Record<string, string>;
  status: number;
  error?: string;
  at: number;
}

/** A chat.postMessage the fake accepted, with the mentions Slack would have made of it. */
export interface Posted {
  channel: string;
  ts: string;
  text: string;
  /** A thread reply: the parent's ts. */
  thread_ts?: string;
  username?: string;
  icon_url?: string;
  icon_emoji?: string;
  args: Record<string, string>;
  mentions: string[];
}

/** A message in a channel as the fake keeps it: a person's (`user`) or the app's (`bot_id`), as it is now. */
export interface StoredMessage {
  type: 'message';
  subtype?: string;
  ts: string;
  text: string;
  user?: string;
  bot_id?: string;
  app_id?: string;
  username?: string;
  thread_ts?: string;
  edited?: { user: string; ts: string };
  /** Message metadata (chat.postMessage's `metadata`): not shown in the channel; conversations.* answer it with include_all_metadata. */
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  /** A file share: the files (Slack's file objects), and `upload` when they were uploaded with it. */
  files?: Array<Record<string, unknown>>;
  upload?: boolean;
}

/** A chat.update or chat.delete the fake applied. */
export interface Change {
  method: 'chat.update' | 'chat.delete';
  channel: string;
  ts: string;
  /** chat.update: the new text. */
  text?: string;
  args: Record<string, string>;
  /** The message before the change. */
  before: StoredMessage;
}

/**
 * A fault for the next calls of a method: an HTTP status (429 with Retry-After), a Slack error (with
 * `needed`, the scope a missing_scope names), or `lose`: the call is carried out (a post is stored)
 * but its answer never reaches the caller — `destroy` closes the HTTP connection at once (a lost
 * answer), `hang` leaves it open unanswered (a bot killed during the call, or its time limit).
 */
export interface Fault {
  times: number;
  status?: number;
  error?: string;
  needed?: string;
  retryAfterSeconds?: number;
  lose?: 'destroy' | 'hang';
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
  /** The call was carried out, but the caller gets no answer (Fault.lose). */
  lost?: 'destroy' | 'hang';
}

/**
 * The Web API methods the relay uses, in Slack's documented shapes: auth.test, chat.postMessage (with
 * `thread_ts` and `metadata`), chat.update, chat.delete, users.info, conversations.info,
 * conversations.history, conversations.replies (history.ts), files.getUploadURLExternal and
 * files.completeUploadExternal (files.ts), apps.connections.open (the app token's).
 * Every channel's messages are kept (`messages`), so updates and deletions act on them. Tokens come as
 * `Authorization: Bearer`; a wrong one answers invalid_auth, a token of the wrong kind
 * not_allowed_token_type. Answers are 200 with `ok`, except a rate limit: 429, Retry-After and
 * `{ ok: false, error: 'ratelimited' }`. A call inside a rate limit window is answered 429 again and
 * counted in `early` (the client did not honour Retry-After).
 */
export class WebApi {
  readonly calls: ApiCall[] = [];
  readonly posts: Posted[] = [];
  /** chat.update and chat.delete calls that changed a message, in order. */
  readonly changes: Change[] = [];
  /** Every channel's messages (people's and the app's), by ts: what chat.update and chat.delete act on. */
  readonly messages = new Map<string, Map<string, StoredMessage>>();
  /** Calls made before the Retry-After of their method had passed, by method. */
  readonly early: Record<string, number> = {};
  readonly users = new Map<string, FakeUser>();
  readonly channels = new Map<string, FakeChannel>();
  readonly revoked = new Set<string>();
  private readonly faults = new Map<string, Fault[]>();
  private readonly limitedUntil = new Map<string, number>();
  /** One clock for the whole workspace: every ts is unique. */
  readonly clock = new Clock();
  /** Files: people's, and those the app uploads (files.ts). */
  readonly files: FakeFiles;

  constructor(
    users: FakeUser[],
    channels: FakeChannel[],
    private readonly hooks: {
      socketUrl(): string; base(): string; posted(post: Posted): void; changed(change: Change, after: StoredMessage | undefined): void;
      shared(channel: string, message: StoredMessage): void;
    },
  ) {
    this.files = new FakeFiles(() => hooks.base(), this.clock, this.revoked);
    for (const user of users) this.users.set(user.id, user);
    for (const channel of channels) this.channels.set(channel.id, channel);
  }

  /** The next `fault.times` calls of `method` fail so. */
  fault(method: string, fault: Fault): void {
    const list = this.faults.get(method) ?? [];
    list.push({ ...fault });
    this.faults.set(method, list);
  }

  clearFaults(): void {
    this.faults.clear();
    this.limitedUntil.clear();
  }

  call(method: string, token: string | undefined, args: Record<string, string>): Answer {
    const answer = this.answer(method, token, args);
    const body = answer.body as { ok?: boolean; error?: string };
    this.calls.push({ method, token, args, status: answer.status, error: body.ok ? undefined : body.error, at: Date.now() });
    return answer;
  }

  private answer(method: string, token: string | undefined, args: Record<string, string>): Answer {
    const limited = this.limitedUntil.get(method);
    if (limited !== undefined && Date.now() < limited - 100) {
      this.early[method] = (this.early[method] ?? 0) + 1;
      return rateLimited(Math.ceil((limited - Date.now()) / 1000));
    }
    const fault = this.faults.get(method)?.[0];
    if (fault) {
      fault.times -= 1;
      if (fault.times <= 0) this.faults.get(method)!.shift();
      if (fault.status === 429) {
        const seconds = fault.retryAfterSeconds ?? 1;
        this.limitedUntil.set(method, Date.now() + seconds * 1000);
        return rateLimited(seconds);
      }
      if (fault.lose) return { ...this.serve(method, token, args), lost: fault.lose };
      if (fault.status && fault.status !== 200) return { status: fault.status, body: { ok: false, error: fault.error ?? 'internal_error' } };
      return fail(fault.error ?? 'internal_error', fault.needed ? { needed: fault.needed, provided: 'chat:write,users:read' } : {});
    }
    return this.serve(method, token, args);
  }

  /** The method as Slack carries it out, faults aside. */
  private serve(method: string, token: string | undefined, args: Record<string, string>): Answer {
    const kind = token === TOKENS.bot ? 'bot' : token === TOKENS.app ? 'app' : undefined;
    if (!token) return fail('not_authed');
    if (!kind || this.revoked.has(kind)) return fail('invalid_auth');
    if ((method === 'apps.connections.open') !== (kind === 'app')) return fail('not_allowed_token_type');
    switch (method) {
      case 'auth.test':
        return ok({ url: `https://${TEAM.domain}.slack.com/`, team: TEAM.name, user: BOT.name, team_id: TEAM.id, user_id: BOT.userId, bot_id: BOT.botId, is_enterprise_install: false });
      case 'apps.connections.open':
        return ok({ url: this.hooks.socketUrl() });
      case 'users.info': {
        const user = this.users.get(args.user ?? '');
        if (!user) return fail('user_not_found');
        return ok({ user: presentUser(user) });
      }
      case 'conversations.info': {
        const channel = this.channels.get(args.channel ?? '');
        if (!channel) return fail('channel_not_found');
        return ok({ channel: presentChannel(channel) });
      }
      case 'chat.postMessage':
        return this.postMessage(args);
      case 'chat.update':
        return this.update(args);
      case 'chat.delete':
        return this.delete(args);
      case 'conversations.history':
        return this.listing(args, (messages) => conversationsHistory(messages, args));
      case 'conversations.replies':
        if (!args.ts) return fail('invalid_arguments');
        return this.listing(args, (messages) => conversationsReplies(messages, args));
      case 'files.getUploadURLExternal':
        return this.files.getUploadURLExternal(args);
      case 'files.completeUploadExternal':
        return this.completeUpload(args);
      default:
        return fail('unknown_method');
    }
  }

  /** files.completeUploadExternal into a channel id the app is in (files.ts). */
  private completeUpload(args: Record<string, string>): Answer {
    const channel = this.channels.get(args.channel_id ?? '');
    if (!channel) return fail('channel_not_found');
    if (!channel.is_member) return fail('not_in_channel');
    return this.files.complete(args, channel.id, (message) => {
      this.store(channel.id, message);
      this.hooks.shared(channel.id, message);
    });
  }

  /** Keeps a message (a person's, said through the harness, or the app's post). */
  store(channel: string, message: StoredMessage): void {
    let messages = this.messages.get(channel);
    if (!messages) this.messages.set(channel, (messages = new Map()));
    messages.set(message.ts, message);
  }

  message(channel: string, ts: string): StoredMessage | undefined {
    return this.messages.get(channel)?.get(ts);
  }

  /** The now-visible replies of a thread (messages whose thread_ts is the parent's), oldest first. */
  thread(channel: string, parentTs: string): StoredMessage[] {
    return [...(this.messages.get(channel)?.values() ?? [])].filter((m) => m.thread_ts === parentTs && m.ts !== parentTs);
  }

  /**
   * chat.update (https://api.slack.com/methods/chat.update): `channel` must be an id, `ts` one of the
   * app's own messages there (a person's: cant_update_message); answers `channel`, `ts`, `text`, `message`.
   */
  private update(args: Record<string, string>): Answer {
    const found = this.changeable(args, 'cant_update_message');
    if ('answer' in found) return found.answer;
    const text = args.text ?? '';
    if (text === '') return fail('no_text');
    const { channel, before } = found;
    const after: StoredMessage = { ...before, text, edited: { user: BOT.userId, ts: this.clock.ts() } };
    this.store(channel, after);
    const change: Change = { method: 'chat.update', channel, ts: before.ts, text, args, before };
    this.changes.push(change);
    this.hooks.changed(change, after);
    return ok({ channel, ts: before.ts, text, message: { type: 'message', subtype: 'bot_message', text, user: BOT.userId, bot_id: BOT.botId, app_id: APP_ID, username: before.username } });
  }

  /** chat.delete (https://api.slack.com/methods/chat.delete): the same checks; answers `channel` and `ts`. */
  private delete(args: Record<string, string>): Answer {
    const found = this.changeable(args, 'cant_delete_message');
    if ('answer' in found) return found.answer;
    const { channel, before } = found;
    this.messages.get(channel)!.delete(before.ts);
    const change: Change = { method: 'chat.delete', channel, ts: before.ts, args, before };
    this.changes.push(change);
    this.hooks.changed(change, undefined);
    return ok({ channel, ts: before.ts });
  }

  /** conversations.history / .replies of a channel id the app is in. */
  private listing(args: Record<string, string>, list: (messages: Iterable<StoredMessage>) => Listing): Answer {
    const channel = this.channels.get(args.channel ?? '');
    if (!channel) return fail('channel_not_found');
    if (!channel.is_member) return fail('not_in_channel');
    const listed = list(this.messages.get(channel.id)?.values() ?? []);
    return 'error' in listed ? fail(listed.error) : ok(listed.body);
  }

  private changeable(args: Record<string, string>, notOwn: string): { channel: string; before: StoredMessage } | { answer: Answer } {
    const channel = this.channels.get(args.channel ?? '');
    if (!channel) return { answer: fail('channel_not_found') };
    const before = this.message(channel.id, args.ts ?? '');
    if (!before) return { answer: fail('message_not_found') };
    if (before.bot_id !== BOT.botId) return { answer: fail(notOwn) };
    return { channel: channel.id, before };
  }

  private postMessage(args: Record<string, string>): Answer {
    const ref = args.channel ?? '';
    const channel = this.channels.get(ref) ?? [...this.channels.values()].find((c) => c.name === ref.replace(/^#/, ''));
    if (!channel) return fail('channel_not_found');
    if (!channel.is_member) return fail('not_in_channel');
    const text = args.text ?? '';
    if (text === '') return fail('no_text');
    const metadata = args.metadata === undefined ? undefined : parseMetadata(args.metadata);
    if (metadata === null) return fail('invalid_metadata_format');
    const ts = this.clock.ts();
    const post: Posted = {
      channel: channel.id, ts, text, username: args.username, icon_url: args.icon_url, icon_emoji: args.icon_emoji, args, mentions: mentionsIn(text),
    };
    if (args.thread_ts) post.thread_ts = args.thread_ts;
    this.posts.push(post);
    this.store(channel.id, {
      type: 'message', subtype: 'bot_message', ts, text, bot_id: BOT.botId, app_id: APP_ID, username: args.username,
      ...(args.thread_ts ? { thread_ts: args.thread_ts } : {}), ...(metadata ? { metadata } : {}),
    });
    this.hooks.posted(post);
    return ok({
      channel: channel.id, ts,
      message: { type: 'message', subtype: 'bot_message', text, ts, username: args.username, bot_id: BOT.botId, app_id: APP_ID, ...(args.thread_ts ? { thread_ts: args.thread_ts } : {}) },
    });
  }
}
