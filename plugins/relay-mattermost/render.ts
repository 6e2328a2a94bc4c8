import { closeBidi } from '../../src/index.js';

/**
 * Text for Mattermost that stays text: its markdown (CommonMark with tables, autolinks and hashtags)
 * escaped with backslashes, and every mention (`@all`, `@channel`, `@here`, `@someone`) defused with
 * a zero-width space after the `@`, so a relayed line pings nobody and shows as it was typed.
 * A scanner with an index: linear whatever the text.
 */
const ZWSP = '\u200b';
/** Characters that are markup wherever they stand. */
const MARKUP = new Set(['\\', '*', '_', '~', '`', '[', ']', '(', ')', '#', '|', '>', '<']);
/** Characters that are markup at the start of a line (lists, setext headings, thematic breaks). */
const LINE_START = new Set(['-', '+', '=']);
/** Mattermost takes at most 16,383 characters a post; a line is cut below that (its markup escaped). */
export const MAX_POST = 16_000;

const isControl = (code: number) => (code < 0x20 && code !== 0x0a && code !== 0x09) || (code >= 0x7f && code <= 0x9f);
const isNameChar = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}._-]/u.test(c);
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/** Control characters but newline and tab mean nothing in a chat line and may confuse clients. */
export function stripControls(text: string): string {
  let out = '';
  for (const c of text) if (!isControl(c.codePointAt(0)!)) out += c;
  return out;
}

export function escapeForMattermost(text: string): string {
  const plain = stripControls(text);
  let out = '';
  let lineStart = true;
  for (let i = 0; i < plain.length; i += 1) {
    const c = plain[i]!;
    if (c === '\n') {
      out += c;
      lineStart = true;
      continue;
    }
    if (lineStart && (c === ' ' || c === '\t')) {
      out += c;
      continue;
    }
    if (lineStart && isDigit(c)) {
      // `1.` or `1)` at a line's start is an ordered list: its mark escaped.
      let j = i;
      while (isDigit(plain[j])) j += 1;
      out += plain.slice(i, j);
      if (plain[j] === '.' || plain[j] === ')') {
        out += `\\${plain[j]}`;
        j += 1;
      }
      i = j - 1;
      lineStart = false;
      continue;
    }
    if (MARKUP.has(c) || (lineStart && LINE_START.has(c))) out += `\\${c}`;
    else if (c === '@' && isNameChar(plain[i + 1])) out += `@${ZWSP}`;
    else out += c;
    lineStart = false;
  }
  return out;
}

function cut(text: string): string {
  return text.length <= MAX_POST ? text : `${text.slice(0, MAX_POST - 1)}…`;
}

/** A reply the gateway could not map to a Mattermost post: a quote of its parent stands in, above it. */
function quoted(quote: { name: string; text: string } | undefined): string {
  if (!quote) return '';
  const snippet = quote.text.replace(/\s+/g, ' ').slice(0, 120);
  return `> **${escapeForMattermost(closeBidi(quote.name))}**: ${escapeForMattermost(closeBidi(snippet))}\n`;
}

/** The line as the bot posts it: the template with the name and the text, both escaped (an action as `* name text`). */
export function renderLine(line: { template: string; name: string; text: string; action?: boolean; quote?: { name: string; text: string } }): string {
  const name = escapeForMattermost(closeBidi(line.name));
  const text = escapeForMattermost(line.text);
  const body = line.action ? `\\* ${name} ${text}` : line.template.split('{text}').map((part) => part.split('{name}').join(name)).join(text);
  return cut(quoted(line.quote) + body);
}

/** The line as posted under the speaker's name (`override_username`): the text alone, an action in italics. */
export function renderText(line: { text: string; action?: boolean; quote?: { name: string; text: string } }): string {
  const text = escapeForMattermost(line.text);
  const body = line.action && !text.includes('\n') && text.trim() !== '' ? `_${text}_` : text;
  return cut(quoted(line.quote) + body);
}

/**
 * A speaker's name as `override_username`: one line, its bidi closed, at most 64 characters (what
 * Mattermost shows of a user name), and never a mention.
 */
export function overrideName(name: string): string {
  const one = closeBidi(stripControls(name).replace(/\s+/g, ' ').trim());
  const shown = one === '' ? 'someone' : one.replace(/@/g, '＠');
  return [...shown].slice(0, 64).join('');
}

/** A Mattermost post's text for the chat: as typed (markdown is the writer's), control characters out; a `/me` post without its italics. */
export function plainFromMattermost(message: string, action: boolean): string {
  let text = stripControls(message).trim();
  if (action && text.length >= 2 && text.startsWith('*') && text.endsWith('*')) text = text.slice(1, -1);
  return text;
}
