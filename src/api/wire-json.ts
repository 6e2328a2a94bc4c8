import { isSafeNumber, parse as parseLossless, type LosslessNumber } from 'lossless-json';

/**
 * Parsing the service's JSON so that identifiers keep every digit. Ids arrive as JSON integers (even
 * above 2^53) or strings; the client hands them on as strings of their exact text. The lossless parser
 * is slower, so it is used only for payloads holding a number too long for a double.
 */

/** Keys whose values are identifiers (or id-like opaque tokens). */
export function isIdKey(key: string): boolean {
  return key === 'id' || key.endsWith('_id') || key === 'next_page_token' || key === 'subgroupcategoryid';
}

// A run of 16 or more digits right after a value separator: the only numbers that may not fit a double.
// Matches inside strings only cost the slower path, never a wrong result.
const LONG_NUMBER = /[:[,]\s*-?\d{16,}/;

export function parseWireJson(text: string): unknown {
  if (!LONG_NUMBER.test(text)) {
    return JSON.parse(text, (key, value) => (typeof value === 'number' && isIdKey(key) ? String(value) : value));
  }
  return parseLossless(text, (key, value) => (typeof value === 'number' && isIdKey(key) ? String(value) : value), parseNumber);
}

function parseNumber(text: string): number | string {
  // An integer a double cannot hold stays text, whatever its key: better a string than a wrong number.
  // Other numbers are parsed as JSON.parse would, so a field has one type whichever path read it.
  return /^-?\d+$/.test(text) && !isSafeNumber(text) ? text : Number(text);
}

export type { LosslessNumber };
