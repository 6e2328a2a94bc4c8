import { LogLevel, type Logger as SlackLogger } from '@slack/web-api';
import type { Logger } from 'pino';

/**
 * The SDKs' logger interface on the plugin's pino logger. The SDKs are chatty (a warning per 429, the
 * payload of every envelope at debug), and the relay logs what matters itself, so everything but
 * their errors goes to debug; their errors become warnings.
 */
export function slackLogger(log: Logger): SlackLogger {
  const line = (parts: unknown[]) => parts.map((part) => (typeof part === 'string' ? part : safeJson(part))).join(' ');
  return {
    debug: (...parts: unknown[]) => log.debug({ sdk: true }, line(parts)),
    info: (...parts: unknown[]) => log.debug({ sdk: true }, line(parts)),
    warn: (...parts: unknown[]) => log.debug({ sdk: true }, line(parts)),
    error: (...parts: unknown[]) => log.warn({ sdk: true }, line(parts)),
    setLevel: () => undefined,
    getLevel: () => (log.isLevelEnabled('debug') ? LogLevel.DEBUG : LogLevel.INFO),
    setName: () => undefined,
  };
}

function safeJson(value: unknown): string {
  if (value instanceof Error) return value.message;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
