import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The relay against inspircd with IRCv3 echo-message and labeled-response: each line is dropped from
 * the queue only when the server echoed its label. The server kills a client that sends more than 60
 * commands within a second ("Excess Flood"), as strict networks do; the relay is paced below that.
 */

const FLOOD_LIMIT = 60;
let server: IrcServer;
let env: Env;
let alice: IrcWatcher;

const BOB = '<B\u200bob M\u200bember>';
const texts = async () => {
  const carol = env.client('carol');
  return (await history(carol, (await chatOf(carol, 'general'))!.id)).map((m) => m.message);
};
const relayStats = () => (env.supervisor!.stats() as any).bot0.plugins['relay-irc'] as Record<string, number>;
const onIrc = () => alice.said.filter((s) => s.command === 'PRIVMSG' && s.nick === 'gwbot' && s.target === '#general').map((s) => s.text);

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'inspircd', floodLimit: FLOOD_LIMIT });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [relayPlugin(server, { rate: { lines_per_second: 40, burst: 10 }, queue: { max_attempts: 2 } })],
  }]);
  await env.start();
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#general/i);
}, 60_000);

afterAll(async () => {
  alice?.close();
  await env?.close();
  await server?.close();
});

describe('relay-irc on inspircd (echo-message, labeled-response)', () => {
  test('lines are confirmed by their labeled echo, which is not relayed back into the chat', async () => {
    await waitFor('the relay connected', () => relayStats().irc_connected === 1);
    expect(relayStats().irc_labeled).toBe(1);
    await post(env.svc, 'general', 'bob', 'hello from the chat');
    await waitFor('the line on IRC', () => onIrc().includes(`${BOB} hello from the chat`));
    await waitFor('the line confirmed', () => (relayStats().to_irc_delivered_lines ?? 0) >= 1 && relayStats().queued_lines === 0);
    alice.send('PRIVMSG #general :\x0303hello\x03 from IRC');
    await waitFor('the line in the chat', async () => (await texts()).includes('<alice> hello from IRC'));
    // Our own lines come back to us (echo-message); they must not go into the chat.
    expect((await texts()).filter((text) => text.startsWith('<gwbot>'))).toEqual([]);
  });

  test('a burst that would get a client killed for flooding arrives complete and in order through the relay', async () => {
    // Without pacing: the same 200 lines get a client thrown out.
    const flooder = await IrcWatcher.connect(server.port, 'flooder', ['#general']);
    flooder.send(Array.from({ length: 200 }, (_, i) => `PRIVMSG #general :flood ${i}`).join('\r\n'));
    await flooder.waitForLine(/^ERROR :Closing link: .*Excess Flood/);
    flooder.close();

    const before = relayStats();
    await post(env.svc, 'general', 'bob', 'burst {n}', 200);
    await waitFor('all 200 on IRC', () => onIrc().includes(`${BOB} burst 200`), 40_000);
    expect(onIrc().filter((text) => text.startsWith(`${BOB} burst `))).toEqual(Array.from({ length: 200 }, (_, i) => `${BOB} burst ${i + 1}`));
    await waitFor('every line confirmed', () => relayStats().queued_lines === 0);
    expect(relayStats().irc_disconnects).toBe(before.irc_disconnects);
    expect(server.log).not.toMatch(/gwbot.*Excess Flood/);
  });

  test('a line the channel refuses (moderated) is tried again, then dropped with an error; later lines go on', async () => {
    alice.send('MODE #general +m');
    await alice.waitForLine(/^:alice!\S+ MODE #general :?\+m/);
    await post(env.svc, 'general', 'bob', 'while moderated');
    await waitFor('the line given up', () => relayStats().to_irc_dropped_refused === 1, 20_000);
    expect(env.log.lines.some((line) => line.level === 50 && /keeps refusing a line/.test(String(line.msg)))).toBe(true);
    alice.send('MODE #general -m');
    await alice.waitForLine(/^:alice!\S+ MODE #general :?-m/);
    await post(env.svc, 'general', 'bob', 'after moderation');
    await waitFor('the next line on IRC', () => onIrc().includes(`${BOB} after moderation`));
    expect(onIrc()).not.toContain(`${BOB} while moderated`);
  });
});
