import { connect, type Socket } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import { makeEnv, type Env } from './helpers/supervisor.js';

/** /status/events against clients that never read, and against too many clients (issue #31 item 7). */

let env: Env | undefined;
let ops: Operations | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await ops?.close();
  ops = undefined;
  await env?.close();
  env = undefined;
});

/** The cap docs/operations.md states. */
const MAX_STREAMS = 16;

async function start(errors: RecentErrors, pushEveryMs: number) {
  env = await makeEnv([]);
  env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'responder' }] }]);
  const supervisor = await env.start();
  ops = new Operations({
    supervisor, config: { listen: '127.0.0.1:0', lag_probe_seconds: 5 }, log: env.log.logger, errors, stateDir: env.stateDir, pushEveryMs,
  });
  await ops.start();
}

/** Opens /status/events on a raw socket and then never reads from it again (the kernel's buffers fill, then node's). */
async function stalledStream(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(`GET /status/events HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
  // The head arrives, then the socket is paused for good: it never reads another byte.
  await new Promise<void>((resolve) => socket.once('data', () => resolve()));
  socket.pause();
  return socket;
}

/** A log warning with a new 1 KB message each time: every snapshot differs from the last (none can be skipped as unchanged). */
function churn(errors: RecentErrors, n: number): void {
  errors.take(JSON.stringify({ level: 40, time: Date.now(), msg: `warning ${n} ${'x'.repeat(1000)}`, reason: 'y'.repeat(300) }));
}

describe('ops endpoint: /status/events under load', () => {
  test('streams that never read keep a bounded buffer; streams over the cap are refused with 503 and Retry-After; a reader still gets updates',
    { timeout: 90_000 }, async () => {
      const errors = new RecentErrors();
      for (let n = 0; n < 50; n += 1) churn(errors, n);
      await start(errors, 10);
      const url = ops!.url!;
      for (let i = 0; i < MAX_STREAMS - 1; i += 1) await stalledStream(url);

      // One more, read as a browser would: it takes the last place.
      const reader = await request(`${url}/status/events`);
      expect(reader.statusCode).toBe(200);
      // What came lately (the tail only: the reader gets a snapshot 100 times a second), and how much in all.
      let received = '';
      let receivedInAll = 0;
      reader.body.setEncoding('utf8');
      reader.body.on('data', (chunk: string) => {
        receivedInAll += chunk.length;
        received += chunk;
        if (received.length > 1_000_000) received = received.slice(-100_000);
      });

      // Over the cap: refused, told when to come back.
      const refused = await request(`${url}/status/events`);
      expect(refused.statusCode).toBe(503);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(await refused.body.text()).toMatch(/too many/i);

      // Every push differs from the last for 4 s; the stalled streams' buffers must not grow with it.
      let n = 50;
      const churner = setInterval(() => churn(errors, (n += 1)), 2);
      const snapshotBytes = JSON.stringify(await (await request(`${url}/status.json`)).body.json()).length;
      let most = 0;
      const until = Date.now() + 4_000;
      while (Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        most = Math.max(most, ops!.statusStreams().bufferedBytes);
      }
      clearInterval(churner);
      const figures = ops!.statusStreams();
      console.info(`status streams: ${figures.open} open, at most ${(most / 1048576).toFixed(2)} MiB buffered (snapshot ${snapshotBytes} bytes)`);
      expect(figures.open).toBe(MAX_STREAMS);
      // At most one frame and a little per stream: no backlog of pushes.
      expect(most).toBeLessThan(MAX_STREAMS * (snapshotBytes + 64 * 1024));

      // The reader that does read got the changes as they came.
      const before = receivedInAll;
      await new Promise((resolve) => setTimeout(resolve, 500));
      churn(errors, (n += 1));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receivedInAll).toBeGreaterThan(before);
      expect(received).toContain(`warning ${n} `);

      // Nothing changes: the reader gets ticks (clock and process figures), not the whole snapshot again.
      await new Promise((resolve) => setTimeout(resolve, 200));
      received = '';
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(received).toContain('event: tick');
      expect(received).not.toContain('event: status');
      reader.body.destroy();
    });
});
