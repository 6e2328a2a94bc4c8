import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { DurableQueue } from '../src/store/durable-queue.js';
import { IrcServer, IrcWatcher, relayPlugin, type IrcServerKind } from './helpers/irc-server.js';
import { kill, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Nothing lost when things go down: the IRC server killed in the middle of a stream (and kept closed to
 * the relay by a password for a while after it is back), groupwire itself killed with lines still
 * queued for IRC, and a queue that reaches its bound (loudly).
 */

let server: IrcServer | undefined;
let env: Env | undefined;
const watchers: IrcWatcher[] = [];

afterEach(async () => {
  for (const watcher of watchers.splice(0)) watcher.close();
  await env?.close();
  await server?.close();
  env = undefined;
  server = undefined;
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const BOB = '<B\u200bob M\u200bember>';
const fromRelay = (watcher: IrcWatcher) => watcher.said.filter((s) => s.nick === 'gwbot' && s.target === '#general').map((s) => s.text.slice(BOB.length + 1));
const watch = async (port: number, password?: string) => {
  const watcher = await IrcWatcher.connect(port, `alice${watchers.length}`, ['#general'], password);
  watchers.push(watcher);
  return watcher;
};

describe.each<IrcServerKind>(['ngircd', 'inspircd'])('relay-irc: %s killed mid-stream', (kind) => {
  test('every message arrives once the server is back, in order; the refusal while it is closed is logged', { timeout: 60_000 }, async () => {
    server = await IrcServer.start({ kind });
    const first = await watch(server.port);
    env = await makeEnv([]);
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(server, { rate: { lines_per_second: 40, burst: 5 } })] }]);
    await env.start();
    await first.waitForLine(/^:gwbot!\S+ JOIN :?#general/i);

    // A stream from the chat; the server is killed while lines are on their way.
    const expected: string[] = [];
    let streaming = true;
    const stream = (async () => {
      for (let round = 1; streaming; round += 1) {
        await post(env!.svc, 'general', 'bob', `stream ${round}.{n}`, 3);
        expected.push(...[1, 2, 3].map((n) => `stream ${round}.${n}`));
        await pause(40);
      }
    })();
    await waitFor('part of the stream on IRC', () => fromRelay(first).length >= 12);
    await server.kill();
    await pause(300);
    streaming = false;
    await stream;
    const stats = () => (env!.supervisor!.stats() as any).bot0.plugins['relay-irc'] as Record<string, number>;
    await waitFor('the relay noticing', () => stats().irc_connected === 0);
    await post(env.svc, 'general', 'bob', 'while down {n}', 10);
    expected.push(...Array.from({ length: 10 }, (_, i) => `while down ${i + 1}`));
    // What the operations endpoint shows of it (status(): /status, /readyz's relaysDown, groupwire_plugin_queue_depth).
    const report = () => env!.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-irc')!;
    await waitFor('the lines waiting in to_irc', () => (report().status.queues?.to_irc ?? 0) >= 10);
    expect(report().status.connection?.state).toBe('connecting');

    // Back, but closed to the relay (a password it does not have) until the watcher is in the channel.
    await server.setPassword('letmein');
    await server.start();
    const second = await watch(server.port, 'letmein');
    await waitFor('a refusal logged', () => env!.log.lines.some((line) => line.level === 50 && /IRC server closed the link/.test(String(line.msg))), 30_000);
    await server.setPassword(undefined);
    await post(env.svc, 'general', 'bob', 'after {n}', 5);
    expected.push(...Array.from({ length: 5 }, (_, i) => `after ${i + 1}`));
    await waitFor('the last message on IRC', () => fromRelay(second).includes('after 5'), 30_000);

    // Lines sent but not confirmed before the kill are sent again: they may show up twice, first thing.
    const before = fromRelay(first);
    const after = fromRelay(second);
    const again = after.filter((text) => before.includes(text));
    expect(after.slice(0, again.length)).toEqual(again);
    expect(again.length).toBeLessThanOrEqual(20);
    expect([...before, ...after.slice(again.length)]).toEqual(expected);
    expect(stats().to_irc_dropped_refused).toBe(0);
    await waitFor('the queue empty', () => stats().queued_lines === 0);
    expect(report().status).toMatchObject({ connection: { state: 'connected' }, queues: { to_irc: 0 } });
  });
});

describe('relay-irc: groupwire killed with lines queued', () => {
  test('after SIGKILL and a restart the queued lines go out first, then what was said meanwhile, each once', { timeout: 60_000 }, async () => {
    server = await IrcServer.start({ kind: 'ngircd' });
    const first = await watch(server.port);
    env = await makeEnv([]);
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(server)] }]);
    const child = await env.spawn();
    await first.waitForLine(/^:gwbot!\S+ JOIN :?#general/i);
    await post(env.svc, 'general', 'bob', 'before');
    const queueFile = join(env.stateDir, 'bots', 'bot0', 'plugins', 'relay-irc', 'queue-%23general.json');
    const queued = () => DurableQueue.read<{ text: string }>(queueFile);
    await waitFor('the first line', () => fromRelay(first).includes('before'));
    await waitFor('the first line confirmed (out of the queue file)', () => existsSync(queueFile) && queued().length === 0);

    await server.kill();
    await post(env.svc, 'general', 'bob', 'queued {n}', 10);
    await waitFor('ten lines in the queue file', () => queued().length === 10);
    await kill(child, 'SIGKILL');
    await post(env.svc, 'general', 'bob', 'while groupwire is down {n}', 5);

    await server.start();
    const second = await watch(server.port);
    await env.spawn();
    await waitFor('the last line', () => fromRelay(second).includes('while groupwire is down 5'), 30_000);
    await waitFor('the queue file empty', () => queued().length === 0);
    expect(fromRelay(second)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => `queued ${i + 1}`),
      ...Array.from({ length: 5 }, (_, i) => `while groupwire is down ${i + 1}`),
    ]);
  });
});

describe('relay-irc: a bounded queue', () => {
  test('past warn_at a warning, past max_lines an error for each message refused; the rest arrives', { timeout: 60_000 }, async () => {
    // The server keeps the relay out (a password it does not have) while the chat talks.
    server = await IrcServer.start({ kind: 'ngircd', password: 'letmein' });
    const watcher = await watch(server.port, 'letmein');
    env = await makeEnv([]);
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(server, { queue: { max_lines: 10, warn_at: 0.5 } })] }]);
    await env.start();
    const stats = () => (env!.supervisor!.stats() as any).bot0.plugins['relay-irc'] as Record<string, number>;
    const last = await post(env.svc, 'general', 'bob', 'line {n}', 14);
    await waitFor('four messages refused', () => stats().to_irc_refused_queue_full === 4);
    expect(stats().queued_lines).toBe(10);
    const logged = (level: number, pattern: RegExp) => env!.log.lines.filter((line) => line.level === level && pattern.test(String(line.msg)));
    expect(logged(40, /IRC queue for #general is filling up: 5 of 10 lines waiting/)).toHaveLength(1);
    const refused = logged(50, /IRC queue for #general is full: message \d+ of general is NOT relayed/);
    // Messages 11 to 14: the last four.
    expect(refused.map((line) => line.msgNum)).toEqual([3, 2, 1, 0].map((back) => last.msg_num - back));

    await server.setPassword(undefined);
    await waitFor('the queued lines on IRC', () => fromRelay(watcher).length === 10, 30_000);
    expect(fromRelay(watcher)).toEqual(Array.from({ length: 10 }, (_, i) => `line ${i + 1}`));
  });
});
