import {
  CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, endOfString, hasBackslash, isDigit, isNumberPart, isSafeDigits, isSpace, MINUS,
  OPEN_ARRAY, QUOTE, ZERO,
} from './json-text.js';
import { isIdKey } from './wire-json.js';

/**
 * The jsonl entry of a chat message made from the JSON text the service sent (`ctx.wire`), instead of
 * serialising the parsed message again (a fifth of the logger's time, and a second copy of every
 * message on the heap). The entry must be what the format promises (docs/plugins/logger.md's jsonl): every
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
      const idValue = keyStart >= 0 && isIdKey(wire.slice(keyStart, keyEnd));
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
