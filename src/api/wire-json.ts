import type { LosslessNumber } from 'lossless-json';
import { endOfString, isDigit, isNumberPart, isSafeDigits, MINUS } from './json-text.js';

/**
 * Parsing the service's JSON so that identifiers keep every digit. Ids arrive as JSON integers (even
 * above 2^53) or strings; the client hands them on as strings of their exact text.
 */

/** Keys whose values are identifiers (or id-like opaque tokens). */
export function isIdKey(key: string): boolean {
  // next_attachment_id is a counter (a number in the spec's draft table), not an object's id.
  return key === 'id' || (key.endsWith('_id') && key !== 'next_attachment_id') || key === 'next_page_token' || key === 'subgroupcategoryid';
}

/**
 * Parses a payload; integers a double cannot hold become strings of their exact digits (whatever their
 * key), and numbers under id keys become strings. Long integers are quoted by a scan before JSON.parse
 * and ids are converted by a walk afterwards: both several times faster than a reviver or a JSON parser
 * written in JavaScript, which matters for chat frames (every one carries ids).
 */
export function parseWireJson(text: string): unknown {
  return idsToStrings(JSON.parse(quoteLongIntegers(text)));
}

/** Wraps in quotes every integer outside strings that has 16+ digits and is not a safe integer. */
export function quoteLongIntegers(text: string): string {
  // Most payloads have no run of 16 digits anywhere, which a look at every 16th character settles.
  if (!hasDigitRun(text, 16)) return text;
  let out = '';
  let copiedTo = 0;
  let at = 0;
  const length = text.length;
  while (at < length) {
    // Between strings: structure and numbers. Strings are skipped with indexOf, not char by char.
    const quote = text.indexOf('"', at);
    const regionEnd = quote < 0 ? length : quote;
    for (let i = at; i < regionEnd; i += 1) {
      const c = text.charCodeAt(i);
      if (!isDigit(c) && c !== MINUS) continue;
      let end = i + 1;
      while (end < regionEnd && isDigit(text.charCodeAt(end))) end += 1;
      const negative = c === MINUS;
      const digits = end - i - (negative ? 1 : 0);
      let integer = true;
      // A fraction or an exponent makes it a float, read by JSON.parse as any other number; its
      // digits are part of this token, not a number of their own.
      while (end < regionEnd && isNumberPart(text.charCodeAt(end))) {
        integer = false;
        end += 1;
      }
      if (integer && digits >= 16 && !isSafeDigits(text, negative ? i + 1 : i, digits)) {
        out += `${text.slice(copiedTo, i)}"${text.slice(i, end)}"`;
        copiedTo = end;
      }
      i = end - 1;
    }
    if (quote < 0) break;
    const close = endOfString(text, quote);
    if (close < 0) break;
    at = close + 1;
  }
  return copiedTo === 0 ? text : out + text.slice(copiedTo);
}

/**
 * Whether `text` has `length` digits in a row. A run that long covers one of every `length`-th
 * characters, so only those are looked at until one is a digit (then its whole run is measured).
 */
function hasDigitRun(text: string, length: number): boolean {
  let at = length - 1;
  while (at < text.length) {
    if (!isDigit(text.charCodeAt(at))) {
      at += length;
      continue;
    }
    let start = at;
    while (start > 0 && isDigit(text.charCodeAt(start - 1))) start -= 1;
    let end = at + 1;
    while (end < text.length && isDigit(text.charCodeAt(end))) end += 1;
    if (end - start >= length) return true;
    // The next run starts after `end` (not a digit), and covers the length-th character from there.
    at = end + length;
  }
  return false;
}
/** Numbers under id keys become their decimal text, in place, at any depth. */
function idsToStrings(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (const item of value) idsToStrings(item);
    return value;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const field = record[key];
    if (typeof field === 'number') {
      if (isIdKey(key)) record[key] = String(field);
    } else if (field !== null && typeof field === 'object') idsToStrings(field);
  }
  return value;
}

export type { LosslessNumber };
