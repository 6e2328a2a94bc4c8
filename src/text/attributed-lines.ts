import { closeBidi } from './bidi.js';

/**
 * Relayed text in a chat, one speaker per line. A chat shows a multi-line post as several lines, and
 * only the first would start with `<name>`: a caller of the HTTP API (or anyone on a platform that
 * allows line breaks) could write a second line `<alice> I resign` that reads as alice's. So every line
 * of a relayed text is rendered with its speaker, as relay-irc does on IRC (textToIrcLines):
 * `<bob> first` / `<bob> second`.
 */

/** Every line break a text may carry (what a chat, a terminal or a log reader may start a new line at). */
function isLineBreak(code: number): boolean {
  return code === 0x0a || code === 0x0d || code === 0x0b || code === 0x0c || code === 0x85 || code === 0x2028 || code === 0x2029;
}

/** The text's lines, split at every kind of line break (CR LF counts once); one pass by index. */
export function splitLines(text: string): string[] {
  const lines: string[] = [];
  let from = 0;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (!isLineBreak(code)) continue;
    lines.push(text.slice(from, i));
    if (code === 0x0d && text.charCodeAt(i + 1) === 0x0a) i += 1;
    from = i + 1;
  }
  lines.push(text.slice(from));
  return lines;
}

/**
 * Each non-blank line of `text` rendered by `render` (which puts the speaker in: `(line) => `<${name}>
 * ${line}``), joined by LF. Blank lines are left out (as on IRC): a line with nothing on it attributes
 * nothing. Each line's own bidi controls are closed (closeBidi) before it is rendered, so the line
 * cannot reorder what the template puts after it. A text with no non-blank line renders as one
 * (empty) line. Linear in the text's length.
 */
export function attributedLines(text: string, render: (line: string) => string): string {
  const lines = splitLines(text).filter((line) => line.trim() !== '');
  if (lines.length === 0) return render('');
  return lines.map((line) => render(closeBidi(line))).join('\n');
}

/** The most of a name shown in a chat line, in UTF-16 units (a name is repeated on every line). */
export const MAX_NAME_CHARS = 100;

/**
 * A speaker's name as one line of a chat line: line breaks and controls become spaces, runs of white
 * space one space, cut to MAX_NAME_CHARS (with …, never inside a surrogate pair), bidi controls closed;
 * `fallback` when nothing is left. Linear.
 */
export function oneLineName(name: string, fallback = 'someone'): string {
  let flat = name.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ').replace(/\s+/g, ' ').trim();
  if (flat === '') return fallback;
  if (flat.length > MAX_NAME_CHARS) {
    const end = MAX_NAME_CHARS - 1;
    const last = flat.charCodeAt(end - 1);
    flat = `${flat.slice(0, last >= 0xd800 && last <= 0xdbff ? end - 1 : end).trimEnd()}…`;
  }
  return closeBidi(flat);
}
