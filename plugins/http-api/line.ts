import { createHash } from 'node:crypto';
import type { Attachment, OutgoingMessage } from '../../src/index.js';

/** A file said with a line (docs/plugins/http-api.md "Files out"). */
export interface FilePayload {
  /** The media store's id (the same in `url`). */
  id: string;
  name: string;
  content_type: string;
  size: number;
  /** An image (the bytes are one): a receiver may show it inline. */
  image: boolean;
  /** Where to download it: the media store's public link, else this API's `/gateways/<channel>/files/<id>/<name>`. */
  url: string;
}

/** A gateway line as webhooks, the event stream and polling give it (the same JSON everywhere). */
export interface LinePayload {
  id: string;
  gateway: string;
  channel: string;
  kind: string;
  text: string;
  speaker: { platform: string; id: string; name: string };
  time: string;
  reply_to?: string;
  target?: string;
  files?: FilePayload[];
  /** Files said with the line that were not relayed, and why (`too big (40 MB, limit 25 MB)`). */
  refused_files?: Array<{ name: string; reason: string }>;
}

const ZWSP = '\u200b';
/** The other ways of breaking a line (CR LF, a lone CR, NEL, U+2028, U+2029): each is a line break, not nothing. */
const OTHER_BREAKS = /\r\n?|[\u0085\u2028\u2029]/g;
/** Control characters but newline and tab: they mean nothing in a chat line and can mislead a terminal or a log reader. */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Line breaks as `\n` (so `a\rb` stays two lines, not `ab`), every other control removed. */
export function stripControls(text: string): string {
  return text.replace(OTHER_BREAKS, '\n').replace(CONTROLS, '');
}

/**
 * Text that a receiver forwarding it to a chat platform cannot turn into a ping of everyone: the mass
 * mentions of Slack, Discord, Matrix, Mattermost and Rocket.Chat (`@everyone`, `@here`, `@channel`,
 * `@room`, `@all`, Slack's `<!channel>`) get a zero-width space. The JSON itself needs no escaping; a
 * receiver rendering it as HTML or markdown escapes it as for any user text.
 */
export function safeText(text: string): string {
  return stripControls(text)
    .replace(/@(everyone|here|channel|room|all)\b/gi, `@${ZWSP}$1`)
    .replace(/<!(\w)/g, `<${ZWSP}!$1`);
}

/**
 * What a POST's `username` may not hold (#31 item 11): line breaks and every other control character
 * (C0, DEL, C1 with U+0085), the line and paragraph separators, and the bidirectional controls (marks,
 * embeddings, overrides, isolates), which could break the name onto another line or reorder what
 * follows it in the chat line. One character class, tested once: linear in the name's length.
 */
const NOT_IN_A_NAME = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

/** The longest `username` a POST may give, in UTF-16 units. */
export const USERNAME_MAX = 64;

export function isOneLineName(name: string): boolean {
  return !NOT_IN_A_NAME.test(name);
}

/** A name on one line, short enough for any display. */
export function safeName(name: string, max = 100): string {
  const flat = safeText(name).replace(/[\n\t]+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/**
 * The line's id: its gateway key, which is the same for a line sent again after a crash, so a
 * receiver dedupes by it (it is also the webhooks' Idempotency-Key). A key that cannot be a header
 * value (longer than 255, or not printable ASCII) is replaced by its SHA-256, still stable.
 */
export function lineId(key: string): string {
  return /^[\x20-\x7e]{1,255}$/.test(key) ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/**
 * The line's payload; `apiUrlOf` gives this API's download URL of a file the media store has no
 * public link for (with the name as the payload gives it).
 */
export function payloadOf(channel: string, message: OutgoingMessage, apiUrlOf: (file: Attachment, name: string) => string): LinePayload {
  const files = (message.files ?? []).map((file): FilePayload => {
    const name = safeName(file.name, 255);
    return { id: file.id, name, content_type: file.contentType, size: file.size, image: file.image, url: file.url ?? apiUrlOf(file, name) };
  });
  const refused = (message.refusedFiles ?? []).map((file) => ({ name: safeName(file.name, 255), reason: safeName(file.reason, 500) }));
  return {
    id: lineId(message.key),
    gateway: message.gateway,
    channel,
    kind: message.kind,
    text: safeText(message.text),
    speaker: { platform: message.speaker.platform, id: message.speaker.id, name: safeName(message.speaker.name) },
    time: message.time,
    ...(message.replyTo !== undefined ? { reply_to: message.replyTo } : {}),
    ...(message.target !== undefined ? { target: message.target } : {}),
    ...(files.length > 0 ? { files } : {}),
    ...(refused.length > 0 ? { refused_files: refused } : {}),
  };
}
