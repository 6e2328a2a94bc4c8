import { isSafeNumber, type LosslessNumber } from 'lossless-json';

/**
 * Parsing the service's JSON so that identifiers keep every digit. Ids arrive as JSON integers (even
 * above 2^53) or strings; the client hands them on as strings of their exact text.
 */

/** Keys whose values are identifiers (or id-like opaque tokens). */
export function isIdKey(key: string): boolean {
  return key === 'id' || key.endsWith('_id') || key === 'next_page_token' || key === 'subgroupcategoryid';
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
  let out = '';
  let copiedTo = 0;
  const length = text.length;
  for (let i = 0; i < length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string, escapes included.
      for (i += 1; i < length; i += 1) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i += 1;
        else if (d === QUOTE) break;
      }
    } else if (isDigit(c) || c === MINUS) {
      let end = i + 1;
      while (end < length && isDigit(text.charCodeAt(end))) end += 1;
      const digits = end - i - (c === MINUS ? 1 : 0);
      let integer = true;
      // A fraction or an exponent makes it a float, read by JSON.parse as any other number; its
      // digits are part of this token, not a number of their own.
      while (end < length && isNumberPart(text.charCodeAt(end))) {
        integer = false;
        end += 1;
      }
      if (integer && digits >= 16 && !isSafeNumber(text.slice(i, end))) {
        out += `${text.slice(copiedTo, i)}"${text.slice(i, end)}"`;
        copiedTo = end;
      }
      i = end - 1;
    }
  }
  return copiedTo === 0 ? text : out + text.slice(copiedTo);
}

const QUOTE = 34;
const BACKSLASH = 92;
const MINUS = 45;
const PLUS = 43;
const DOT = 46;
const LOWER_E = 101;
const UPPER_E = 69;

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** What may follow a number's integer digits: its fraction and exponent. */
function isNumberPart(code: number): boolean {
  return isDigit(code) || code === DOT || code === LOWER_E || code === UPPER_E || code === MINUS || code === PLUS;
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
