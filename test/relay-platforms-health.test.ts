import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import { FakeMattermost } from './helpers/fake-mattermost.js';
import { FakeRocketchat } from './helpers/fake-rocketchat.js';
import { FakeTelegram } from './helpers/fake-telegram.js';
import { FakeZulip } from './helpers/fake-zulip.js';
import { chatOf, history, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The relays of #33 (Telegram, Mattermost, Zulip, Rocket.Chat) as the operations endpoint shows them,
 * through the endpoint itself (its HTTP answers, not the reports behind them): a relay whose token is
 * refused is `failed` on /status.json, listed under /readyz's relaysDown (the bot still ready: its lines
 * wait) and 0 in /metrics' groupwire_plugin_connected, while the relays beside it stay connected and go
 * on relaying; no answer of the endpoint carries a token.
 */

const CHAT = -1001000000001;
const RELAYS = ['relay-telegram', 'relay-mattermost', 'relay-zulip', 'relay-rocketchat'] as const;
type Relay = typeof RELAYS[number];

interface Fakes {
  telegram: FakeTelegram;
  mattermost: FakeMattermost;
  zulip: FakeZulip;
  rocketchat: FakeRocketchat;
  channel: string;
  stream: number;
  room: string;
}

let fakes: Fakes | undefined;
let env: Env | undefined;
let ops: Operations | undefined;
afterEach(async () => {
  await ops?.close();
  await env?.close();
  if (fakes) await Promise.all([fakes.telegram.close(), fakes.mattermost.close(), fakes.zulip.close(), fakes.rocketchat.close()]);
  fakes = env = ops = undefined;
});

const BAD = {
  telegram: '7000001:AAThisIsNotTheTokenTheFakeKnows_000',
  mattermost: 'not-the-mattermost-token-at-all',
  zulip: 'not-the-zulip-key-at-all-not-at-all',
  rocketchat: 'not-the-rocketchat-token-at-all-at-all',
};

/** One bot, chat general in one gateway with a channel on each of the four; `refused` relays get a wrong token. */
async function start(refused: Relay[]): Promise<{ env: Env; ops: Operations; fakes: Fakes }> {
  const telegram = await FakeTelegram.start();
  telegram.addChat({ id: CHAT, type: 'supergroup', title: 'General' });
  const mattermost = await FakeMattermost.start();
  const channel = mattermost.addChannel('town-square');
  const zulip = await FakeZulip.start();
  const stream = zulip.addStream('general');
  const rocketchat = await FakeRocketchat.start();
  const room = rocketchat.addRoom('general');
  fakes = { telegram, mattermost, zulip, rocketchat, channel, stream, room };
  const wrong = (relay: Relay) => refused.includes(relay);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    reply_rate: { per_second: 200, burst: 200 },
    plugins: [
      { use: 'relay-telegram', with: { token: wrong('relay-telegram') ? BAD.telegram : telegram.token, api_url: telegram.url, rate: 'off' } },
      { use: 'relay-mattermost', with: { server_url: mattermost.url, token: wrong('relay-mattermost') ? BAD.mattermost : mattermost.botToken, request_timeout_ms: 2_000 } },
      { use: 'relay-zulip', with: { server_url: zulip.url, email: zulip.bot.email, api_key: wrong('relay-zulip') ? BAD.zulip : zulip.botKey } },
      { use: 'relay-rocketchat', with: { server_url: rocketchat.url, user_id: rocketchat.bot._id, token: wrong('relay-rocketchat') ? BAD.rocketchat : rocketchat.botToken } },
    ],
  }], [{ name: 'general', endpoints: [{ chat: 'general' }, { telegram: String(CHAT) }, { mattermost: channel }, { zulip: 'general/lobby' }, { rocketchat: room }] }]);
  const supervisor = await env.start();
  ops = new Operations({ supervisor, config: { listen: '127.0.0.1:0', lag_probe_seconds: 1 }, log: env.log.logger, errors: new RecentErrors(), stateDir: env.stateDir });
  await ops.start();
  return { env, ops, fakes };
}

async function get(path: string): Promise<{ status: number; body: string }> {
  const answer = await request(`${ops!.url}${path}`);
  return { status: answer.statusCode, body: await answer.body.text() };
}

/** Each relay's connection as /status.json shows it. */
async function onStatus(): Promise<Record<string, { state: string; detail?: string } | undefined>> {
  const snapshot = JSON.parse((await get('/status.json')).body) as { bots: Array<{ plugins: Array<{ instance: string; connection?: { state: string; detail?: string } }> }> };
  return Object.fromEntries(snapshot.bots[0]!.plugins.map((plugin) => [plugin.instance, plugin.connection]));
}

/** groupwire_plugin_connected of each relay, as /metrics has it. */
async function connectedMetric(): Promise<Record<string, number>> {
  const lines = (await get('/metrics')).body.split('\n').filter((line) => line.startsWith('groupwire_plugin_connected{'));
  return Object.fromEntries(lines.map((line) => [/instance="([^"]+)"/.exec(line)![1]!, Number(line.slice(line.lastIndexOf(' ') + 1))]));
}

/** The sides groupwire_backlog_lines has for the bot, as /metrics has them (docs/operations.md "Backlogs"). */
async function backlogSides(): Promise<string[]> {
  const lines = (await get('/metrics')).body.split('\n').filter((line) => line.startsWith('groupwire_backlog_lines{'));
  return lines.map((line) => /side="([^"]+)"/.exec(line)![1]!).filter((side) => side.startsWith('relay-')).sort();
}

/** Every answer of the endpoint, for the secrets check. */
async function everything(): Promise<string> {
  return (await Promise.all(['/status.json', '/readyz', '/metrics'].map(async (path) => (await get(path)).body))).join('\n');
}

describe('the #33 relays on the operations endpoint', () => {
  test('Mattermost, Zulip and Rocket.Chat refused: failed on /status.json, in /readyz relaysDown, 0 in /metrics; Telegram beside them connected and relaying both ways', async () => {
    const { fakes: f } = await start(['relay-mattermost', 'relay-zulip', 'relay-rocketchat']);
    await waitFor('three relays failed, Telegram connected', async () => {
      const status = await onStatus();
      return status['relay-telegram']?.state === 'connected' && ['relay-mattermost', 'relay-zulip', 'relay-rocketchat'].every((relay) => status[relay]?.state === 'failed');
    });
    const status = await onStatus();
    expect(status['relay-mattermost']!.detail).toMatch(/refused the token/);
    expect(status['relay-zulip']!.detail).toMatch(/refused the bot's email and API key/);
    expect(status['relay-rocketchat']!.detail).toMatch(/refused the bot's credentials/);

    const readyz = await get('/readyz');
    const ready = JSON.parse(readyz.body) as { ready: boolean; relaysDown: Array<{ instance: string; state: string; detail?: string }> };
    expect(readyz.status).toBe(200);
    expect(ready.ready).toBe(true);
    expect(ready.relaysDown.map((relay) => [relay.instance, relay.state]).sort()).toEqual([['relay-mattermost', 'failed'], ['relay-rocketchat', 'failed'], ['relay-zulip', 'failed']]);
    expect(await connectedMetric()).toEqual({ 'relay-telegram': 1, 'relay-mattermost': 0, 'relay-zulip': 0, 'relay-rocketchat': 0 });

    // The relay beside them goes on: a chat line reaches Telegram, a Telegram line the chat.
    await post(env!.svc, 'general', 'bob', 'still relayed');
    await waitFor('the line on Telegram', () => f.telegram.botPosts(CHAT).some((message) => message.text === '<Bob Member> still relayed'));
    f.telegram.say(CHAT, { id: 501, is_bot: false, first_name: 'Alice' }, 'from Telegram');
    const reader = env!.client('bob');
    const general = (await chatOf(reader, 'general'))!;
    await waitFor('the Telegram line in the chat', async () => (await history(reader, general.id)).some((message) => message.message === '<Alice> from Telegram'));

    // Each relay's queue is a side of the bot's backlogs, like the other relays' (/status, groupwire_backlog_*, the
    // falling-behind warning); a failed relay's too (what it had queued waits, kept, for a token that works).
    expect(await backlogSides()).toEqual(['relay-mattermost to_mattermost', 'relay-rocketchat to_rocketchat', `relay-telegram ${CHAT}`, 'relay-zulip to_zulip']);

    const all = await everything();
    for (const secret of [BAD.mattermost, BAD.zulip, BAD.rocketchat, f.telegram.token]) expect(all).not.toContain(secret);
  });

  test('Telegram refused: failed on /status.json, alone in /readyz relaysDown, 0 in /metrics; Mattermost, Zulip and Rocket.Chat connected and relaying', async () => {
    const { fakes: f } = await start(['relay-telegram']);
    await waitFor('Telegram failed, the others connected', async () => {
      const status = await onStatus();
      return status['relay-telegram']?.state === 'failed' && ['relay-mattermost', 'relay-zulip', 'relay-rocketchat'].every((relay) => status[relay]?.state === 'connected');
    });
    expect((await onStatus())['relay-telegram']!.detail).toMatch(/refused the bot token \(401 Unauthorized\)/);
    const ready = JSON.parse((await get('/readyz')).body) as { ready: boolean; relaysDown: Array<{ instance: string; state: string }> };
    expect(ready.ready).toBe(true);
    expect(ready.relaysDown.map((relay) => [relay.instance, relay.state])).toEqual([['relay-telegram', 'failed']]);
    expect(await connectedMetric()).toEqual({ 'relay-telegram': 0, 'relay-mattermost': 1, 'relay-zulip': 1, 'relay-rocketchat': 1 });

    await post(env!.svc, 'general', 'bob', 'still relayed');
    await waitFor('the line on Mattermost, Zulip and Rocket.Chat', () =>
      f.mattermost.inChannel(f.channel).some((p) => p.message === 'still relayed')
      && f.zulip.inStream(f.stream, 'lobby').some((m) => m.content === '**Bob Member**: still relayed')
      && f.rocketchat.inRoom(f.room).some((m) => m.msg === 'still relayed'));
    expect(await backlogSides()).toEqual(['relay-mattermost to_mattermost', 'relay-rocketchat to_rocketchat', 'relay-zulip to_zulip']);
    expect(await everything()).not.toContain(BAD.telegram);
  });
});
