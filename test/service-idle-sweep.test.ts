import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionGuard, DEFAULT_CONNECTION_LIMITS } from '../src/service/connection-limits.js';
import { removeTlsDir, temporaryLocalTls } from '../src/service/tls.js';

/**
 * The idle timeout's second guard (src/service/idle-sweep.ts): a connection whose own Node timer is gone
 * (as one was seen gone under a loaded full run) is still closed, by the sweep; one that moves bytes is
 * not; a chat socket (upgraded) leaves the sweep.
 */

const IDLE_MS = 400;
let server: Server;
let guard: ConnectionGuard;
let tlsDir: string;
let ca: string;
/** What the test does to each server-side connection as it is made (before the sweep first looks). */
let onSecure: (socket: Socket) => void = () => undefined;

beforeAll(async () => {
  const tls = await temporaryLocalTls();
  tlsDir = tls.dir;
  ca = tls.ca;
  server = createServer({ key: tls.key, cert: tls.cert }, (_request, response) => response.end('ok'));
  guard = new ConnectionGuard({ ...DEFAULT_CONNECTION_LIMITS, idleTimeoutMs: IDLE_MS }, pino({ level: 'silent' }));
  guard.attach(server);
  server.on('secureConnection', (socket: Socket) => onSecure(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await removeTlsDir(tlsDir);
});

function connectTls(): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, ca, servername: 'localhost' });
    socket.once('secureConnect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves when the server closed `socket`, or rejects after `withinMs` (a bound to fail rather than hang). */
function closedWithin(socket: TLSSocket, withinMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still open after ${withinMs} ms`)), withinMs);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe('the idle timeout\'s second guard (the sweep)', () => {
  it('closes an idle connection whose own idle timer is gone', async () => {
    // Node's own timer cleared, as it was seen lost: only the sweep can close the connection.
    onSecure = (socket) => setImmediate(() => socket.setTimeout(0));
    const before = guard.idle!.closed;
    const socket = await connectTls();
    await closedWithin(socket, IDLE_MS * 20);
    expect(guard.idle!.closed).toBe(before + 1);
  });

  it('leaves a connection that moves bytes open past the idle time', async () => {
    onSecure = (socket) => setImmediate(() => socket.setTimeout(0));
    const before = guard.idle!.closed;
    const socket = await connectTls();
    let answers = 0;
    socket.on('data', () => { answers += 1; });
    // A request every half idle time for four idle times: bytes move at every look of the sweep.
    for (let i = 0; i < 8; i += 1) {
      socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS / 2));
    }
    expect(socket.destroyed).toBe(false);
    expect(answers).toBeGreaterThanOrEqual(8);
    expect(guard.idle!.closed).toBe(before);
    socket.destroy();
  });

  it('forgets an upgraded connection: a chat socket is the hub\'s', async () => {
    server.on('upgrade', (_request, socket: Socket) => {
      socket.setTimeout(0);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    });
    onSecure = () => undefined;
    const before = guard.idle!.closed;
    const socket = await connectTls();
    socket.write('GET /api/v1/chatdata HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    await new Promise((resolve) => socket.once('data', resolve));
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS * 4));
    expect(socket.destroyed).toBe(false);
    expect(guard.idle!.closed).toBe(before);
    socket.destroy();
  });
});
