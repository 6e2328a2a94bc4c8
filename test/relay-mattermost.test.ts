import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { relayMattermostOptions } from '../plugins/relay-mattermost/options.js';
import { escapeForMattermost, plainFromMattermost, renderLine } from '../plugins/relay-mattermost/render.js';
import { FakeMattermost, type FakePost, type FakeUser } from './helpers/fake-mattermost.js';
import { chatOf, history, makeEnv, post, waitFor, type Env, type GatewaySpec } from './helpers/supervisor.js';

/**
 * relay-mattermost in a supervisor against the local service and a local Mattermost
 * (test/helpers/fake-mattermost.ts, written from Mattermost's API reference) spoken to by the official
 * @mattermost/client's Client4 and the relay's websocket.
 */

let fake: FakeMattermost | undefined;
let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  await fake?.close();
  env = fake = undefined;
});

interface World {
  env: Env;
  fake: FakeMattermost;
  reader: GroupsClient;
  alice: FakeUser;
  general: string;
  random: string;
}

async function setup(extra: Record<string, unknown> = {}, gateways?: GatewaySpec[], alongside: Array<{ use: string; with?: Record<string, unknown> }> = []): Promise<World> {
  fake = await FakeMattermost.start();
  const general = fake.addChannel('town-square');
  const random = fake.addChannel('off-topic');
  const alice = fake.addUser('alice', { nickname: 'Al' }).user;
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    reply_rate: { per_second: 200, burst: 200 },
    // `general` by its team and name, `random` by its id.
    plugins: [
      { use: 'relay-mattermost', with: { server_url: fake.url, token: fake.botToken, channels: gateways ? {} : { general: 'acme/town-square', random }, request_timeout_ms: 2_000, ...extra } },
      ...alongside,
    ],
  }], gateways);
  return { env, fake, reader: env.client('bob'), alice, general, random };
}

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-mattermost']!;
const report = (e: Env) => e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-mattermost')!;

/** The bot's posts in a chat (what the relay brought from Mattermost), oldest first. */
async function relayed(e: Env, reader: GroupsClient, subject: string): Promise<string[]> {
  const chat = (await chatOf(reader, subject))!;
  const bot = String((await chatOf(e.client('bot'), subject))!.chat_sub!.user_id);
  return (await history(reader, chat.id)).filter((m: ChatMessage) => String(m.user_id) === bot).map((m) => m.message);
}

const botPosts = (w: World, channel: string): FakePost[] => w.fake.inChannel(channel).filter((p) => p.user_id === w.fake.bot.id);

describe('relay-mattermost: text', () => {
  test('markdown is escaped and every mention defused, by a linear scan; a /me post loses its italics; options are checked', () => {
    expect(escapeForMattermost('@all @channel @here @alice: *b* _i_ `c` [l](u) #tag | x > y\n- item\n1. first\n  + two\n=== a\u0007b'))
      .toBe('@\u200ball @\u200bchannel @\u200bhere @\u200balice: \\*b\\* \\_i\\_ \\`c\\` \\[l\\]\\(u\\) \\#tag \\| x \\> y\n\\- item\n1\\. first\n  \\+ two\n\\=== ab');
    expect(escapeForMattermost('mail@example.org costs 3.50')).toBe('mail@\u200bexample.org costs 3.50');
    expect(renderLine({ template: '**{name}**: {text}', name: 'Bob *B*', text: 'hi' })).toBe('**Bob \\*B\\***: hi');
    expect(renderLine({ template: '**{name}**: {text}', name: 'Bob', text: 'waves', action: true })).toBe('\\* Bob waves');
    expect(renderLine({ template: '**{name}**: {text}', name: 'Bob', text: 'yes', quote: { name: 'Al', text: 'is it?' } })).toBe('> **Al**: is it?\n**Bob**: yes');
    expect(plainFromMattermost('*waves*', true)).toBe('waves');
    // 64 KiB of markup and of @ goes through in one pass.
    const long = '<'.repeat(65_536) + '@a'.repeat(32_768);
    expect(escapeForMattermost(long)).toHaveLength(65_536 * 2 + 32_768 * 3);
    expect(relayMattermostOptions.safeParse({ server_url: 'https://chat.example.org/', token: 'x'.repeat(26), channels: { general: 'acme/town-square', random: 'a'.repeat(26) } }).data?.server_url)
      .toBe('https://chat.example.org');
    expect(relayMattermostOptions.safeParse({ server_url: 'https://chat.example.org', token: 'x'.repeat(26), channels: { general: '#town-square' } }).success).toBe(false);
  });
});

describe('relay-mattermost', () => {
  test('both ways: chat lines under their speakers\' names, escaped, mentioning nobody, once by pending_post_id; posts into the chat as <name> text; its own not relayed back; a command said on Mattermost answered there', async () => {
    const w = await setup({}, undefined, [{ use: 'responder', with: { rules: [{ command: 'secret', reply: 'the secret is 42' }] } }]);
    await w.env.start();
    await waitFor('the websocket session', () => (stats(w.env).sessions ?? 0) >= 1);
    expect(w.fake.calls).toContain('GET /teams/name/acme/channels/name/town-square');

    await post(w.env.svc, 'general', 'bob', 'hello @channel, *bold* and @alice');
    await post(w.env.svc, 'random', 'carol', 'over in random');
    await waitFor('two posts on Mattermost', () => botPosts(w, w.general).length === 1 && botPosts(w, w.random).length === 1);
    const [line] = botPosts(w, w.general);
    expect(line!.message).toBe('hello @\u200bchannel, \\*bold\\* and @\u200balice');
    expect(line!.props).toMatchObject({ override_username: 'Bob Member', from_bot: 'true' });
    expect(w.fake.creates[0]!.pending_post_id).toMatch(new RegExp(`^${w.fake.bot.id}:[\\w-]{26}$`));

    w.fake.say(w.general, w.alice, 'hi from Mattermost');
    w.fake.say(w.random, w.alice, '*waves*', { type: 'me' });
    w.fake.say(w.general, w.alice, 'joined', { type: 'system_join_channel' });
    await waitFor('the Mattermost lines in the chats', async () => (await relayed(w.env, w.reader, 'general')).length === 1 && (await relayed(w.env, w.reader, 'random')).length === 1);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['<alice> hi from Mattermost']);
    expect(await relayed(w.env, w.reader, 'random')).toEqual(['* alice waves']);
    await waitFor('the queue to Mattermost empty', () => stats(w.env).queued === 0 && stats(w.env).received === 2);
    expect(botPosts(w, w.general)).toHaveLength(1);
    expect(stats(w.env)).toMatchObject({ posted: 2, received: 2, dropped: 0 });

    // The bot's answer to a command said on Mattermost goes back there, under the bot's name in the chat.
    w.fake.say(w.general, w.alice, '!secret');
    await waitFor('the answer on Mattermost', () => botPosts(w, w.general).length === 2);
    expect(botPosts(w, w.general)[1]!.message).toBe('the secret is 42');
  });

  test('where the server does not let integrations override names, the bot posts **name**: text and the status says why; show_name and ignore_bots', async () => {
    const w = await setup({ show_name: 'nickname', ignore_bots: true });
    w.fake.overrideUsernames = false;
    await w.env.start();
    await waitFor('the websocket session', () => (stats(w.env).sessions ?? 0) >= 1);
    expect(report(w.env).status.connection?.detail).toMatch(/override usernames/);
    await post(w.env.svc, 'general', 'bob', 'plain');
    await waitFor('the post', () => botPosts(w, w.general).length === 1);
    expect(botPosts(w, w.general)[0]!.message).toBe('**Bob Member**: plain');
    expect(botPosts(w, w.general)[0]!.props.override_username).toBeUndefined();
    // Another bot account's post (props.from_bot) is not relayed with ignore_bots.
    w.fake.say(w.general, w.fake.addUser('ci', { is_bot: true }).user, 'build passed');
    w.fake.say(w.general, w.alice, 'by nickname');
    await waitFor('the line in the chat', async () => (await relayed(w.env, w.reader, 'general')).length === 1);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['<Al> by nickname']);
  });

  test('429s are waited out as Retry-After says; a post whose answer was lost is found in the history before it is sent again: every line once, in order', async () => {
    const w = await setup();
    await w.env.start();
    await waitFor('the websocket session', () => (stats(w.env).sessions ?? 0) >= 1);
    w.fake.rateLimit(2);
    for (let n = 1; n <= 3; n += 1) await post(w.env.svc, 'general', 'bob', `line ${n}`);
    await waitFor('three posts', () => botPosts(w, w.general).length === 3 && stats(w.env).queued === 0, 20_000);
    w.fake.loseAnswer(1);
    await post(w.env.svc, 'general', 'bob', 'line 4');
    await waitFor('four posts', () => stats(w.env).posted === 4, 20_000);
    expect(botPosts(w, w.general).map((p) => p.message)).toEqual([1, 2, 3, 4].map((n) => `line ${n}`));
    // Two refused, four made; the lost one was not sent again.
    expect(w.fake.calls.filter((c) => c === 'POST /posts').length).toBe(6);
    expect(stats(w.env)).toMatchObject({ rate_limited: 2, posted: 4, found_after_retry: 1, dropped: 0 });
  });

  test('stopped mid-send (the post made, its answer never had): at the next start the relay finds it in the history and posts nothing twice', async () => {
    const w = await setup();
    // The server has long forgotten the pending_post_id: only the history look-up can tell.
    w.fake.pendingTtlMs = 0;
    await w.env.start();
    await waitFor('the websocket session', () => (stats(w.env).sessions ?? 0) >= 1);
    w.fake.stallAnswer(1);
    await post(w.env.svc, 'general', 'bob', 'in flight');
    await waitFor('the post made', () => botPosts(w, w.general).length === 1);
    await w.env.supervisor!.stop();
    await post(w.env.svc, 'general', 'bob', 'after the restart');
    await w.env.start();
    await waitFor('the second post', () => botPosts(w, w.general).length === 2 && stats(w.env).queued === 0, 20_000);
    expect(botPosts(w, w.general).map((p) => p.message)).toEqual(['in flight', 'after the restart']);
    // A line queued before the relay read the server's settings still goes under its speaker's name (rendered when sent).
    expect(botPosts(w, w.general).map((p) => p.props.override_username)).toEqual(['Bob Member', 'Bob Member']);
    expect(stats(w.env).found_after_retry).toBe(1);
  });

  test('a dropped websocket and a lost event: what was said meanwhile is read back by REST, once each, in order', async () => {
    const w = await setup();
    await w.env.start();
    await waitFor('the websocket session', () => (stats(w.env).sessions ?? 0) >= 1);
    w.fake.say(w.general, w.alice, 'before the drop');
    await waitFor('the first line', async () => (await relayed(w.env, w.reader, 'general')).length === 1);
    w.fake.dropConnections();
    w.fake.say(w.general, w.alice, 'during the drop');
    await waitFor('a new session', () => stats(w.env).sessions === 2, 20_000);
    w.fake.skipSeq();
    w.fake.say(w.general, w.alice, 'its event lost');
    await waitFor('a third session', () => stats(w.env).sessions === 3, 20_000);
    w.fake.say(w.general, w.alice, 'after');
    await waitFor('four lines', async () => (await relayed(w.env, w.reader, 'general')).length === 4, 20_000);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['before the drop', 'during the drop', 'its event lost', 'after'].map((t) => `<alice> ${t}`));
  });

  test('a restart of the bot: what Mattermost said meanwhile is read back by REST from the kept mark, each line once, in order', async () => {
    const w = await setup();
    await w.env.start();
    await waitFor('the websocket session', () => (stats(w.env).sessions ?? 0) >= 1);
    w.fake.say(w.general, w.alice, 'one');
    await waitFor('one', async () => (await relayed(w.env, w.reader, 'general')).length === 1);
    await w.env.supervisor!.stop();
    for (let n = 2; n <= 40; n += 1) w.fake.say(w.general, w.alice, `said while away ${n}`);
    await w.env.start();
    await waitFor('all caught up', async () => stats(w.env).caught_up === 39 && (await relayed(w.env, w.reader, 'general')).length === 40, 30_000);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['<alice> one', ...Array.from({ length: 39 }, (_, k) => `<alice> said while away ${k + 2}`)]);
    expect(stats(w.env).caught_up).toBe(39);
  });

  test('in a gateway of two Mattermost channels: a thread reply answers the copy\'s thread; an edit and a deletion follow the copy, a pin does not', async () => {
    const w = await setup({ icon_url: 'https://avatars.example.org/{platform}/{name}.png' }, [{ name: 'lobby', endpoints: [{ chat: 'general' }, { mattermost: 'acme/town-square' }, { mattermost: 'acme/off-topic' }] }]);
    await w.env.start();
    await waitFor('the websocket session', () => (stats(w.env).sessions ?? 0) >= 1);
    const parent = w.fake.say(w.general, w.alice, 'the plan');
    await waitFor('the copy in random', () => botPosts(w, w.random).length === 1);
    const copy = botPosts(w, w.random)[0]!;
    expect(copy.props).toMatchObject({ override_username: 'alice', override_icon_url: 'https://avatars.example.org/mattermost/alice.png' });
    const reply = w.fake.say(w.general, w.alice, 'a detail', { root_id: parent.id });
    w.fake.say(w.general, w.alice, 'another detail', { root_id: parent.id });
    await waitFor('the replies in random', () => botPosts(w, w.random).length === 3);
    expect(botPosts(w, w.random).slice(1).map((p) => p.root_id)).toEqual([copy.id, copy.id]);
    // Pinning is not an edit (edit_at unchanged): nothing goes out for it.
    w.fake.pin(parent.id);
    w.fake.edit(parent.id, 'the new plan');
    await waitFor('the copy edited', () => botPosts(w, w.random)[0]!.message === 'the new plan');
    w.fake.remove(reply.id);
    // The fake deletes before it answers: wait for the relay to have read the answer too.
    await waitFor('the reply\'s copy deleted', () => botPosts(w, w.random).length === 2 && stats(w.env).deleted === 1);
    expect(stats(w.env)).toMatchObject({ edited: 1, deleted: 1, dropped: 0 });
  });

  test('a refused token stops the relay only: the status says so, the bot goes on', async () => {
    const w = await setup({ token: 'not-the-right-token-at-all' });
    await w.env.start();
    await waitFor('the relay failed', () => report(w.env).status.connection?.state === 'failed', 20_000);
    expect(report(w.env).status.connection?.detail).toMatch(/refused the token/);
    expect(w.env.log.lines.some((line) => line.level === 50 && /Mattermost relay stopped/.test(String(line.msg)))).toBe(true);
    expect(w.env.log.lines.some((line) => JSON.stringify(line).includes('not-the-right-token'))).toBe(false);
    const answer = await post(w.env.svc, 'general', 'bob', 'still here');
    expect(answer.message).toBe('still here');
  });
});
