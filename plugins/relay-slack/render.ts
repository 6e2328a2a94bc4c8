import { closeBidi, fileLines, type OutgoingMessage } from '../../src/index.js';
import { escapeForSlack, slackUsername } from './escape.js';
import type { DisplayOptions } from './options.js';

/** What a gateway line becomes in Slack: chat.postMessage's text, username and icon. */
export interface SlackPost {
  text: string;
  username?: string;
  icon_url?: string;
  icon_emoji?: string;
}

/** How much of the answered message a quote shows (platforms without threads get `out.quote`). */
const QUOTE_CHARS = 80;

/** Fills `{key}` placeholders in one pass (a value containing `{name}` is not filled again). */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => values[key] ?? whole);
}

/** The speaker's name to show: the gateway's, else (a chat member) the message's display or user name. */
export function speakerName(out: OutgoingMessage): string {
  const message = out.source.message;
  const fromChat = out.speaker.platform === 'chat';
  return out.speaker.name || (fromChat ? message?.display_name || message?.user_name : '') || out.speaker.id || 'unknown';
}

/**
 * A new Slack post for a gateway line: the text (escaped: it shows as written and mentions nobody),
 * under the speaker's name, with the chat member's photo (a person from elsewhere, an IRC nick, gets
 * `default_icon`). `edit` here is an edit Slack cannot apply (the relay did not post the original):
 * a follow-up line `(edit) text`.
 */
export function renderForSlack(out: OutgoingMessage, display: DisplayOptions, links = allLinks(out)): SlackPost {
  const name = speakerName(out);
  const post: SlackPost = { text: quoted(out) + body(out, name, display, true, links) };
  if (display.username !== '') {
    const user = out.speaker.platform === 'chat' ? out.source.message?.user_name || name : name;
    post.username = slackUsername(fill(display.username, { name, user, chat: out.source.chat?.subject ?? '' }));
  }
  const photo = out.speaker.platform === 'chat' && display.avatars && /^https?:\/\//.test(out.source.message?.profile_photo_url ?? '')
    ? out.source.message?.profile_photo_url
    : undefined;
  const icon = photo ?? display.default_icon;
  if (icon?.startsWith(':')) post.icon_emoji = icon;
  else if (icon) post.icon_url = icon;
  return post;
}

/**
 * The comment of a file share (files.completeUploadExternal's initial_comment): the text as a post
 * shows it, with the speaker's name in it (a share goes out under the app's own name and icon), and
 * `links` (files shown as links, refused files) after it.
 */
export function renderComment(out: OutgoingMessage, display: DisplayOptions, links: readonly string[]): string {
  return quoted(out) + body(out, speakerName(out), { ...display, name_in_text: true }, true, links);
}

/** The new text of a post the relay made, for chat.update (Slack keeps the post's name and icon). */
export function renderEdit(out: OutgoingMessage, display: DisplayOptions): string {
  return body(out, speakerName(out), display, false, allLinks(out));
}

/** Lines after a text, escaped: files shown as links (`[image: photo.png https://…]`), refused files. */
export function withLinks(text: string, links: readonly string[]): string {
  return links.length === 0 ? text : `${text}${text ? '\n' : ''}${links.map(escapeForSlack).join('\n')}`;
}

/** Every file of the line as a link (where none goes up natively). */
function allLinks(out: OutgoingMessage): string[] {
  return fileLines(out.files, out.refusedFiles);
}

function body(out: OutgoingMessage, name: string, display: DisplayOptions, followUp: boolean, links: readonly string[]): string {
  const who = escapeForSlack(closeBidi(name));
  const text = withLinks(escapeForSlack(out.text), links);
  const named = (line: string) => (!display.name_in_text ? line : line ? `*${who}*: ${line}` : `*${who}*`);
  switch (out.kind) {
    case 'action':
      return `_${who} ${text}_`;
    case 'edit':
      return named(followUp ? `(edit) ${text}` : text);
    default:
      return named(text);
  }
}

/** `> name: snippet` above the text, when the line answers a message Slack has no thread for here. */
function quoted(out: OutgoingMessage): string {
  if (out.replyTo || !out.quote) return '';
  const first = out.quote.text.split(/\r?\n/, 1)[0] ?? '';
  const points = [...first];
  const snippet = points.length > QUOTE_CHARS ? `${points.slice(0, QUOTE_CHARS).join('')}…` : first;
  return `> ${escapeForSlack(closeBidi(out.quote.name.replace(/[\r\n]+/g, ' ')))}: ${escapeForSlack(closeBidi(snippet))}\n`;
}

/** A Slack name as the chat shows it: one line, no angle brackets (they frame the name). */
export function chatName(name: string): string {
  return name.replace(/[<>\r\n\t]+/g, ' ').replace(/\s+/g, ' ').trim() || 'unknown';
}

/** A Slack message as the chat shows it: the `incoming` template filled (the core splits long posts). */
export function renderForChat(template: string, name: string, text: string, channel: string): string {
  return fill(template, { name, channel, text });
}
