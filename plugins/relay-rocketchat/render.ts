import { closeBidi } from '../../src/index.js';

/**
 * Text for Rocket.Chat that stays text: its markdown (`*bold*`, `_italic_`, `~strike~`, code, links,
 * `#room` links, KaTeX `$`, quotes, lists) escaped with backslashes, and every mention (`@all`, `@here`,
 * `@someone`) defused with a zero-width space after the `@`, so a relayed line pings nobody and shows
 * as it was typed. Each pattern is one character class, or starts only at a line's start: linear.
 */
const ZWSP = '\u200b';
/** Characters that are markup wherever they stand. */
const MARKUP = /[\\*_~`[\]()#|<>$]/g;
/** Lists (`-`, `+`, `1.`) and setext headings (`=`) are markup at a line's start only. */
const LINE_START_MARK = /^([ \t]*)([-+=])/gm;
const LINE_START_NUMBER = /^([ \t]*\d+)([.)])/gm;
/** An `@` before a name character is a mention. */
const MENTION = /@(?=[\p{L}\p{N}._-])/gu;
/** Rocket.Chat's default Message_MaxAllowedSize is 5,000 characters; a line is cut below that (its markup escaped). */
export const MAX_MESSAGE = 4_900;

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

export function escapeForRocketchat(text: string): string {
  return stripControls(text)
    .replace(MARKUP, '\\$&')
    .replace(LINE_START_MARK, '$1\\$2')
    .replace(LINE_START_NUMBER, '$1\\$2')
    .replace(MENTION, `@${ZWSP}`);
}

function cut(text: string): string {
  return text.length <= MAX_MESSAGE ? text : `${text.slice(0, MAX_MESSAGE - 1)}…`;
}

/** A reply the gateway could not map to a Rocket.Chat message: a quote of its parent stands in, above it. */
function quoted(quote: { name: string; text: string } | undefined): string {
  if (!quote) return '';
  // Its start only: cut before the white space is folded (the rest of a long parent is never read).
  const snippet = quote.text.slice(0, 480).replace(/\s+/g, ' ').slice(0, 120);
  return `> **${escapeForRocketchat(closeBidi(quote.name.slice(0, 256)))}**: ${escapeForRocketchat(closeBidi(snippet))}\n`;
}

/** The line as the bot sends it: the template with the name and the text, both escaped (an action as `* name text`). */
export function renderLine(line: { template: string; name: string; text: string; action?: boolean; quote?: { name: string; text: string } }): string {
  const name = escapeForRocketchat(closeBidi(line.name));
  const text = escapeForRocketchat(line.text);
  const body = line.action ? `\\* ${name} ${text}` : line.template.split('{text}').map((part) => part.split('{name}').join(name)).join(text);
  return cut(quoted(line.quote) + body);
}

/** The line as sent under the speaker's name (`alias`): the text alone, an action in italics. */
export function renderText(line: { text: string; action?: boolean; quote?: { name: string; text: string } }): string {
  const text = escapeForRocketchat(line.text);
  const body = line.action && !text.includes('\n') && text.trim() !== '' ? `_${text}_` : text;
  return cut(quoted(line.quote) + body);
}

/** A speaker's name as `alias`: one line, its bidi closed, at most 64 characters, never a mention. */
export function aliasName(name: string): string {
  const one = closeBidi(stripControls(name.slice(0, 256)).replace(/\s+/g, ' ').trim());
  const shown = one === '' ? 'someone' : one.replace(/@/g, '＠');
  return [...shown].slice(0, 64).join('');
}

/** A Rocket.Chat message's text for the chat: as typed (markdown is the writer's), control characters out. */
export function plainFromRocketchat(message: string): string {
  return stripControls(message).trim();
}
