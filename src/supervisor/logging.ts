import { pino, type Logger } from 'pino';

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
}

/** The supervisor's root logger: structured, secrets redacted, to stderr, pretty on a terminal. */
export function createLogger(options: LoggingOptions): Logger {
  const pretty = options.pretty === 'auto' ? process.stderr.isTTY === true : options.pretty;
  const base = { level: options.level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (pretty) {
    return pino({ ...base, transport: { target: 'pino-pretty', options: { destination: 2, colorize: true, translateTime: 'HH:MM:ss' } } });
  }
  return pino(base, pino.destination(2));
}
