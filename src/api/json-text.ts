/**
 * Reading JSON text in place, character codes at a time: what the client's id-keeping parse
 * (wire-json.ts) and the wire line (wire-line.ts) both scan with.
 */

export const QUOTE = 34;
export const COLON = 58;
export const BACKSLASH = 92;
export const MINUS = 45;
export const PLUS = 43;
export const DOT = 46;
export const ZERO = 48;
export const LOWER_E = 101;
export const UPPER_E = 69;
export const COMMA = 44;
export const OPEN_ARRAY = 91;
export const CLOSE_ARRAY = 93;
export const CLOSE_OBJECT = 125;

export function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

export function isSpace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}

/** What may follow a number's integer digits: its fraction and exponent. */
export function isNumberPart(code: number): boolean {
  return isDigit(code) || code === DOT || code === LOWER_E || code === UPPER_E || code === MINUS || code === PLUS;
}

/** The index of the quote that closes the string opening at `open`, or -1 when none does. */
export function endOfString(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  while (close > 0) {
    // Escaped when an odd number of backslashes stands right before it.
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return close;
    close = text.indexOf('"', close + 1);
  }
  return -1;
}

export function hasBackslash(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i += 1) if (text.charCodeAt(i) === BACKSLASH) return true;
  return false;
}

/** Number.MAX_SAFE_INTEGER's digits: a 16-digit integer is safe when it is not above them. */
const MAX_SAFE_DIGITS = String(Number.MAX_SAFE_INTEGER);

/** Whether the `count` digits at `from` are a safe integer's (no leading zeros: JSON has none). */
export function isSafeDigits(text: string, from: number, count: number): boolean {
  if (count !== MAX_SAFE_DIGITS.length) return count < MAX_SAFE_DIGITS.length;
  for (let k = 0; k < count; k += 1) {
    const difference = text.charCodeAt(from + k) - MAX_SAFE_DIGITS.charCodeAt(k);
    if (difference !== 0) return difference < 0;
  }
  return true;
}
