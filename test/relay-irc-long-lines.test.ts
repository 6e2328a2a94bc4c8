import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Issue #31 item 9, end to end: chat lines of 10,000 characters that are mostly spaces (with HTML, so
 * they go through the relay's markup-to-text step) relayed to a real ngircd. The 30 lines are posted
 * before the bot starts, so its catch-up takes them in one go, as after a restart. The supervisor, the
 * relay and the local service all run in this process, so a stall of the relay is a stall of this event
 * loop: measured with monitorEventLoopDelay while they go through. Before the fix the loop stalled 1.7 s.
 */

let server: IrcServer;
let env: Env;
let alice: IrcWatcher;

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
  env = await makeEnv([]);
  env.writeConfig([{ history_on_first_start: 50, chats: [{ chat: 'general' }], plugins: [relayPlugin(server, { rate: { lines_per_second: 500, burst: 50 } })] }]);
}, 60_000);

afterAll(async () => {
  alice?.close();
  await env?.close();
  await server?.close();
});

describe('relay-irc: long lines of spaces', () => {
  test('30 lines of 10,000 characters, mostly spaces and tabs, go to IRC without stalling the bot (max event-loop delay < 1 s)', async () => {
    const shapes = [
      (i: number) => `<b>line ${i}</b>${' '.repeat(9_900)}\nend ${i}`,
      (i: number) => `<b>line ${i}</b>${' \t'.repeat(4_950)}end ${i}`,
      (i: number) => `<b>line ${i}</b>${' '.repeat(9_900)}x${i}`,
    ];
    for (let i = 0; i < 30; i += 1) await post(env.svc, 'general', 'carol', shapes[i % shapes.length]!(i));
    await post(env.svc, 'general', 'carol', 'after the long lines');
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const before = performance.eventLoopUtilization();
    await env.start();
    await waitFor('the marker on IRC', () => alice.said.some((s) => s.command === 'PRIVMSG' && s.text.endsWith('after the long lines')), 60_000);
    delay.disable();
    const maxMs = delay.max / 1e6;
    // Every long line arrived, its words kept (the spaces are only spaces).
    for (let i = 0; i < 30; i += 1) expect(alice.said.some((s) => s.command === 'PRIVMSG' && s.text.includes(`line ${i}`)), `line ${i}`).toBe(true);
    const busy = performance.eventLoopUtilization(before);
    // Before the fix: 1,700 ms max delay (1.8 s busy of 2.0 s); after: about 150 ms.
    expect(maxMs, `max event-loop delay ${Math.round(maxMs)} ms (busy ${Math.round(busy.active)} ms)`).toBeLessThan(1_000);
  }, 120_000);
});
