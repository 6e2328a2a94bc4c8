/**
 * Date-time parameters. With an offset (`Z`, `+02:00`) the time is exact; without one it is read in
 * the given IANA zone (the spec's "in the user's timezone"); a bare date is midnight in that zone.
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

export function parseDateTime(text: string, timezone = 'UTC'): number | undefined {
  const match = DATE_TIME.exec(text.trim());
  if (!match) return undefined;
  const [, y, mo, d, h = '0', mi = '0', s = '0', fraction = '', offset] = match;
  const fields = [Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s)] as const;
  const [year, month, day, hour, minute, second] = fields;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return undefined;
  const millis = fraction ? Math.round(Number(fraction) * 1000) : 0;
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  if (new Date(asUtc).getUTCDate() !== day) return undefined; // 31 February and the like
  if (offset) {
    if (offset.toUpperCase() === 'Z') return asUtc;
    const sign = offset.startsWith('-') ? -1 : 1;
    const digits = offset.slice(1).replace(':', '');
    return asUtc - sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
  }
  return asUtc - zoneOffsetMs(asUtc, timezone);
}

/**
 * A whole date-time with its offset, the form downloadarchives' start_time takes: the spec's
 * `YYYY-MM-DDThh:mm:ssZ`, and (#21, as the real service does: a widely used archive tool sends
 * `1970-01-01T00:00:00+00:00`) a numeric offset and fractions of a second. A bare date or a time
 * without an offset is still refused: which zone it meant cannot be known.
 */
export function parseOffsetDateTime(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i.test(text)) return undefined;
  return parseDateTime(text);
}

/** The zone's offset from UTC at about that instant, in ms (positive east of Greenwich). */
export function zoneOffsetMs(instant: number, timezone: string): number {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
  } catch {
    return 0; // unknown zone: treat as UTC
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(instant)).map((p) => [p.type, p.value]));
  const local = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour),
    Number(parts.minute), Number(parts.second));
  return local - Math.floor(instant / 1000) * 1000;
}

/** Midnight at the start of the day holding `instant`, in the zone. */
export function startOfDay(instant: number, timezone: string): number {
  const offset = zoneOffsetMs(instant, timezone);
  const local = instant + offset;
  const midnightLocal = local - (((local % 86_400_000) + 86_400_000) % 86_400_000);
  return midnightLocal - zoneOffsetMs(midnightLocal - offset, timezone);
}
