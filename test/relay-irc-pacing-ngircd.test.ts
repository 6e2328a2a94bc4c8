import { afterEach, describe, expect, test } from 'vitest';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The barrier rule against a real ngircd (no labeled-response there: lines are confirmed by PINGs):
 * a queue of lines that is all there when the relay joins goes out window by window, one confirmation
 * PING per window of `in_flight` lines, and every line arrives once, in order.
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

const BOB = '<B\u200bob M\u200bember>';

describe('relay-irc pacing on ngircd', () => {
  test('60 queued lines, in_flight 20: each line once, in order, and 3 confirmation PINGs', { timeout: 60_000 }, async () => {
    server = await IrcServer.start({ kind: 'ngircd' });
    const first = await IrcWatcher.connect(server.port, 'alice', ['#general']);
    watchers.push(first);
    env = await makeEnv([]);
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(server, { queue: { in_flight: 20 } })] }]);
    await env.start();
    await first.waitForLine(/^:gwbot!\S+ JOIN :?#general/i);
    const stats = () => (env!.supervisor!.stats() as any).bot0.plugins['relay-irc'] as Record<string, number>;

    // The server goes away, so that the whole burst is queued before the relay is back in the channel.
    await server.kill();
    await waitFor('the relay noticing', () => stats().irc_connected === 0);
    await post(env.svc, 'general', 'bob', 'queued {n}', 60);
    await waitFor('all 60 queued', () => stats().queued_lines === 60);
    const pingsBefore = stats().to_irc_confirm_pings ?? 0;

    // Back, closed to the relay by a password until the watcher is in the channel again.
    await server.setPassword('letmein');
    await server.start();
    const second = await IrcWatcher.connect(server.port, 'alice', ['#general'], 'letmein');
    watchers.push(second);
    await server.setPassword(undefined);
    await waitFor('the queue emptied', () => stats().queued_lines === 0 && stats().in_flight_lines === 0, 30_000);

    const seen = second.said.filter((s) => s.nick === 'gwbot' && s.target === '#general').map((s) => s.text);
    expect(seen).toEqual(Array.from({ length: 60 }, (_, i) => `${BOB} queued ${i + 1}`));
    expect((stats().to_irc_confirm_pings ?? 0) - pingsBefore).toBe(3);
    expect(stats().to_irc_resent_lines).toBe(0);
  });
});
