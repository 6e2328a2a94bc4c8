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

/** rfc1459 case folding (the default CASEMAPPING): A-Z and []\~ fold to a-z and {}|^. */
export function ircLower(text: string): string {
  return text.toLowerCase().replace(/[[\]\\~]/g, (c) => ({ '[': '{', ']': '}', '\\': '|', '~': '^' })[c]!);
}

type RouteObject = Exclude<RouteOption, string>;

function routeObject(option: RouteOption): RouteObject {
  return typeof option === 'string' ? { channel: option, direction: 'both' } : option;
}

/**
 * The chat ↔ channel map. Several chats may share one channel: each then gets a prefix (its mapping
 * key in brackets unless one is given), and what is said in the channel goes to every chat mapped to it.
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

  /** The routes from a channel into chats. */
  forChannel(channel: string): Route[] {
    const key = ircLower(channel);
    return this.all.filter((route) => route.toChat && route.channelKey === key);
  }

  /** Every channel to join, once each (the first key given for it wins). */
  channels(): ChannelToJoin[] {
    const seen = new Map<string, ChannelToJoin>();
    for (const route of this.all) {
      const known = seen.get(route.channelKey);
      if (!known) seen.set(route.channelKey, { name: route.channel, key: route.channelKey, joinKey: route.joinKey });
      else known.joinKey ??= route.joinKey;
    }
    return [...seen.values()];
  }
}
