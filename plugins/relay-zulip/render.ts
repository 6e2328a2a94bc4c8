import { closeBidi } from '../../src/index.js';

/**
 * Text for Zulip that stays text. Zulip's markdown (Python-Markdown with Zulip's own syntax) takes a
 * backslash before its markup characters; what it does not escape that way is broken with a zero-width
 * space: mentions (`@**all**`, `@**everyone**`, `@**stream**`, `@**channel**`, `@**topic**`, silent
 * `@_**name**`, groups `@*group*`) after their `@`, strike-through `~~` and math `$$` between their two
 * characters, emoji and `<time:…>` after their colon, a slash command (`/poll`, `/me`) at the message's
 * start. A relayed line pings nobody and shows as it was typed. Each pattern is one character class, or
 * starts at a line's start and stops at its end: linear.
 */
const ZWSP = '\u200b';
/** Markup wherever it stands, escaped by a backslash (Python-Markdown's escapable characters that matter). */
const MARKUP = /[\\`*_[\]()>#!|]/g;
/** Lists (`-`, `+`, `1.`) and setext headings (`=`) are markup at a line's start only. */
const LINE_START_MARK = /^([ \t]*)([-+=])/gm;
const LINE_START_NUMBER = /^([ \t]*\d+)([.)])/gm;
/** An `@` before a name, a `*` or a `_` may be a mention. */
const MENTION = /@(?=[\p{L}\p{N}._*\\-])/gu;
/** `~~strike~~`, `$$math$$`: the first of a pair. */
const PAIRED = /([~$])(?=[~$])/g;
/** `:emoji:` and `<time:…>`: a colon before a word. */
const COLON = /:(?=[\p{L}\p{N}_+-])/gu;
/** Zulip takes at most 10,000 characters a message; a line is cut below that (its markup escaped). */
export const MAX_MESSAGE = 9_900;

const isControl = (code: number) => (code < 0x20 && code !== 0x0a && code !== 0x09) || (code >= 0x7f && code <= 0x9f);

/** Control characters but newline and tab mean nothing in a chat line and may confuse clients. */
export function stripControls(text: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i += 1) {
    if (!isControl(text.charCodeAt(i))) continue;
    out += text.slice(from, i);
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

export function escapeForZulip(text: string): string {
  return stripControls(text)
    .replace(MARKUP, '\\$&')
    .replace(LINE_START_MARK, '$1\\$2')
    .replace(LINE_START_NUMBER, '$1\\$2')
    .replace(MENTION, `@${ZWSP}`)
    .replace(PAIRED, `$1${ZWSP}`)
    .replace(COLON, `:${ZWSP}`);
}

function cut(text: string): string {
  return text.length <= MAX_MESSAGE ? text : `${text.slice(0, MAX_MESSAGE - 1)}…`;
}

/** A message that starts with `/` would be a slash command (`/poll`, `/todo`, `/me`): a zero-width space stands before it. */
function noCommand(text: string): string {
  return text.startsWith('/') ? ZWSP + text : text;
}

/** A reply the relay could not put in its parent's topic: a quote of the parent stands in, above it. */
function quoted(quote: { name: string; text: string } | undefined): string {
  if (!quote) return '';
  // Its start only: cut before the white space is folded (the rest of a long parent is never read).
  const snippet = quote.text.slice(0, 480).replace(/\s+/g, ' ').slice(0, 120);
  return `\\> **${escapeForZulip(closeBidi(quote.name.slice(0, 256)))}**: ${escapeForZulip(closeBidi(snippet))}\n`;
}

/** The line as the bot posts it: the template with the name and the text, both escaped (an action as `* name text`). */
export function renderLine(line: { template: string; name: string; text: string; action?: boolean; quote?: { name: string; text: string } }): string {
  const name = escapeForZulip(closeBidi(line.name));
  const text = escapeForZulip(line.text);
  const body = line.action ? `\\* ${name} ${text}` : line.template.split('{text}').map((part) => part.split('{name}').join(name)).join(text);
  return cut(noCommand(quoted(line.quote) + body));
}

/** A Zulip message's text for the chat: as typed (the markdown is the writer's), control characters out; a `/me` message as an action. */
export function plainFromZulip(content: string): { text: string; action: boolean } {
  const text = stripControls(content).trim();
  if (text.startsWith('/me ')) return { text: text.slice(4).trim(), action: true };
  return { text, action: false };
}
