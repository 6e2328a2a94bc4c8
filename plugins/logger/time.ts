/**
 * Dates and times in an IANA time zone, with nothing but Intl: the day a message belongs to, the time
 * shown in a transcript line, and the instant a local date-time names (for `transcript export`).
 */

export interface ZonedParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
  /** The zone's offset from UTC at that instant, in minutes (+120 for UTC+02:00). */
  offsetMinutes: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let made = formatters.get(timeZone);
  if (!made) {
    made = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'longOffset',
    });
    formatters.set(timeZone, made);
  }
  return made;
}

/**
 * UTC, the default zone, is computed from Date's UTC fields without Intl: a DateTimeFormat with a time
 * zone makes ICU load its zone data, about 10 MB of a bot's resident memory (#20).
 */
const isUtc = (timeZone: string) => timeZone === 'UTC' || timeZone === 'Etc/UTC';

/** True when `timeZone` is a zone Intl knows (`UTC`, `Europe/Berlin`, ...). */
export function isTimeZone(timeZone: string): boolean {
  if (isUtc(timeZone)) return true;
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** Per zone, the parts of the minute last asked for: transcripts format many messages of one minute. */
const lastMinute = new Map<string, { minute: number; parts: ZonedParts }>();

/**
 * The wall-clock parts of an instant in a zone. Intl is slow (formatToParts), and zone offsets change
 * only on whole minutes, so a minute's parts are computed once and the seconds added.
 */
export function zonedParts(date: Date, timeZone: string): ZonedParts {
  const time = date.getTime();
  const minute = Math.floor(time / 60_000);
  let cached = lastMinute.get(timeZone);
  if (cached?.minute !== minute) {
    cached = { minute, parts: computeZonedParts(new Date(minute * 60_000), timeZone) };
    lastMinute.set(timeZone, cached);
  }
  const within = time - minute * 60_000;
  return { ...cached.parts, second: Math.floor(within / 1000), millisecond: within % 1000 };
}

function computeZonedParts(date: Date, timeZone: string): ZonedParts {
  if (isUtc(timeZone)) {
    return {
      year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate(), hour: date.getUTCHours(),
      minute: date.getUTCMinutes(), second: date.getUTCSeconds(), millisecond: date.getUTCMilliseconds(), offsetMinutes: 0,
    };
  }
  const parts: Record<string, string> = {};
  for (const part of formatter(timeZone).formatToParts(date)) parts[part.type] = part.value;
  const offset = /GMT(?:([+-])(\d\d):(\d\d))?/.exec(parts.timeZoneName ?? '');
  const offsetMinutes = offset?.[1] ? (offset[1] === '-' ? -1 : 1) * (Number(offset[2]) * 60 + Number(offset[3])) : 0;
  return {
    year: Number(parts.year), month: Number(parts.month), day: Number(parts.day),
    hour: Number(parts.hour), minute: Number(parts.minute), second: Number(parts.second),
    millisecond: date.getUTCMilliseconds(), offsetMinutes,
  };
}

const two = (n: number) => String(n).padStart(2, '0');

function offsetText(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
}

/**
 * Formats an instant in a zone. Tokens: `YYYY MM DD HH mm ss SSS Z` (Z is the offset, `+02:00`);
 * anything else is copied.
 */
export function formatZoned(date: Date, timeZone: string, pattern: string): string {
  const p = zonedParts(date, timeZone);
  const values: Record<string, string> = {
    YYYY: String(p.year).padStart(4, '0'), MM: two(p.month), DD: two(p.day), HH: two(p.hour), mm: two(p.minute),
    ss: two(p.second), SSS: String(p.millisecond).padStart(3, '0'), Z: offsetText(p.offsetMinutes),
  };
  return pattern.replace(/YYYY|SSS|MM|DD|HH|mm|ss|Z/g, (token) => values[token]!);
}

/** The calendar day (`YYYY-MM-DD`) of an instant in a zone. */
export function dayOf(date: Date, timeZone: string): string {
  // Asked for every message a logger takes: the answer for the last minute is kept.
  const minute = Math.floor(date.getTime() / 60_000);
  const cached = lastDay.get(timeZone);
  if (cached?.minute === minute) return cached.day;
  const day = formatZoned(date, timeZone, 'YYYY-MM-DD');
  lastDay.set(timeZone, { minute, day });
  return day;
}

const lastDay = new Map<string, { minute: number; day: string }>();

/** A message's time: its `created`, or now when it has none that parses. */
export function messageDate(created: string | undefined): Date {
  const time = created ? Date.parse(created) : Number.NaN;
  return new Date(Number.isNaN(time) ? Date.now() : time);
}

/** The instant a wall-clock time in a zone names (the earlier one when a clock change repeats it). */
export function zonedToInstant(
  local: { year: number; month: number; day: number; hour?: number; minute?: number; second?: number; millisecond?: number },
  timeZone: string,
): Date {
  const wall = Date.UTC(local.year, local.month - 1, local.day, local.hour ?? 0, local.minute ?? 0, local.second ?? 0, local.millisecond ?? 0);
  let guess = wall - zonedParts(new Date(wall), timeZone).offsetMinutes * 60_000;
  // One correction covers a guess that landed on the other side of a clock change.
  const corrected = wall - zonedParts(new Date(guess), timeZone).offsetMinutes * 60_000;
  if (corrected !== guess) guess = Math.min(guess, corrected);
  return new Date(guess);
}
