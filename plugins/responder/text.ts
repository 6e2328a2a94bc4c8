/** Small text helpers for answers: HTML as plain text, dates in a time zone, shortening. */
import { htmlToLine } from '../../src/index.js';

/** HTML (activity entries, summaries) as one line of plain text. */
export const htmlToText = htmlToLine;

const formats = new Map<string, Intl.DateTimeFormat>();

/**
 * UTC, the default zone, needs no Intl: a DateTimeFormat with a time zone makes ICU load its zone data,
 * about 10 MB of a bot's resident memory (#20).
 */
const isUtc = (timeZone: string) => timeZone === 'UTC' || timeZone === 'Etc/UTC';

/** `2024-05-01 10:00` in a time zone (the text as given when it is no date). */
export function formatDate(text: string | undefined, timeZone: string): string {
  const time = Date.parse(text ?? '');
  if (Number.isNaN(time)) return text ?? '';
  if (isUtc(timeZone)) return new Date(time).toISOString().slice(0, 16).replace('T', ' ');
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
    });
    formats.set(timeZone, format);
  }
  const parts: Record<string, string> = {};
  for (const part of format.formatToParts(new Date(time))) parts[part.type] = part.value;
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}`;
}

export function isTimeZone(timeZone: string): boolean {
  if (isUtc(timeZone)) return true;
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return true;
  } catch {
    return false;
  }
}

/** At most `max` characters, cut at a word with `…`. */
export function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, '');
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
