/** One warning or error from the log, as the status page lists it. */
export interface RecentError {
  /** ISO 8601. */
  at: string;
  level: 'warn' | 'error' | 'fatal';
  msg: string;
  bot?: string;
  chat?: string;
  plugin?: string;
  /** The reason, error message or type the line carried (already redacted, as the log line is). */
  detail?: string;
}

const LEVELS: Record<number, RecentError['level']> = { 40: 'warn', 50: 'error', 60: 'fatal' };

/**
 * The last warnings and errors of the process, read off the log lines as they are written (after
 * pino's redaction, so nothing here is less safe than the log). Lines below warn are told apart by
 * their first bytes and never parsed.
 */
export class RecentErrors {
  private readonly lines: RecentError[] = [];
  /** Every warning and error since the start, by level (for the metrics). */
  readonly counts = { warn: 0, error: 0, fatal: 0 };

  constructor(private readonly keep = 50) {}

  /** A pino JSON line (`{"level":50,...}`). */
  take(line: string): void {
    // pino writes `{"level":NN,` first: anything under 40 is skipped without parsing.
    if (line.charCodeAt(9) < 52 /* '4' */ || !line.startsWith('{"level":')) return;
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const level = LEVELS[parsed.level as number];
    if (!level) return;
    this.counts[level] += 1;
    const entry: RecentError = {
      at: new Date(typeof parsed.time === 'number' ? parsed.time : Date.now()).toISOString(),
      level,
      msg: String(parsed.msg ?? ''),
    };
    for (const key of ['bot', 'chat', 'plugin'] as const) if (typeof parsed[key] === 'string') entry[key] = parsed[key];
    const detail = parsed.reason ?? (parsed.err as { message?: unknown } | undefined)?.message ?? parsed.type;
    if (detail !== undefined) entry.detail = String(detail).slice(0, 300);
    this.lines.push(entry);
    if (this.lines.length > this.keep) this.lines.shift();
  }

  /** Newest first. */
  list(): RecentError[] {
    return this.lines.toReversed();
  }
}
