import type { ChatInfo, ChatMessage } from '../../src/index.js';
import { escapeForSlack, slackUsername } from './escape.js';
import type { DisplayOptions } from './options.js';

/** The most text one chat post takes (the supervisor's outbox refuses longer ones). */
export const MAX_CHAT_POST = 10_000;

/** What a chat message becomes in Slack: chat.postMessage's text, username and icon. */
export interface SlackPost {
  text: string;
  username?: string;
  icon_url?: string;
  icon_emoji?: string;
}

/** Fills `{key}` placeholders in one pass (a value containing `{name}` is not filled again). */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => values[key] ?? whole);
}

export function renderForSlack(message: ChatMessage, chat: ChatInfo, display: DisplayOptions): SlackPost {
  const name = message.display_name || message.user_name || `user ${message.user_id}`;
  const text = display.name_in_text ? `*${escapeForSlack(name)}*: ${escapeForSlack(message.message)}` : escapeForSlack(message.message);
  const post: SlackPost = { text };
  if (display.username !== '') {
    post.username = slackUsername(fill(display.username, { name, user: message.user_name || name, chat: chat.subject }));
  }
  const photo = display.avatars && /^https?:\/\//.test(message.profile_photo_url ?? '') ? message.profile_photo_url : undefined;
  const icon = photo ?? display.default_icon;
  if (icon?.startsWith(':')) post.icon_emoji = icon;
  else if (icon) post.icon_url = icon;
  return post;
}

/** A Slack name as the chat shows it: one line, no angle brackets (they frame the name). */
export function chatName(name: string): string {
  return name.replace(/[<>\r\n\t]+/g, ' ').replace(/\s+/g, ' ').trim() || 'unknown';
}

/**
 * A Slack message as chat posts: the `incoming` template filled, split into posts the chat takes
 * (each at most MAX_CHAT_POST characters, every part with the name).
 */
export function renderForChat(template: string, name: string, text: string, channel: string): string[] {
  const frame = fill(template, { name, channel, text: '' });
  const room = Math.max(100, MAX_CHAT_POST - frame.length);
  const parts: string[] = [];
  const points = [...text];
  for (let start = 0; start < points.length || parts.length === 0; start += room) {
    parts.push(fill(template, { name, channel, text: points.slice(start, start + room).join('') }));
  }
  return parts;
}
