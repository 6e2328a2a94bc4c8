import type { Direction } from '../../src/gateway/message.js';
import type { RelayOptions, RouteOption } from './options.js';

/** One chat ↔ channel pairing of the `channels:` option. */
export interface Route {
  /** The mapping's key: a chat subject or id, as in the bot's `chats`. */
  chat: string;
  /** The channel as configured (sent this way). */
  channel: string;
  /** The channel folded for comparisons (IRC names are case-insensitive). */
  channelKey: string;
  /** The channel key (+k) to join with. */
  joinKey: string | undefined;
  /** Put before each line to IRC; '' for none. */
  prefix: string;
  toIrc: boolean;
  toChat: boolean;
}

export interface ChannelToJoin {
  name: string;
  key: string;
  joinKey: string | undefined;
}

/** The characters rfc1459 folds besides A-Z. */
const NOT_FOLDED = /[[\]\\~]/;

/** rfc1459 case folding (the default CASEMAPPING): A-Z and []\~ fold to a-z and {}|^. */
export function ircLower(text: string): string {
  const lower = text.toLowerCase();
  // Most names have none of []\~ (a line folds several: the test spares the replace's work).
  return NOT_FOLDED.test(lower) ? lower.replace(/[[\]\\~]/g, (c) => ({ '[': '{', ']': '}', '\\': '|', '~': '^' })[c]!) : lower;
}

type RouteObject = Exclude<RouteOption, string>;

function routeObject(option: RouteOption): RouteObject {
  return typeof option === 'string' ? { channel: option, direction: 'both' } : option;
}

/**
 * The chat ↔ channel map of the relay's own `channels:` option: the pairs it declares to the gateways,
 * the prefix of each chat's lines in a channel (several chats in one channel get their mapping key in
 * brackets unless one is given), and the channels to join with their keys.
 */
export class Routes {
  readonly all: Route[];

  constructor(channels: RelayOptions['channels']) {
    const entries = Object.entries(channels).map(([chat, option]) => ({ chat, option: routeObject(option) }));
    const toIrcPerChannel = new Map<string, number>();
    for (const { option } of entries) {
      if (option.direction === 'to_chat') continue;
      const key = ircLower(option.channel);
      toIrcPerChannel.set(key, (toIrcPerChannel.get(key) ?? 0) + 1);
    }
    this.all = entries.map(({ chat, option }) => {
      const channelKey = ircLower(option.channel);
      const shared = (toIrcPerChannel.get(channelKey) ?? 0) > 1;
      return {
        chat,
        channel: option.channel,
        channelKey,
        joinKey: option.key,
        prefix: option.prefix ?? (shared ? `[${chat}]` : ''),
        toIrc: option.direction !== 'to_chat',
        toChat: option.direction !== 'to_irc',
      };
    });
  }

  /** The routes of a chat (matched by subject or id) that send to IRC. */
  forChat(chat: { id: string; subject: string }): Route[] {
    return this.all.filter((route) => route.toIrc && (route.chat === chat.subject || route.chat === String(chat.id)));
  }

  /** The prefix of lines from a chat in a channel: the route's when the options map that pair, else none. */
  prefixFor(chat: { id: string; subject: string }, channelKey: string): string {
    return this.forChat(chat).find((route) => route.channelKey === channelKey)?.prefix ?? '';
  }

  /** The pairs for the gateways (PlatformSpec.channels): `both` is `inout`, `to_irc` is `out`, `to_chat` is `in`. */
  pairs(): Array<{ chat: string; channel: string; direction: Direction }> {
    return this.all.map((route) => ({
      chat: route.chat,
      channel: route.channel,
      direction: route.toIrc && route.toChat ? 'inout' : route.toIrc ? 'out' : 'in',
    }));
  }

  /**
   * Every channel to join, once each (the first key given for it wins): the routes' and `also`, the
   * channels the gateways name (env.gateway.channels()), which may be in no route.
   */
  channels(also: readonly string[] = []): ChannelToJoin[] {
    const seen = new Map<string, ChannelToJoin>();
    for (const route of this.all) {
      const known = seen.get(route.channelKey);
      if (!known) seen.set(route.channelKey, { name: route.channel, key: route.channelKey, joinKey: route.joinKey });
      else known.joinKey ??= route.joinKey;
    }
    for (const name of also) {
      const key = ircLower(name);
      if (!seen.has(key)) seen.set(key, { name, key, joinKey: undefined });
    }
    return [...seen.values()];
  }
}
