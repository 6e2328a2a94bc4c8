/**
 * The jsonl entry of a chat message made from the JSON text the service sent (`ctx.wire`), instead of
 * serialising the parsed message again (a fifth of the logger's time, and a second copy of every
 * message on the heap). The entry must be what the format promises (docs/plugins/logger.md): every
 * field as received, ids as strings of their exact digits. The client's parse turns numbers under id
 * keys into strings and quotes integers a double cannot hold (src/api/wire-json.ts); this does the same
 * to the text, so the line reads back as the very object the chain had. Anything it cannot vouch for
 * (a line break, an id written as a fraction or `-0`, the key of a number with an escape in it)
 * answers undefined, and the logger serialises the message as before.
 */
export function wireLine(wire: string): string | undefined {
  // Compact JSON has no raw line break; a pretty-printed frame would break the line structure.
  if (wire.indexOf('\n') >= 0) return undefined;
  /** The text in pieces, once a number is quoted (joined at the end: one flat string, see below). */
  let pieces: string[] | undefined;
  let copiedTo = 0;
  /** Where the key of the value being read starts and ends (its quotes excluded); -1: in an array, or none. */
  let keyStart = -1;
  let keyEnd = -1;
  let at = 0;
  const length = wire.length;
  while (at < length) {
    const c = wire.charCodeAt(at);
    if (c === QUOTE) {
      const end = endOfString(wire, at);
      if (end < 0) return undefined;
      // A string followed by a colon is a key.
      let next = end + 1;
      while (next < length && isSpace(wire.charCodeAt(next))) next += 1;
      if (wire.charCodeAt(next) === COLON) {
        keyStart = at + 1;
        keyEnd = end;
        at = next + 1;
      } else at = end + 1;
      continue;
    }
    // Past a value, or into an array: the key read last names nothing now.
    if (c === COMMA || c === OPEN_ARRAY || c === CLOSE_ARRAY || c === CLOSE_OBJECT) keyStart = -1;
    if (isDigit(c) || c === MINUS) {
      let end = at + 1;
      while (end < length && isDigit(wire.charCodeAt(end))) end += 1;
      let integer = true;
      while (end < length && isNumberPart(wire.charCodeAt(end))) {
        integer = false;
        end += 1;
      }
      const negative = c === MINUS;
      const digits = end - at - (negative ? 1 : 0);
      // The key is compared in place: one with an escape in it is left to the serialiser.
      if (keyStart >= 0 && hasBackslash(wire, keyStart, keyEnd)) return undefined;
      const idValue = keyStart >= 0 && isIdKeyAt(wire, keyStart, keyEnd);
      // The parse writes an id as String(number): the same digits only for a plain integer other than -0.
      if (idValue && (!integer || (negative && digits === 1 && wire.charCodeAt(at + 1) === ZERO))) return undefined;
      const long = integer && digits >= 16 && !isSafeDigits(wire, negative ? at + 1 : at, digits);
      if (idValue || long) {
        pieces ??= [];
        pieces.push(wire.slice(copiedTo, at), '"', wire.slice(at, end), '"');
        copiedTo = end;
      }
      keyStart = -1;
      at = end;
      continue;
    }
    at += 1;
  }
  if (!pieces) return `${wire}\n`;
  // Joined rather than concatenated: the entry waits in memory until its file is written (up to a
  // thousand of them), and a concatenation is a tree of slices that keeps the whole frame alive too.
  pieces.push(wire.slice(copiedTo), '\n');
  return pieces.join('');
}

const QUOTE = 34;
const COLON = 58;
const BACKSLASH = 92;
const MINUS = 45;
const PLUS = 43;
const DOT = 46;
const ZERO = 48;
const LOWER_E = 101;
const UPPER_E = 69;
const COMMA = 44;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const CLOSE_OBJECT = 125;

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

function isSpace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}

function isNumberPart(code: number): boolean {
  return isDigit(code) || code === DOT || code === LOWER_E || code === UPPER_E || code === MINUS || code === PLUS;
}

/** The index of the quote closing the string that opens at `open`, or -1. */
function endOfString(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  while (close > 0) {
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return close;
    close = text.indexOf('"', close + 1);
  }
  return -1;
}

function hasBackslash(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i += 1) if (text.charCodeAt(i) === BACKSLASH) return true;
  return false;
}

/** isIdKey (src/api/wire-json.ts) of the key between `start` and `end`, read in place. */
function isIdKeyAt(text: string, start: number, end: number): boolean {
  const size = end - start;
  if (size === 2) return text.startsWith('id', start);
  if (size > 3 && text.startsWith('_id', end - 3)) return !(size === 18 && text.startsWith('next_attachment_id', start));
  return (size === 15 && text.startsWith('next_page_token', start)) || (size === 18 && text.startsWith('subgroupcategoryid', start));
}

const MAX_SAFE_DIGITS = String(Number.MAX_SAFE_INTEGER);

function isSafeDigits(text: string, from: number, count: number): boolean {
  if (count !== MAX_SAFE_DIGITS.length) return count < MAX_SAFE_DIGITS.length;
  for (let k = 0; k < count; k += 1) {
    const difference = text.charCodeAt(from + k) - MAX_SAFE_DIGITS.charCodeAt(k);
    if (difference !== 0) return difference < 0;
  }
  return true;
}
