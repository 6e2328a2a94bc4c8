/**
 * The text `searcharchives` looks at: a message body as plain text (HTML tags stripped), optionally
 * without its signature, and the excerpt shown as a result's `summary`.
 */

import { htmlToText } from '../api/html-text.js';

/** Our decision: the longest `summary`, in characters, and how much text it shows before the first hit. */
export const SUMMARY_LENGTH = 200;
const LEAD = 60;

export function bodyText(body: string, isPlainText: boolean): string {
  const text = body.replace(/\r\n?/g, '\n');
  return isPlainText ? text : htmlToText(text);
}

/**
 * True when `text` holds something like a tag: what `/<\/?[a-z][^>]*>/i` finds, by a scan (that
 * expression, tried from each of many `<a` with no `>`, scans to the end from each: quadratic). A tag
 * needs a `>` after its `<`: once there is none, none of the later `<` has one either.
 */
export function looksLikeHtml(text: string): boolean {
  let lt = text.indexOf('<');
  while (lt >= 0) {
    const at = text[lt + 1] === '/' ? lt + 2 : lt + 1;
    const code = text.charCodeAt(at) | 0x20;
    if (code >= 0x61 && code <= 0x7a) return text.indexOf('>', at + 1) >= 0;
    lt = text.indexOf('<', lt + 1);
  }
  return false;
}
const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The body without its signature: everything from the first signature delimiter line (`-- `, or `--`
 * as mail clients that trim trailing spaces leave it) is dropped, and so is every occurrence of the
 * member's stored signature, matched with any run of whitespace standing for any other.
 */
export function withoutSignature(text: string, signature: string): string {
  // A delimiter is a line of its own: lines end at \n (an \r before it is the line's end too); a
  // U+2028 or a lone \r does not start a line, which `^`/`$` in multiline mode would take it to.
  const delimiter = /(?:^|\n)-- ?(?=\r?\n|$)/.exec(text);
  const at = delimiter ? delimiter.index + (delimiter[0].startsWith('\n') ? 1 : 0) : -1;
  let out = at >= 0 ? text.slice(0, at) : text;
  const sigText = looksLikeHtml(signature) ? htmlToText(signature) : signature;
  const words = sigText.trim().split(/\s+/).filter(Boolean);
  if (words.length > 0) out = out.replace(new RegExp(words.map(escapeRegExp).join('\\s+'), 'g'), ' ');
  return out;
}

/**
 * A plain-text excerpt of at most `max` characters around `at` (an offset in `text`), starting at a
 * word boundary a little before it; from the start of the text when `at` is undefined. An ellipsis
 * marks text cut off at either end.
 */
export function excerpt(text: string, at: number | undefined, max = SUMMARY_LENGTH): string {
  let start = Math.max(0, (at ?? 0) - LEAD);
  if (start > 0) {
    // Move forward to the start of a word, but never past the hit itself.
    const space = text.slice(start, at).search(/\s/);
    start = space >= 0 ? start + space + 1 : (at ?? start);
  }
  // Whitespace collapses below, so a window a few times the length is always enough to fill `max`.
  const windowEnd = start + max * 4;
  let piece = text.slice(start, windowEnd).replace(/\s+/g, ' ').trim();
  const lead = start > 0 && text.slice(0, start).trim() !== '' ? '…' : '';
  const room = max - lead.length;
  if (piece.length > room || (windowEnd < text.length && text.slice(windowEnd).trim() !== '')) {
    piece = `${piece.slice(0, room - 1).trimEnd()}…`;
  }
  return lead + piece;
}
