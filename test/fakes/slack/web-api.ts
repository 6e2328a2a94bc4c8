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
  username?: string;
  icon_url?: string;
  icon_emoji?: string;
  args: Record<string, string>;
  mentions: string[];
}

/** A fault for the next calls of a method: an HTTP status (429 with Retry-After) or a Slack error. */
export interface Fault {
  times: number;
  status?: number;
  error?: string;
  retryAfterSeconds?: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

/**
 * The Web API methods the relay uses, in Slack's documented shapes: auth.test, chat.postMessage,
 * users.info, conversations.info, apps.connections.open (the app token's). Tokens come as
 * `Authorization: Bearer`; a wrong one answers invalid_auth, a token of the wrong kind
 * not_allowed_token_type. Answers are 200 with `ok`, except a rate limit: 429, Retry-After and
 * `{ ok: false, error: 'ratelimited' }`. A call inside a rate limit window is answered 429 again and
 * counted in `early` (the client did not honour Retry-After).
 */
export class WebApi {
  readonly calls: ApiCall[] = [];
  readonly posts: Posted[] = [];
  /** Calls made before the Retry-After of their method had passed, by method. */
  readonly early: Record<string, number> = {};
  readonly users = new Map<string, FakeUser>();
  readonly channels = new Map<string, FakeChannel>();
  readonly revoked = new Set<string>();
  private readonly faults = new Map<string, Fault[]>();
  private readonly limitedUntil = new Map<string, number>();
  private readonly clock = new Clock();

  constructor(
    users: FakeUser[],
    channels: FakeChannel[],
    private readonly hooks: { socketUrl(): string; posted(post: Posted): void },
  ) {
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
      if (fault.status && fault.status !== 200) return { status: fault.status, body: { ok: false, error: fault.error ?? 'internal_error' } };
      return fail(fault.error ?? 'internal_error');
    }
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
      default:
        return fail('unknown_method');
    }
  }

  private postMessage(args: Record<string, string>): Answer {
    const ref = args.channel ?? '';
    const channel = this.channels.get(ref) ?? [...this.channels.values()].find((c) => c.name === ref.replace(/^#/, ''));
    if (!channel) return fail('channel_not_found');
    if (!channel.is_member) return fail('not_in_channel');
    const text = args.text ?? '';
    if (text === '') return fail('no_text');
    const ts = this.clock.ts();
    const post: Posted = {
      channel: channel.id, ts, text, username: args.username, icon_url: args.icon_url, icon_emoji: args.icon_emoji, args, mentions: mentionsIn(text),
    };
    this.posts.push(post);
    this.hooks.posted(post);
    return ok({
      channel: channel.id, ts,
      message: { type: 'message', subtype: 'bot_message', text, ts, username: args.username, bot_id: BOT.botId, app_id: APP_ID },
    });
  }
}

function ok(fields: Record<string, unknown>): Answer {
  return { status: 200, body: { ok: true, ...fields } };
}

function fail(error: string): Answer {
  return { status: 200, body: { ok: false, error } };
}

function rateLimited(seconds: number): Answer {
  return { status: 429, headers: { 'retry-after': String(Math.max(1, seconds)) }, body: { ok: false, error: 'ratelimited' } };
}

function presentUser(user: FakeUser): Record<string, unknown> {
  return {
    id: user.id, team_id: TEAM.id, name: user.name, deleted: false, real_name: user.real_name ?? user.name, is_bot: user.is_bot ?? false,
    profile: { display_name: user.display_name ?? '', real_name: user.real_name ?? user.name, image_72: `https://avatars.example/${user.id}.png` },
  };
}

function presentChannel(channel: FakeChannel): Record<string, unknown> {
  return {
    id: channel.id, name: channel.name, is_channel: !channel.is_private, is_group: false, is_im: false, is_private: channel.is_private ?? false,
    is_archived: false, is_general: channel.name === 'general', is_member: channel.is_member ?? false, created: 1_600_000_000,
  };
}
