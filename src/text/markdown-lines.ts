import { closeBidi } from './bidi.js';

/**
 * Lines for a chat platform that renders markdown and pings on `@name` (Mattermost, Rocket.Chat):
 * text that stays text, its markup escaped with backslashes and every mention defused with a
 * zero-width space after the `@`, so a relayed line pings nobody and shows as it was typed. The
 * platforms differ only in which characters are markup and how long a post may be. Each pattern is
 * one character class, or starts only at a line's start and stops at its end: linear on any input.
 */

/** The message a relayed line answers, quoted before it: who wrote it and (a part of) what they wrote. */
export interface MarkdownQuote {
  name: string;
  text: string;
}

/** A platform's renderer of relayed lines (markdownLines() makes one per platform's markup set and post length). */
export interface MarkdownLines {
  /** The text escaped and its mentions defused (control characters but newline and tab dropped). */
  escape(text: string): string;
  /** The line as the bot posts it under its own name: the template with the name and the text, both escaped (an action as `* name text`). */
  renderLine(line: { template: string; name: string; text: string; action?: boolean; quote?: MarkdownQuote }): string;
  /** The line as posted under the speaker's name: the text alone, an action in italics. */
  renderText(line: { text: string; action?: boolean; quote?: MarkdownQuote }): string;
  /** A speaker's name to post under: one line, its bidi closed, at most 64 characters, never a mention. */
  speakerName(name: string): string;
}

const ZWSP = '\u200b';
/** Lists (`-`, `+`, `1.`, `1)`), setext headings and breaks (`=`, `-`) are markup at a line's start only; the blanks before stop at its end. */
const LINE_START_MARK = /^([ \t]*)([-+=])/gm;
const LINE_START_NUMBER = /^([ \t]*\d+)([.)])/gm;
/** An `@` before a name character is a mention. */
const MENTION = /@(?=[\p{L}\p{N}._-])/gu;

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

/**
 * The renderers for one platform: `markup` is a global regular expression of one character class (the
 * characters that are markup wherever they stand), `maxLength` what a post may hold after escaping.
 */
export function markdownLines(options: { markup: RegExp; maxLength: number }): MarkdownLines {
  const { markup, maxLength } = options;
  const escape = (text: string) => stripControls(text)
    .replace(markup, '\\$&')
    .replace(LINE_START_MARK, '$1\\$2')
    .replace(LINE_START_NUMBER, '$1\\$2')
    .replace(MENTION, `@${ZWSP}`);
  const cut = (text: string) => (text.length <= maxLength ? text : `${text.slice(0, maxLength - 1)}…`);
  // A reply the gateway could not map to a post there: a quote of its parent stands in, above it.
  const quoted = (quote: MarkdownQuote | undefined) => {
    if (!quote) return '';
    // Its start only: cut before the white space is folded (the rest of a long parent is never read).
    const snippet = quote.text.slice(0, 480).replace(/\s+/g, ' ').slice(0, 120);
    return `> **${escape(closeBidi(quote.name.slice(0, 256)))}**: ${escape(closeBidi(snippet))}\n`;
  };
  return {
    escape,
    renderLine(line) {
      const name = escape(closeBidi(line.name));
      const text = escape(line.text);
      const body = line.action ? `\\* ${name} ${text}` : line.template.split('{text}').map((part) => part.split('{name}').join(name)).join(text);
      return cut(quoted(line.quote) + body);
    },
    renderText(line) {
      const text = escape(line.text);
      const body = line.action && !text.includes('\n') && text.trim() !== '' ? `_${text}_` : text;
      return cut(quoted(line.quote) + body);
    },
    speakerName(name) {
      const one = closeBidi(stripControls(name.slice(0, 256)).replace(/\s+/g, ' ').trim());
      const shown = one === '' ? 'someone' : one.replace(/@/g, '＠');
      return [...shown].slice(0, 64).join('');
    },
  };
}
