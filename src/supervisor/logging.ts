import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import { StderrSink } from './stderr-sink.js';

/** Every place a secret could sit in a log line; pino replaces them before anything is written. */
const SECRET_KEYS = ['password', 'token', 'csrf', 'csrf_token', 'cookie', 'authorization', 'app_token', 'admin_token', 'twofactor', 'set-cookie'];

export const REDACTED_PATHS = SECRET_KEYS.flatMap((key) => {
  const name = /^[A-Za-z_]\w*$/.test(key) ? key : `["${key}"]`;
  const join = (prefix: string) => (name.startsWith('[') ? `${prefix}${name}` : `${prefix}.${name}`);
  // Up to four levels deep: { err: { request: { headers: { authorization } } } }.
  return [name, join('*'), join('*.*'), join('*.*.*')];
});

export interface LoggingOptions {
  level: string;
  /** Human-readable lines (pino-pretty); 'auto' means when stderr is a terminal. */
  pretty: boolean | 'auto';
  /** Also given every JSON line before it is written (the operations endpoint keeps the last errors). */
  tee?: { take(line: string): void };
  /** Where the lines go (default stderr, through a StderrSink). */
  sink?: { write(line: string): boolean };
}

/**
 * The supervisor's root logger: structured, secrets redacted, to stderr, pretty on a terminal. Both
 * write through a StderrSink, in this thread: a terminal that closes (SIGHUP is ignored) costs the
 * log lines, not the process.
 */
export function createLogger(options: LoggingOptions): Logger {
  const pretty = options.pretty === 'auto' ? process.stderr.isTTY === true : options.pretty;
  const base = { level: options.level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  const sink = options.sink ?? new StderrSink();
  const format = pretty ? prettyFormatter() : undefined;
  const tee = options.tee;
  if (format) return pino(base, { write: (line: string) => { tee?.take(line); return sink.write(format(line)); } });
  if (tee) return pino(base, { write: (line: string) => { tee.take(line); return sink.write(line); } });
  return pino(base, sink);
}

/**
 * pino-pretty's formatter, called per line in this thread (not its worker transport, whose stream
 * dies with the terminal). pino-pretty is a development dependency: without it, plain JSON lines.
 */
function prettyFormatter(): ((line: string) => string) | undefined {
  try {
    const { prettyFactory } = createRequire(import.meta.url)('pino-pretty') as {
      prettyFactory(options: Record<string, unknown>): (line: string) => string;
    };
    return prettyFactory({ colorize: true, translateTime: 'HH:MM:ss' });
  } catch {
    return undefined;
  }
}
