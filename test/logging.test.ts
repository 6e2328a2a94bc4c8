import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, REDACTED_PATHS } from '../src/supervisor/logging.js';
import { StderrSink } from '../src/supervisor/stderr-sink.js';

afterEach(() => vi.restoreAllMocks());

/** A logger with the supervisor's redaction, writing into memory. */
function memory(): { log: Logger; text: () => string; clear: () => void } {
  const chunks: string[] = [];
  const log = pino({ level: 'trace', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, { write: (chunk: string) => void chunks.push(chunk) });
  return { log, text: () => chunks.join(''), clear: () => void (chunks.length = 0) };
}

const SECRETS = ['password', 'token', 'csrf', 'cookie', 'authorization'] as const;
const OTHER_SECRETS = ['csrf_token', 'app_token', 'admin_token', 'twofactor'] as const;

function nest(depth: number, key: string, value: string): Record<string, unknown> {
  let object: Record<string, unknown> = { [key]: value, visible: `plain-${depth}` };
  for (let level = depth; level > 0; level -= 1) object = { [`level${level}`]: object };
  return object;
}

describe('REDACTED_PATHS', () => {
  describe.each(SECRETS)('%s', (key) => {
    it.each([0, 1, 2, 3])('is redacted %i level(s) deep', (depth) => {
      const { log, text } = memory();
      const secret = `S3CRET-${key}-${depth}`;
      log.info(nest(depth, key, secret), 'a line');
      expect(text()).not.toContain(secret);
      expect(text()).toContain('[redacted]');
      expect(text()).toContain(`plain-${depth}`); // the rest of the line is kept
    });
  });

  it.each(OTHER_SECRETS)('%s is redacted at the top and up to three levels deep', (key) => {
    const { log, text } = memory();
    log.info({ [key]: 'TOP-SECRET', a: { [key]: 'NESTED-SECRET', b: { c: { [key]: 'DEEP-SECRET' } } } }, 'a line');
    expect(text()).not.toMatch(/TOP-SECRET|NESTED-SECRET|DEEP-SECRET/);
  });

  it('redacts an error\'s request headers and parameters', () => {
    const { log, text } = memory();
    log.error({ err: { request: { headers: { authorization: 'Basic AAAA', cookie: 'groupsio=XYZ' }, params: { password: 'PW' } } } }, 'failed');
    expect(text()).not.toMatch(/Basic AAAA|groupsio=XYZ|"PW"/);
  });

  it('redacts request headers and login options as the client logs them', () => {
    const { log, text } = memory();
    log.debug({ headers: { cookie: 'sid=COOKIE1', authorization: 'Bearer AUTH1', accept: 'application/json' } }, 'request');
    log.info({ login: { email: 'bot@example.com', password: 'PW1' }, token: 'TOK1' }, 'bot config');
    log.info({ session: { csrf: 'CSRF1', cookie: 'COOKIE2' } }, 'session');
    const out = text();
    for (const secret of ['COOKIE1', 'AUTH1', 'PW1', 'TOK1', 'CSRF1', 'COOKIE2']) expect(out).not.toContain(secret);
    expect(out).toContain('application/json');
    expect(out).toContain('bot@example.com');
  });

  it('redacts the secrets of a logged error', () => {
    const { log, text } = memory();
    const err = Object.assign(new Error('login refused'), { password: 'ERR-PW', token: 'ERR-TOKEN' });
    log.error({ err }, 'failed');
    expect(text()).not.toMatch(/ERR-PW|ERR-TOKEN/);
    expect(text()).toContain('login refused');
  });

  it('redacts in child loggers (per bot, chat and plugin) and their bindings', () => {
    const { log, text } = memory();
    const child = log.child({ bot: 'helper', token: 'BINDING-TOKEN' }).child({ chat: 'general' });
    child.warn({ password: 'CHILD-PW', detail: { csrf: 'CHILD-CSRF' } }, 'from a plugin');
    expect(text()).not.toMatch(/BINDING-TOKEN|CHILD-PW|CHILD-CSRF/);
    expect(text()).toContain('"chat":"general"');
  });

  it('leaves objects without secrets untouched', () => {
    const { log, text } = memory();
    log.info({ msgNum: 7, chat: { id: '1', subject: 'general' }, tokens: 3 }, 'plain');
    const line = JSON.parse(text()) as Record<string, unknown>;
    expect(line).toMatchObject({ msgNum: 7, chat: { id: '1', subject: 'general' }, tokens: 3, msg: 'plain' });
    expect(text()).not.toContain('[redacted]');
  });
});

describe('createLogger', () => {
  it('takes the level; pretty false gives a plain JSON logger', () => {
    const log = createLogger({ level: 'warn', pretty: false });
    expect(log.level).toBe('warn');
    expect(log.isLevelEnabled('info')).toBe(false);
    expect(log.isLevelEnabled('error')).toBe(true);
  });

  it('pretty auto is plain when stderr is not a terminal', () => {
    const had = Object.getOwnPropertyDescriptor(process.stderr, 'isTTY');
    Object.defineProperty(process.stderr, 'isTTY', { value: false, configurable: true });
    try {
      const log = createLogger({ level: 'silent', pretty: 'auto' });
      expect(log.level).toBe('silent');
      const stream = (log as unknown as Record<symbol, object>)[pino.symbols.streamSym]!;
      expect(stream.constructor.name).toBe('StderrSink'); // fd 2 directly, no pino-pretty formatting
    } finally {
      if (had) Object.defineProperty(process.stderr, 'isTTY', had);
      else delete (process.stderr as { isTTY?: boolean }).isTTY;
    }
  });

  it('writes through a sink that survives a stderr that is gone (EBADF/EIO/EPIPE drop the lines, never throw)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-sink-'));
    const fd = openSync(join(dir, 'read-only'), 'w+');
    closeSync(fd);
    const readOnly = openSync(join(dir, 'read-only'), 'r');
    try {
      const sink = new StderrSink(readOnly);
      expect(sink.write('a line\n')).toBe(true);
      expect(sink.closed).toBe(true);
      expect(sink.write('another\n')).toBe(true);
    } finally {
      closeSync(readOnly);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('redacts what it writes', () => {
    // The sink writes straight to fd 2; catch the writes at the logger's stream instead.
    const written: string[] = [];
    const log = createLogger({ level: 'info', pretty: false });
    const stream = (log as unknown as Record<symbol, { write(chunk: string): boolean }>)[pino.symbols.streamSym]!;
    vi.spyOn(stream, 'write').mockImplementation((chunk: string) => {
      written.push(chunk);
      return true;
    });
    log.info({ password: 'CL-PW', nested: { token: 'CL-TOKEN', cookie: 'CL-COOKIE' }, authorization: 'CL-AUTH', csrf: 'CL-CSRF' }, 'hello');
    const out = written.join('');
    expect(out).toContain('"msg":"hello"');
    expect(out).not.toMatch(/CL-PW|CL-TOKEN|CL-COOKIE|CL-AUTH|CL-CSRF/);
  });
});
