import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The relay in a gateway bots.yaml's `gateways:` names (its own `channels:` empty): two chats and one
 * IRC channel joined N-way against ngircd. The relay joins the channel the gateway names, each chat
 * line reaches IRC once, each IRC line reaches every chat once, and access rules name IRC people by
 * `irc:nick!user@host` masks.
 */

let server: IrcServer;
let env: Env;
let alice: IrcWatcher;
let mallory: IrcWatcher;

const CAROL = '<C\u200barol M\u200bember>';
const texts = async (subject: string) => {
  const carol = env.client('carol');
  return (await history(carol, (await chatOf(carol, subject))!.id)).map((m) => m.message);
};
const onIrc = () => alice.said.filter((s) => s.command === 'PRIVMSG' && s.target === '#lobby' && /^gwbot_?$/.test(s.nick)).map((s) => s.text);
const count = (list: string[], text: string) => list.filter((item) => item === text).length;

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#lobby']);
  mallory = await IrcWatcher.connect(server.port, 'mallory', ['#lobby']);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    plugins: [
      relayPlugin(server, { channels: {} }),
      { use: 'responder', with: { rules: [{ command: 'secret', reply: 'the secret is 42', allow: { users: ['irc:alice!*alice@*'] } }] } },
    ],
  }], [{ name: 'lobby', endpoints: [{ chat: 'general' }, { chat: 'random' }, { irc: '#lobby' }] }]);
  await env.start();
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#lobby/i);
}, 60_000);

afterAll(async () => {
  alice?.close();
  mallory?.close();
  await env?.close();
  await server?.close();
});

describe('relay-irc in a gateway of bots.yaml', () => {
  test('what is said in either chat reaches the channel once, without a prefix (the relay maps no pair itself)', async () => {
    await post(env.svc, 'general', 'carol', 'from general');
    await post(env.svc, 'random', 'carol', 'from random');
    await waitFor('both on IRC', () => onIrc().includes(`${CAROL} from general`) && onIrc().includes(`${CAROL} from random`));
    // Each chat line is also in the other chat (the gateway relays it there); IRC still gets it once.
    await waitFor('general\'s line in random', async () => (await texts('random')).some((text) => text.endsWith('from general')));
    const marker = 'marker after the chat lines';
    await post(env.svc, 'general', 'bob', marker);
    await waitFor('the marker on IRC', () => onIrc().includes(`<B\u200bob M\u200bember> ${marker}`));
    expect(count(onIrc(), `${CAROL} from general`)).toBe(1);
    expect(count(onIrc(), `${CAROL} from random`)).toBe(1);
  });

  test('a line said on IRC reaches every chat of the gateway once, and never comes back to IRC', async () => {
    alice.send('PRIVMSG #lobby :hello both chats');
    alice.send('PRIVMSG #lobby :\x01ACTION waves\x01');
    await waitFor('both lines in both chats', async () => {
      const [general, random] = [await texts('general'), await texts('random')];
      return general.includes('* alice waves') && random.includes('* alice waves');
    });
    for (const subject of ['general', 'random']) {
      const lines = await texts(subject);
      expect(count(lines, '<alice> hello both chats'), subject).toBe(1);
      expect(count(lines, '* alice waves'), subject).toBe(1);
    }
    expect(onIrc().filter((text) => text.includes('hello both chats') || text.includes('waves'))).toEqual([]);
  });

  test('access rules name IRC people as irc:nick!user@host masks: alice may use !secret, mallory may not', async () => {
    mallory.send('PRIVMSG #lobby :!secret');
    await waitFor('mallory\'s !secret in the chat', async () => (await texts('general')).includes('<mallory> !secret'));
    alice.send('PRIVMSG #lobby :!secret');
    await waitFor('the answer to alice, on IRC too', () => onIrc().some((text) => text.endsWith(' the secret is 42')));
    // Answered once, in the first chat the line reached (not once per chat), and not for mallory.
    const marker = 'marker after the secrets';
    await post(env.svc, 'general', 'bob', marker);
    await waitFor('the marker on IRC', () => onIrc().includes(`<B\u200bob M\u200bember> ${marker}`));
    expect(onIrc().filter((text) => text.endsWith(' the secret is 42'))).toHaveLength(1);
    expect(count([...await texts('general'), ...await texts('random')], 'the secret is 42')).toBe(1);
  });
});
