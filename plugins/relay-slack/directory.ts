import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { ChannelIds } from './channel-ids.js';
import { classify, type SlackFailure } from './errors.js';

/** A lookup that failed in a way worth retrying (rate limit, Slack down) or that stops the relay (token). */
export class LookupError extends Error {
  override name = 'LookupError';
  constructor(readonly failure: SlackFailure) {
    super(failure.code);
  }
}

interface Entry {
  value: string | undefined;
  until: number;
}

const FOUND_MS = 60 * 60_000;
const MISSING_MS = 5 * 60_000;

/**
 * Names of Slack users (users.info) and channels (conversations.info), cached (an hour; a miss five
 * minutes) in a bounded map. `lenient` lookups answer undefined on any failure instead of throwing.
 */
export class SlackDirectory {
  private readonly users = new Map<string, Entry>();
  private readonly channels = new Map<string, Entry>();
  private warnedScope = false;

  constructor(
    private readonly web: WebClient,
    private readonly log: Logger,
    /** Where the ids of channels given by name are kept once learned (chat.update and chat.delete need them). */
    private readonly ids?: ChannelIds,
    private readonly max = 5_000,
  ) {}

  /** A user's display name (profile display name, else real name, else user name). */
  userName(id: string, lenient = false): Promise<string | undefined> {
    return this.cached(this.users, id, lenient, async () => {
      const answer = await this.web.users.info({ user: id });
      const user = answer.user;
      return user?.profile?.display_name || user?.profile?.real_name || user?.real_name || user?.name || undefined;
    });
  }

  /** A channel's name, without the `#`. */
  channelName(id: string, lenient = false): Promise<string | undefined> {
    return this.cached(this.channels, id, lenient, async () => {
      const name = (await this.web.conversations.info({ channel: id })).channel?.name || undefined;
      if (name) this.ids?.learn(name, id);
      return name;
    });
  }

  /** A channel id ↔ name pair learned elsewhere (chat.postMessage answers the id of a channel posted to by name). */
  learnChannel(id: string, name: string): void {
    this.remember(this.channels, id, name);
    this.ids?.learn(name, id);
  }

  private async cached(map: Map<string, Entry>, id: string, lenient: boolean, fetch: () => Promise<string | undefined>): Promise<string | undefined> {
    const entry = map.get(id);
    if (entry && entry.until > Date.now()) return entry.value;
    try {
      const value = await fetch();
      this.remember(map, id, value);
      return value;
    } catch (error) {
      const failure = classify(error);
      if (failure.kind === 'permanent' || failure.kind === 'unknown' || (failure.kind === 'fatal' && failure.code === 'missing_scope')) {
        if (failure.code === 'missing_scope' && !this.warnedScope) {
          this.warnedScope = true;
          this.log.warn({ code: failure.code }, 'the bot token lacks users:read or channels:read/groups:read; ids are shown instead of names');
        }
        this.remember(map, id, undefined);
        return undefined;
      }
      if (lenient && failure.kind !== 'fatal') return undefined;
      throw new LookupError(failure);
    }
  }

  private remember(map: Map<string, Entry>, id: string, value: string | undefined): void {
    map.delete(id);
    map.set(id, { value, until: Date.now() + (value === undefined ? MISSING_MS : FOUND_MS) });
    while (map.size > this.max) map.delete(map.keys().next().value!);
  }
}
