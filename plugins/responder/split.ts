import { MAX_POST_LENGTH } from '../../src/index.js';

/** The longest chat message the service takes (docs/protocol.md "Chats"), in UTF-16 code units. */
export const MAX_CHAT_MESSAGE_LENGTH = MAX_POST_LENGTH;

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * Splits a reply into chat messages of at most `max` characters: at the last line break that fits,
 * else at the last space, else (one long word) at `max` — never inside a surrogate pair. Parts
 * that would be blank are left out; the break itself is dropped.
 */
export function splitMessage(text: string, max = MAX_CHAT_MESSAGE_LENGTH): string[] {
  if (max < 2) throw new RangeError('max must be at least 2');
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = rest.lastIndexOf('\n', max);
    let skip = 1;
    if (cut <= 0) {
      cut = lastSpace(rest, max);
      if (cut <= 0) {
        cut = isHighSurrogate(rest.charCodeAt(max - 1)) ? max - 1 : max;
        skip = 0;
      }
    }
    // trimEnd, not /\s+$/: that regex rescans a long run of spaces from each of its positions.
    const part = rest.slice(0, cut).trimEnd();
    if (part.trim() !== '') parts.push(part);
    rest = rest.slice(cut + skip).replace(/^\n+/, '');
  }
  if (rest.trim() !== '') parts.push(rest);
  return parts;
}

/** The index of the last whitespace character at or before `max`, or -1. */
function lastSpace(text: string, max: number): number {
  for (let i = max; i > 0; i -= 1) if (/\s/.test(text[i]!)) return i;
  return -1;
}
