import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { relayRocketchatOptions } from '../plugins/relay-rocketchat/options.js';
import { messageIdOf } from '../plugins/relay-rocketchat/outbound.js';
import { escapeForRocketchat, renderLine } from '../plugins/relay-rocketchat/render.js';
import { retryAfterOf } from '../plugins/relay-rocketchat/rest.js';
import { FakeRocketchat, type FakeMessage, type FakeUser } from './helpers/fake-rocketchat.js';
import { chatOf, history, makeEnv, post, waitFor, type Env, type GatewaySpec } from './helpers/supervisor.js';

/**
 * relay-rocketchat in a supervisor against the local service and a local Rocket.Chat
 * (test/helpers/fake-rocketchat.ts, written from Rocket.Chat's REST and realtime API documentation).
 */

let fake: FakeRocketchat | undefined;
let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  await fake?.close();
  env = fake = undefined;
});

interface World {
  env: Env;
  fake: FakeRocketchat;
  reader: GroupsClient;
  alice: FakeUser;
  general: string;
  core: string;
}

async function setup(extra: Record<string, unknown> = {}, gateways?: GatewaySpec[], alongside: Array<{ use: string; with?: Record<string, unknown> }> = []): Promise<World> {
  fake = await FakeRocketchat.start();
  const general = fake.addRoom('general');
  const core = fake.addRoom('core-team', 'p');
  const alice = fake.addUser('alice', { name: 'Alice Liddell' }).user;
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    reply_rate: { per_second: 200, burst: 200 },
    // `general` by its name, the private group by its id.
    plugins: [
      { use: 'relay-rocketchat', with: { server_url: fake.url, user_id: fake.bot._id, token: fake.botToken, rooms: gateways ? {} : { general: '#general', random: core }, request_timeout_ms: 2_000, ...extra } },
      ...alongside,
    ],
  }], gateways);
  return { env, fake, reader: env.client('bob'), alice, general, core };
}

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-rocketchat']!;
const report = (e: Env) => e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-rocketchat')!;

/** The bot's posts in a chat (what the relay brought from Rocket.Chat), oldest first. */
async function relayed(e: Env, reader: GroupsClient, subject: string): Promise<string[]> {
  const chat = (await chatOf(reader, subject))!;
  const bot = String((await chatOf(e.client('bot'), subject))!.chat_sub!.user_id);
  return (await history(reader, chat.id)).filter((m: ChatMessage) => String(m.user_id) === bot).map((m) => m.message);
}

const botMessages = (w: World, room: string): FakeMessage[] => w.fake.inRoom(room).filter((m) => m.u._id === w.fake.bot._id);

describe('relay-rocketchat: text and options', () => {
  test('markdown is escaped and @all/@here defused by a linear scan; ids from keys; 429 waits; options are checked', () => {
    expect(escapeForRocketchat('@all @here @alice: *b* _i_ ~s~ `c` [l](u) #room $x$\n- item\n1. first\u0007'))
      .toBe('@\u200ball @\u200bhere @\u200balice: \\*b\\* \\_i\\_ \\~s\\~ \\`c\\` \\[l\\]\\(u\\) \\#room \\$x\\$\n\\- item\n1\\. first');
    expect(renderLine({ template: '**{name}**: {text}', name: 'Bob *B*', text: 'hi' })).toBe('**Bob \\*B\\***: hi');
    const long = '<'.repeat(65_536) + '@a'.repeat(32_768);
    expect(escapeForRocketchat(long)).toHaveLength(65_536 * 2 + 32_768 * 3);
    expect(messageIdOf('k1')).toMatch(/^[2-9A-HJ-NP-TW-Za-km-z]{17}$/);
    expect(messageIdOf('k1')).toBe(messageIdOf('k1'));
    expect(messageIdOf('k1')).not.toBe(messageIdOf('k2'));
    expect(retryAfterOf(String(1_700_000_000_000 + 2_500), '', 1_700_000_000_000)).toBe(2_500);
    expect(retryAfterOf(undefined, 'You must wait 7 seconds before trying this endpoint again. [error-too-many-requests]')).toBe(7_000);
    const base = { server_url: 'https://chat.example.org/', rooms: { general: '#general', core: 'GENERAL' } };
    expect(relayRocketchatOptions.safeParse({ ...base, user_id: 'aB3dE5gH7jK9mN2pQ', token: 'x'.repeat(43) }).data?.server_url).toBe('https://chat.example.org');
    expect(relayRocketchatOptions.safeParse({ ...base, username: 'bot', password: 'secret' }).success).toBe(true);
    const neither = relayRocketchatOptions.safeParse(base);
    expect(neither.error?.issues[0]?.path).toEqual(['token']);
    expect(relayRocketchatOptions.safeParse({ ...base, token: 'x'.repeat(43) }).error?.issues[0]?.path).toEqual(['user_id']);
    expect(relayRocketchatOptions.safeParse({ ...base, user_id: 'aB3dE5gH7jK9mN2pQ', token: 'x'.repeat(43), rooms: { general: 'general room' } }).success).toBe(false);
  });
});

describe('relay-rocketchat', () => {
  test('both ways: chat lines under their speakers\' names (alias), escaped, mentioning nobody, each with its own _id; messages into the chat as <name> text; its own not relayed back; a command answered there', async () => {
    const w = await setup({ avatar_url: 'https://avatars.example.org/{platform}/{name}.png' }, undefined, [{ use: 'responder', with: { rules: [{ command: 'secret', reply: 'the secret is 42' }] } }]);
    await w.env.start();
    await waitFor('the realtime session', () => (stats(w.env).sessions ?? 0) >= 1);
    expect(w.fake.calls).toContain('GET rooms.info');

    await post(w.env.svc, 'general', 'bob', 'hello @all and @here, *bold*');
    await post(w.env.svc, 'random', 'carol', 'over in the group');
    await waitFor('two messages on Rocket.Chat', () => botMessages(w, w.general).length === 1 && botMessages(w, w.core).length === 1);
    const [line] = botMessages(w, w.general);
    expect(line!.msg).toBe('hello @\u200ball and @\u200bhere, \\*bold\\*');
    expect(line).toMatchObject({ alias: 'Bob Member', avatar: 'https://avatars.example.org/chat/Bob%20Member.png' });
    expect(w.fake.sends[0]!._id).toMatch(/^[2-9A-Za-z]{17}$/);

    w.fake.say(w.general, w.alice, 'hi from Rocket.Chat');
    w.fake.say(w.core, w.alice, 'in the private group');
    w.fake.say(w.general, w.alice, 'alice joined', { t: 'uj' });
    await waitFor('the Rocket.Chat lines in the chats', async () => (await relayed(w.env, w.reader, 'general')).length === 1 && (await relayed(w.env, w.reader, 'random')).length === 1);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['<alice> hi from Rocket.Chat']);
    expect(await relayed(w.env, w.reader, 'random')).toEqual(['<alice> in the private group']);
    await waitFor('the queue empty', () => stats(w.env).queued === 0 && stats(w.env).received === 2);
    expect(botMessages(w, w.general)).toHaveLength(1);
    expect(stats(w.env)).toMatchObject({ posted: 2, received: 2, dropped: 0 });
    expect(report(w.env).status.backlogs?.to_rocketchat).toMatchObject({ depth: 0, pushed: 2, taken: 2 });

    w.fake.say(w.general, w.alice, '!secret');
    await waitFor('the answer on Rocket.Chat', () => botMessages(w, w.general).length === 2);
    expect(botMessages(w, w.general)[1]!.msg).toBe('the secret is 42');
  });

  test('without message-impersonate the bot sends **name**: text and the status says why; a login by password; show_name and ignore_bots', async () => {
    fake = await FakeRocketchat.start();
    fake.impersonateRoles = ['app'];
    const w = await (async () => {
      const current = fake!;
      const general = current.addRoom('general');
      const alice = current.addUser('alice', { name: 'Alice Liddell' }).user;
      env = await makeEnv([]);
      env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'relay-rocketchat', with: {
        server_url: current.url, username: 'groupwire', password: 'bot-password', rooms: { general: '#general' }, show_name: 'name', ignore_bots: true, request_timeout_ms: 2_000,
      } }] }]);
      return { env, fake: current, reader: env.client('bob'), alice, general, core: '' };
    })();
    await w.env.start();
    await waitFor('the realtime session', () => (stats(w.env).sessions ?? 0) >= 1);
    expect(w.fake.calls).toContain('POST login');
    expect(report(w.env).status.connection?.detail).toMatch(/message-impersonate/);
    await post(w.env.svc, 'general', 'bob', 'plain');
    await waitFor('the message', () => botMessages(w, w.general).length === 1);
    expect(botMessages(w, w.general)[0]!.msg).toBe('**Bob Member**: plain');
    expect(botMessages(w, w.general)[0]!.alias).toBeUndefined();
    w.fake.say(w.general, w.fake.addUser('ci').user, 'build passed', { bot: true, alias: 'CI' });
    w.fake.say(w.general, w.alice, 'by full name');
    await waitFor('the line in the chat', async () => (await relayed(w.env, w.reader, 'general')).length === 1);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['<Alice Liddell> by full name']);
  });

  test('429s are waited out as X-RateLimit-Reset says; a message whose answer was lost is refused as a duplicate _id when sent again and taken as sent: every line once, in order', async () => {
    const w = await setup();
    await w.env.start();
    await waitFor('the realtime session', () => (stats(w.env).sessions ?? 0) >= 1);
    w.fake.rateLimit(2);
    for (let n = 1; n <= 3; n += 1) await post(w.env.svc, 'general', 'bob', `line ${n}`);
    await waitFor('three messages', () => botMessages(w, w.general).length === 3 && stats(w.env).queued === 0, 20_000);
    w.fake.loseAnswer(1);
    await post(w.env.svc, 'general', 'bob', 'line 4');
    await waitFor('four posted', () => stats(w.env).posted === 4, 20_000);
    expect(botMessages(w, w.general).map((m) => m.msg)).toEqual([1, 2, 3, 4].map((n) => `line ${n}`));
    // Two refused by the limiter, four made, the lost one's second attempt refused as a duplicate.
    expect(w.fake.calls.filter((c) => c === 'POST chat.sendMessage').length).toBe(7);
    expect(stats(w.env)).toMatchObject({ rate_limited: 2, posted: 4, found_after_retry: 1, dropped: 0 });
  });

  test('stopped mid-send (the message made, its answer never had): the next start sends the same _id, which the server refuses: nothing twice', async () => {
    const w = await setup();
    await w.env.start();
    await waitFor('the realtime session', () => (stats(w.env).sessions ?? 0) >= 1);
    w.fake.stallAnswer(1);
    await post(w.env.svc, 'general', 'bob', 'in flight');
    await waitFor('the message made', () => botMessages(w, w.general).length === 1);
    await w.env.supervisor!.stop();
    await post(w.env.svc, 'general', 'bob', 'after the restart');
    await w.env.start();
    await waitFor('the second message', () => botMessages(w, w.general).length === 2 && stats(w.env).queued === 0, 20_000);
    expect(botMessages(w, w.general).map((m) => m.msg)).toEqual(['in flight', 'after the restart']);
    expect(stats(w.env).found_after_retry).toBe(1);
  });

  test('a dropped websocket, and a restart of the bot: what was said meanwhile is read back by history from the mark, each once, in order', async () => {
    const w = await setup();
    await w.env.start();
    await waitFor('the realtime session', () => (stats(w.env).sessions ?? 0) >= 1);
    w.fake.say(w.general, w.alice, 'before the drop');
    await waitFor('the first line', async () => (await relayed(w.env, w.reader, 'general')).length === 1);
    w.fake.dropConnections();
    w.fake.say(w.general, w.alice, 'during the drop');
    await waitFor('a new session', () => stats(w.env).sessions === 2, 20_000);
    w.fake.say(w.general, w.alice, 'after');
    await waitFor('three lines', async () => (await relayed(w.env, w.reader, 'general')).length === 3, 20_000);
    await w.env.supervisor!.stop();
    // More than a history page (100) while the bot is away, in the private group too.
    for (let n = 1; n <= 130; n += 1) w.fake.say(w.general, w.alice, `away ${n}`);
    w.fake.say(w.core, w.alice, 'group while away');
    await w.env.start();
    await waitFor('all caught up', async () => stats(w.env).caught_up === 131 && (await relayed(w.env, w.reader, 'general')).length === 133, 30_000);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['before the drop', 'during the drop', 'after', ...Array.from({ length: 130 }, (_, k) => `away ${k + 1}`)].map((t) => `<alice> ${t}`));
    expect(await relayed(w.env, w.reader, 'random')).toEqual(['<alice> group while away']);
    expect(w.fake.calls).toContain('GET groups.history');
  });

  test('in a gateway of two rooms: a thread reply answers the copy\'s thread (tmid); an edit and both kinds of deletion follow the copy, a reaction does not', async () => {
    const w = await setup({}, [{ name: 'lobby', endpoints: [{ chat: 'general' }, { rocketchat: '#general' }, { rocketchat: '#core-team' }] }]);
    await w.env.start();
    await waitFor('the realtime session', () => (stats(w.env).sessions ?? 0) >= 1);
    const parent = w.fake.say(w.general, w.alice, 'the plan');
    await waitFor('the copy in the group', () => botMessages(w, w.core).length === 1);
    const copy = botMessages(w, w.core)[0]!;
    expect(copy.alias).toBe('alice');
    const reply = w.fake.say(w.general, w.alice, 'a detail', { tmid: parent._id });
    const second = w.fake.say(w.general, w.alice, 'another detail', { tmid: parent._id });
    await waitFor('the replies in the group', () => botMessages(w, w.core).length === 3);
    expect(botMessages(w, w.core).slice(1).map((m) => m.tmid)).toEqual([copy._id, copy._id]);
    w.fake.react(parent._id);
    w.fake.edit(parent._id, 'the new plan');
    await waitFor('the copy edited', () => botMessages(w, w.core)[0]!.msg === 'the new plan');
    w.fake.remove(reply._id);
    await waitFor('the reply\'s copy deleted', () => botMessages(w, w.core).length === 2 && stats(w.env).deleted === 1);
    w.fake.showDeleted = true;
    w.fake.remove(second._id);
    await waitFor('the second reply\'s copy deleted', () => botMessages(w, w.core).length === 1 && stats(w.env).deleted === 2);
    expect(stats(w.env)).toMatchObject({ edited: 1, deleted: 2, dropped: 0 });
  });

  test('a refused token stops the relay only: the status says so, the bot goes on, the token never logged', async () => {
    const w = await setup({ token: 'not-the-right-token-at-all-not-at-all' });
    await w.env.start();
    await waitFor('the relay failed', () => report(w.env).status.connection?.state === 'failed', 20_000);
    expect(report(w.env).status.connection?.detail).toMatch(/refused the bot's credentials/);
    expect(w.env.log.lines.some((line) => line.level === 50 && /Rocket.Chat relay stopped/.test(String(line.msg)))).toBe(true);
    expect(w.env.log.lines.some((line) => JSON.stringify(line).includes('not-the-right-token'))).toBe(false);
    const answer = await post(w.env.svc, 'general', 'bob', 'still here');
    expect(answer.message).toBe('still here');
  });
});
