import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEMO } from './helpers/service.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Commands said on IRC (a real ngircd), through a gateway of the bot's chat `general` and `#general`:
 * answered by the person who said them (ctx.sender), never with the bot's own standing though the
 * relayed post is the bot's; moderators named by an IRC mask; `answer_to: origin` answers IRC alone.
 */

let server: IrcServer;
let env: Env;
let alice: IrcWatcher;
let mo: IrcWatcher;

const chatLines = async () => {
  const carol = env.client('carol');
  return (await history(carol, (await chatOf(carol, 'general'))!.id)).map((m) => m.message);
};
/** What the bot said in #general, as `who` saw it. */
const botSaid = (who: IrcWatcher) => who.texts('#general', 'gwbot');

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
  mo = await IrcWatcher.connect(server.port, 'mo', ['#general']);
  env = await makeEnv([]);
  const botId = String((await env.client('bot').login()).id);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [
      relayPlugin(server, { channels: { general: '#general' } }),
      {
        use: 'responder',
        with: {
          // The bot itself is a moderator here, by id and by address: every relayed line is its post,
          // and none may borrow its standing.
          moderators: { users: [botId, 'irc:mo!*@127.0.0.1'], emails: [DEMO.bot[0]] },
          rules: [
            { command: 'whoami', reply: '{{user}} on {{platform}} ({{user_id}}) said {{message}}' },
            { command: 'deploy', reply: 'deploying for {{user}}', allow: { moderators: true } },
            { command: 'secret', reply: 'the secret, for {{user}}', allow: { users: ['irc:alice!*@trusted.example.net'] } },
            { command: 'quiet', reply: 'only here, {{user}}', answer_to: 'origin' },
          ],
        },
      },
    ],
  }]);
  await env.start();
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#general/i);
}, 60_000);

afterAll(async () => {
  alice?.close();
  mo?.close();
  await env?.close();
  await server?.close();
});

describe('commands from IRC', () => {
  test('answered by who said it, in the chat and on IRC', { timeout: 60_000 }, async () => {
    alice.send('PRIVMSG #general :!whoami');
    const answer = await waitFor('the answer in the chat', async () => (await chatLines()).find((t) => t.startsWith('alice on irc')), 30_000);
    expect(answer).toMatch(/^alice on irc \(irc:alice!\S+@\S+\) said !whoami$/);
    await waitFor('the answer on IRC', () => botSaid(mo).some((t) => t.includes('alice on irc')), 30_000);
  });

  test('the bot\'s standing is never lent: moderators only by their IRC mask; a mask with a host is kept', { timeout: 60_000 }, async () => {
    alice.send('PRIVMSG #general :!deploy');
    await waitFor('alice refused', async () => (await chatLines()).includes('Sorry, !deploy is only for the group\'s moderators.'), 30_000);
    mo.send('PRIVMSG #general :!deploy');
    await waitFor('mo answered', async () => (await chatLines()).includes('deploying for mo'), 30_000);
    // alice is named with another host: the nick alone is not enough.
    alice.send('PRIVMSG #general :!secret');
    await waitFor('alice refused the secret', async () => (await chatLines()).includes('Sorry, !secret is only for a few named people.'), 30_000);
    // A chat member who is not a moderator is refused as before.
    await post(env.svc, 'general', 'bob', '!deploy');
    await waitFor('bob refused', async () => (await chatLines()).filter((t) => t.startsWith('Sorry, !deploy')).length === 2, 30_000);
    expect((await chatLines()).filter((t) => t.startsWith('deploying for'))).toEqual(['deploying for mo']);
    expect((await chatLines()).filter((t) => t.startsWith('the secret'))).toEqual([]);
  });

  test('answer_to: origin answers on IRC alone', { timeout: 60_000 }, async () => {
    alice.send('PRIVMSG #general :!quiet');
    await waitFor('the answer on IRC', () => botSaid(alice).some((t) => t.includes('only here, alice')), 30_000);
    // A marker after it: by the time it is in the chat, the answer would be too.
    await post(env.svc, 'general', 'bob', 'marker after quiet');
    await waitFor('the marker on IRC', () => botSaid(alice).some((t) => t.includes('marker after quiet')), 30_000);
    const chat = await chatLines();
    expect(chat).toContain('<alice> !quiet');
    expect(chat.filter((t) => t.includes('only here'))).toEqual([]);
    expect(botSaid(alice).filter((t) => t.includes('only here'))).toHaveLength(1);
  });
});
