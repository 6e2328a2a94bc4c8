import { graphemesOf } from './graphemes.js';

/**
 * Text at the IRC boundary: what may never reach a command line (CR, LF, NUL and other controls), IRC's
 * formatting codes, keeping chat names from highlighting IRC users, and splitting by UTF-8 bytes.
 */

/** Colour (\x03 fg[,bg]), hex colour (\x04 rrggbb[,rrggbb]), bold, reset, monospace, reverse, italic, strike, underline. */
const FORMATTING = /\x03(?:\d{1,2}(?:,\d{1,2})?)?|\x04(?:[0-9a-fA-F]{6}(?:,[0-9a-fA-F]{6})?)?|[\x02\x0f\x11\x16\x1d\x1e\x1f]/g;

/** Every line break a text may carry: CRLF, CR, LF, NEL, LINE and PARAGRAPH SEPARATOR, VT, FF. */
const LINE_BREAKS = /\r\n|[\r\n\u0085\u2028\u2029\v\f]/g;

/** C0 controls (NUL, CTCP's \x01, formatting, CR, LF, ...), DEL and C1 controls. */
const CONTROLS = /[\x00-\x1f\x7f\x80-\x9f]/g;

const ZWSP = '\u200b';

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** IRC colour and formatting codes removed (what IRC clients send for bold, colours and the like). */
export function stripIrcFormatting(text: string): string {
  return text.replace(FORMATTING, '');
}

/** Line breaks of every kind made LF. */
export function normalizeLineBreaks(text: string): string {
  return text.replace(LINE_BREAKS, '\n');
}

/**
 * One line that is safe inside an IRC command: tabs become spaces, every other control character
 * (CR, LF, NUL, \x01, formatting codes, DEL, C1) is removed, and trailing spaces are dropped.
 */
export function safeLine(text: string): string {
  return text.replace(/\t/g, ' ').replace(CONTROLS, '').trimEnd();
}

/** A name (chat display name or IRC nick) as one short safe line with single spaces. */
export function safeName(text: string, fallback: string): string {
  const cleaned = normalizeLineBreaks(text).replace(CONTROLS, ' ').replace(/\s+/g, ' ').trim().slice(0, 64);
  return cleaned || fallback;
}

/**
 * A zero-width space after the first character of each word of two or more characters, so that "Carol
 * Smith" relayed to IRC does not highlight the IRC users carol or smith.
 */
export function antiPing(name: string): string {
  return name.split(' ').map((word) => {
    const parts = graphemesOf(word, 2);
    return parts.length < 2 ? word : parts[0] + ZWSP + word.slice(parts[0]!.length);
  }).join(' ');
}

/**
 * `text` (one line) cut into pieces of at most `maxBytes` UTF-8 bytes, never inside a character or a
 * grapheme (an emoji with its modifiers stays whole), at the last space when there is one in the second
 * half of the piece. A single grapheme longer than `maxBytes` is cut between code points.
 */
export function splitUtf8(text: string, maxBytes: number): string[] {
  const pieces: string[] = [];
  let current: string[] = [];
  let bytes = 0;
  let lastSpace = -1;
  const flush = (upTo: number) => {
    pieces.push(current.slice(0, upTo).join('').trimEnd());
    current = current.slice(upTo);
    while (current[0] === ' ') current.shift();
    bytes = current.reduce((sum, g) => sum + utf8Bytes(g), 0);
    lastSpace = current.lastIndexOf(' ');
  };
  for (const segment of graphemesOf(text)) {
    for (const unit of utf8Bytes(segment) > maxBytes ? [...segment] : [segment]) {
      const size = utf8Bytes(unit);
      if (bytes + size > maxBytes && current.length > 0) flush(lastSpace > current.length / 2 ? lastSpace : current.length);
      current.push(unit);
      bytes += size;
      if (unit === ' ') lastSpace = current.length - 1;
    }
  }
  if (current.length > 0) pieces.push(current.join('').trimEnd());
  return pieces.filter((piece) => piece.length > 0);
}

/**
 * The last line of defence before a socket: a command line can never carry CR, LF or NUL (they would end
 * it and start another). Anything that slipped through gets a space instead; `true` when it had to.
 */
export function guardCommandLine(line: string): { line: string; changed: boolean } {
  if (!/[\r\n\0]/.test(line)) return { line, changed: false };
  return { line: line.replace(/[\r\n\0]/g, ' '), changed: true };
}
