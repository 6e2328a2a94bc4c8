import type { ChatInfo } from '../../src/index.js';
import { CHANNEL_ID } from './options.js';

/** One `channels:` entry: the chat (subject or id) and the Slack channel (an id, or a name without `#`). */
interface Route {
  chat: string;
  id?: string;
  name?: string;
}

/**
 * The `channels:` mapping both ways. Chat → Slack is by the chat's id or subject. Slack → chat is by
 * channel id: mapped ids at once; a channel given by name matches once its id is known (asked with
 * conversations.info when an event comes from an unknown channel, or learned from a post).
 */
export class ChannelMap {
  private readonly routes: Route[];

  constructor(mapping: Record<string, string>) {
    this.routes = Object.entries(mapping).map(([chat, channel]) =>
      !channel.startsWith('#') && CHANNEL_ID.test(channel) ? { chat, id: channel } : { chat, name: channel.replace(/^#/, '').toLowerCase() });
  }

  /** The Slack channel (id, or name for chat.postMessage) a chat's messages go to. */
  slackChannelFor(chat: ChatInfo): string | undefined {
    const route = this.routes.find((r) => r.chat === chat.id) ?? this.routes.find((r) => r.chat === chat.subject);
    return route && (route.id ?? `#${route.name}`);
  }

  /** The chats (as configured: subject or id) a Slack channel's messages go to, when its name is known or not needed. */
  chatsFor(channelId: string, channelName?: string): string[] {
    const name = channelName?.toLowerCase();
    return this.routes.filter((r) => r.id === channelId || (name !== undefined && r.name === name)).map((r) => r.chat);
  }

  /** True when an event from this channel could be mapped: its id is, or some channel is mapped by name. */
  mightMap(channelId: string): boolean {
    return this.routes.some((r) => r.id === channelId || r.name !== undefined);
  }

  /** True when matching this channel needs its name. */
  needsName(channelId: string): boolean {
    return !this.routes.some((r) => r.id === channelId) && this.routes.some((r) => r.name !== undefined);
  }

  /** The configured channel ids (checked at start). */
  ids(): string[] {
    return [...new Set(this.routes.flatMap((r) => (r.id ? [r.id] : [])))];
  }
}
