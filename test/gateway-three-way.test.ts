import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { FakeSlack } from './fakes/slack/fake-slack.js';
import { RELAY_PLUGIN } from './fakes/slack/harness.js';
import { TOKENS } from './fakes/slack/state.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The whole bridge, as a user configures it: one bot, its chat `general`, relay-irc to a real ngircd
 * channel and relay-slack to a fake Slack channel, each relay mapping the chat in its own `channels:`
 * (no gateways: section). IRC ⇄ chat ⇄ Slack: every line once on every other side, never back; `!ping`
 * from any side answered once on every side; a Slack thread reply and an edit shown as described.
 */

let server: IrcServer;
let slack: FakeSlack;
let env: Env;
let alice: IrcWatcher;

const SLACK_CHANNEL = 'C0GENERAL1';
const chatLines = async () => {
  const carol = env.client('carol');
  return (await history(carol, (await chatOf(carol, 'general'))!.id)).map((m) => m.message);
};
const ircLines = () => alice.said.filter((s) => s.command === 'PRIVMSG' && s.target === '#general' && /^gwbot_?$/.test(s.nick)).map((s) => s.text);
const slackLines = () => slack.posts.filter((p) => p.channel === SLACK_CHANNEL);
const count = (list: string[], predicate: (text: string) => boolean) => list.filter(predicate).length;

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
  slack = await FakeSlack.start();
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    reply_rate: { per_second: 50, burst: 50 },
    plugins: [
      { use: 'responder' },
      relayPlugin(server, { channels: { general: '#general' } }),
      { use: RELAY_PLUGIN, with: { token: TOKENS.bot, app_token: TOKENS.app, api_url: slack.apiUrl, channels: { general: SLACK_CHANNEL } } },
    ],
  }]);
  await env.start();
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#general/i);
  await waitFor('the Slack socket', () => slack.socket.openConnections().length > 0);
}, 60_000);

afterAll(async () => {
  alice?.close();
  await env?.close();
  await slack?.close();
  await server?.close();
});

describe('a gateway of a chat, an IRC channel and a Slack channel', () => {
  test('each side\'s line arrives once on the two others and never comes back', { timeout: 60_000 }, async () => {
    await post(env.svc, 'general', 'bob', 'said in the chat');
    alice.send('PRIVMSG #general :said on IRC');
    slack.message(SLACK_CHANNEL, 'U0ALICE001', 'said on Slack');
    await waitFor('every line on every other side', async () => {
      const chat = await chatLines();
      return chat.includes('<alice> said on IRC') && chat.includes('<alice.l> said on Slack') &&
        ircLines().some((t) => t.endsWith('said in the chat')) && ircLines().some((t) => t.endsWith('said on Slack')) &&
        slackLines().some((p) => p.text === 'said in the chat') && slackLines().some((p) => p.text === 'said on IRC');
    }, 30_000);
    // A marker through all three, then count.
    await post(env.svc, 'general', 'bob', 'marker one');
    await waitFor('the marker on IRC and Slack', () => ircLines().some((t) => t.endsWith('marker one')) && slackLines().some((p) => p.text === 'marker one'));
    const chat = await chatLines();
    expect(count(chat, (t) => t.includes('said on IRC'))).toBe(1);
    expect(count(chat, (t) => t.includes('said on Slack'))).toBe(1);
    expect(count(chat, (t) => t.includes('said in the chat'))).toBe(1);
    expect(ircLines().filter((t) => t.includes('said'))).toEqual([
      '<B\u200bob M\u200bember> said in the chat', '<a\u200blice.l> said on Slack',
    ]);
    expect(slackLines().filter((p) => p.text.includes('said')).map((p) => [p.username, p.text])).toEqual([
      ['Bob Member', 'said in the chat'], ['alice', 'said on IRC'],
    ]);
  });

  test('!ping from each side is answered once, on every side', { timeout: 60_000 }, async () => {
    const before = { chat: count(await chatLines(), (t) => t === 'pong'), irc: count(ircLines(), (t) => t.endsWith('pong')), slack: count(slackLines().map((p) => p.text), (t) => t === 'pong') };
    await post(env.svc, 'general', 'carol', '!ping');
    await waitFor('the first pong on IRC', () => count(ircLines(), (t) => t.endsWith('pong')) === before.irc + 1, 20_000);
    alice.send('PRIVMSG #general :!ping');
    await waitFor('the second pong on Slack', () => count(slackLines().map((p) => p.text), (t) => t === 'pong') === before.slack + 2, 20_000);
    slack.message(SLACK_CHANNEL, 'U0BOB00001', '!ping');
    await waitFor('three pongs everywhere', async () =>
      count(await chatLines(), (t) => t === 'pong') === before.chat + 3 && count(ircLines(), (t) => t.endsWith('pong')) === before.irc + 3 &&
      count(slackLines().map((p) => p.text), (t) => t === 'pong') === before.slack + 3, 30_000);
    await post(env.svc, 'general', 'bob', 'marker two');
    await waitFor('the marker on IRC and Slack', () => ircLines().some((t) => t.endsWith('marker two')) && slackLines().some((p) => p.text === 'marker two'));
    expect(count(await chatLines(), (t) => t === 'pong')).toBe(before.chat + 3);
    expect(count(ircLines(), (t) => t.endsWith('pong'))).toBe(before.irc + 3);
    expect(count(slackLines().map((p) => p.text), (t) => t === 'pong')).toBe(before.slack + 3);
  });

  test('a Slack thread reply quotes what it answers in the chat and on IRC; an edit follows as a marked line', { timeout: 60_000 }, async () => {
    const parent = slack.message(SLACK_CHANNEL, 'U0ALICE001', 'which tea do we order for the meeting?');
    const parentTs = (parent.payload.event as { ts: string }).ts;
    await waitFor('the question in the chat', async () => (await chatLines()).includes('<alice.l> which tea do we order for the meeting?'));
    slack.threadReply(SLACK_CHANNEL, 'U0BOB00001', 'green, please', parentTs);
    slack.messageChanged(SLACK_CHANNEL, parentTs, 'which coffee do we order for the meeting?');
    await waitFor('the reply and the edit in the chat', async () => {
      const chat = await chatLines();
      return chat.includes('> alice.l: which tea do we order for the meeting?\n<Bob Builder> green, please') &&
        chat.includes('(edit) <alice.l> which coffee do we order for the meeting?');
    }, 30_000);
    await waitFor('the reply and the edit on IRC', () =>
      ircLines().some((t) => t.includes('green, please') && t.includes('which tea')) && ircLines().some((t) => t.includes('(edit) which coffee')), 30_000);
    // Neither came back to Slack as a new post.
    expect(slackLines().filter((p) => p.text.includes('green, please') || p.text.includes('which coffee'))).toEqual([]);
  });
});
