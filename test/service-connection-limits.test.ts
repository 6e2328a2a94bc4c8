import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SERVE_HELP, serveOptionsFromArgs } from '../src/cli/serve.js';
import { DEFAULT_CONNECTION_LIMITS } from '../src/service/connection-limits.js';
import { openChat, pollUntil } from './helpers/chat-socket.js';
import { admin, call, EMAILS, loginAs, ok, startTestService, type TestService } from './helpers/service.js';

/**
 * Issue #31 item 3: connections that finish the TLS handshake and send nothing were never closed, and
 * one address could hold any number of them (with about 490 held, a real login failed). Now the local
 * service closes a connection idle past its idle timeout, a handshake or headers too slow, and destroys
 * a connection past the per-address cap as it arrives (docs/protocol.md "Connections"). Real TLS
 * sockets against the real service. The flood comes from 127.0.0.2 (all of 127/8 is this machine), the
 * real client from 127.0.0.1: two addresses, as an attacker and a member would be.
 */

const FLOOD_FROM = '127.0.0.2';

const opened: Socket[] = [];
afterEach(() => {
  for (const socket of opened.splice(0)) socket.destroy();
});

function portOf(svc: TestService): number {
  return Number(new URL(svc.baseUrl).port);
}

/** A TLS connection from `localAddress` that finishes the handshake (or is dropped) and sends nothing. */
function idleTls(svc: TestService, localAddress = FLOOD_FROM): Promise<{ socket: TLSSocket; secured: boolean }> {
  return new Promise((resolve) => {
    // tls.connect hands the address options to net.connect; its types do not list localAddress.
    const options = { host: '127.0.0.1', port: portOf(svc), localAddress, ca: svc.service.ca, servername: 'localhost' };
    const socket = tlsConnect(options as ConnectionOptions);
    opened.push(socket);
    socket.once('secureConnect', () => resolve({ socket, secured: true }));
    socket.once('error', () => resolve({ socket, secured: false }));
    socket.once('close', () => resolve({ socket, secured: false }));
  });
}

/** Resolves with the milliseconds until `socket` is closed by the other side, or rejects after `withinMs`. */
function closedWithin(socket: Socket, withinMs: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    if (socket.destroyed || socket.closed) {
      resolve(0);
      return;
    }
    const timer = setTimeout(() => reject(new Error(`still open after ${withinMs} ms`)), withinMs);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - started);
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the per-address cap on open connections', () => {
  const CAP = 100;
  let svc: TestService;
  const warnings: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) warnings.push(JSON.parse(line));
        done();
      },
    });
    svc = await startTestService({ connectionLimits: { perAddress: CAP }, logger: pino({ level: 'warn' }, sink) });
  });
  afterAll(async () => svc?.close());

  it('300 idle TLS connections from one address: the first 100 stay, the rest are refused, a real login still succeeds', async () => {
    const results = [];
    for (let i = 0; i < 300; i += 1) results.push(await idleTls(svc));
    await sleep(200);
    const open = results.filter((r) => r.secured && !r.socket.destroyed && !r.socket.closed).length;
    expect(open, 'connections from the flooding address still open').toBe(CAP);
    expect(svc.service.connections.openFrom(FLOOD_FROM)).toBe(CAP);
    expect(svc.service.connections.refused).toBe(200);

    // Another address is not held back: a member logs in and reads while the flood is held.
    const bob = await loginAs(svc, 'bob');
    ok(await call(svc, 'gettopics', { group_name: 'demo' }, { auth: bob }));

    // The refusals are logged once for the address, not once per connection.
    const refusals = warnings.filter((w) => w.msg === 'connections refused: too many open from one address');
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatchObject({ address: FLOOD_FROM, cap: CAP });

    // Closing them frees the places.
    for (const { socket } of results) socket.destroy();
    await pollUntil(async () => (svc.service.connections.openFrom(FLOOD_FROM) === 0 ? true : undefined), 'places freed');
    expect((await idleTls(svc)).secured).toBe(true);
  });

  it('the default cap is far above what a client of ours, the tests and the benches open from one address', () => {
    // Our client holds at most 8 connections (DEFAULT_CONNECTIONS); chat sockets are not counted.
    expect(DEFAULT_CONNECTION_LIMITS.perAddress).toBeGreaterThanOrEqual(500);
  });
});

describe('timeouts', () => {
  const IDLE_MS = 1_000;
  /**
   * How long a test waits for the close: far below the service's default idle timeout (120 s), so a
   * close within it is the configured 1 s one; not a tight bound, which a loaded machine (the suite's
   * other workers, the linear-time tests) missed twice in full runs (still open after 5 s).
   */
  const CLOSE_WITHIN_MS = 20_000;
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService({
      connectionLimits: { idleTimeoutMs: IDLE_MS, handshakeTimeoutMs: 1_000, headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 },
      // No pings while the chat socket below sits idle: only the idle timeout could close it.
      pingIntervalMs: 60_000,
    });
  });
  afterAll(async () => svc?.close());

  it('a TLS connection that sends nothing is closed after the idle timeout', async () => {
    const { socket, secured } = await idleTls(svc, '127.0.0.1');
    expect(secured).toBe(true);
    const ms = await closedWithin(socket, CLOSE_WITHIN_MS);
    expect(ms).toBeGreaterThanOrEqual(IDLE_MS * 0.8);
  });

  it('a connection left idle after a request (keep-alive) is closed after the idle timeout', async () => {
    const { socket } = await idleTls(svc, '127.0.0.1');
    socket.write('GET /api/v1/gettopics HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await new Promise((resolve) => socket.once('data', resolve));
    expect(await closedWithin(socket, CLOSE_WITHIN_MS)).toBeGreaterThanOrEqual(IDLE_MS * 0.8);
  });

  it('a TCP connection that never starts the TLS handshake is closed after the handshake timeout', async () => {
    const socket = tcpConnect({ host: '127.0.0.1', port: portOf(svc) });
    opened.push(socket);
    await new Promise((resolve) => socket.once('connect', resolve));
    await closedWithin(socket, 5_000);
  });

  it('headers trickled in slower than the headers timeout allows: the connection is closed', async () => {
    const { socket } = await idleTls(svc, '127.0.0.1');
    socket.write('GET /api/v1/gettopics HTTP/1.1\r\nHost: localhost\r\n');
    // A byte every 200 ms keeps the socket busy (so the idle timeout never fires) but never ends the headers.
    const drip = setInterval(() => socket.writable && socket.write('x'), 200);
    try {
      await closedWithin(socket, 6_000);
    } finally {
      clearInterval(drip);
    }
  });

  it('a chat websocket stays open well past the idle timeout, and still carries messages', async () => {
    const bob = await loginAs(svc, 'bob');
    const chat = ok(await admin(svc, 'chats', { group: 'demo', owner: EMAILS.bob, subject: 'idle chat', desc: 'd', members: [EMAILS.mo] }));
    const socket = await openChat(svc, bob, String(chat.chat_sub.id), { no_history: 'true' });
    try {
      await sleep(IDLE_MS * 3.5);
      expect(socket.isOpen).toBe(true);
      ok(await admin(svc, 'chats/messages', { chat: String(chat.id), user: EMAILS.mo, message: 'still here' }));
      await socket.waitForMessage('still here');
    } finally {
      socket.close();
    }
  });
});

describe('groupwire serve flags', () => {
  it('set the limits, in seconds; a bad value is a usage error; --help lists them with their defaults', async () => {
    const options = await serveOptionsFromArgs([
      '--max-connections-per-address', '50', '--idle-timeout', '5', '--headers-timeout', '2', '--request-timeout', '60', '--handshake-timeout', '1.5',
    ]);
    expect(options.connectionLimits).toEqual({ perAddress: 50, idleTimeoutMs: 5_000, headersTimeoutMs: 2_000, requestTimeoutMs: 60_000, handshakeTimeoutMs: 1_500 });
    expect((await serveOptionsFromArgs([])).connectionLimits).toEqual({});
    await expect(serveOptionsFromArgs(['--idle-timeout', '0'])).rejects.toThrow('--idle-timeout must be a positive number, got 0');
    await expect(serveOptionsFromArgs(['--max-connections-per-address', '2.5'])).rejects.toThrow('whole number');
    await expect(serveOptionsFromArgs(['--headers-timeout', '400'])).rejects.toThrow('--headers-timeout must not be longer than --request-timeout');
    expect(SERVE_HELP).toContain('--max-connections-per-address N');
    expect(SERVE_HELP).toContain('(default 512)');
    expect(SERVE_HELP).toContain('--idle-timeout SECONDS');
  });
});
