import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { FakeDiscord, type FakeUser } from './helpers/fake-discord.js';
import { chatOf, history, makeEnv, post, waitFor, type Env, type GatewaySpec } from './helpers/supervisor.js';

/**
 * relay-discord in a supervisor against the local service and a local Discord (test/helpers/fake-discord.ts,
 * written from Discord's developer docs) spoken to by the official @discordjs/ws and @discordjs/rest.
 */

const GENERAL = '700000000000000001';
const RANDOM = '700000000000000002';
const ALICE: FakeUser = { id: '600000000000000001', username: 'alice', global_name: 'Alice D' };

let discord: FakeDiscord | undefined;
let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  await discord?.close();
  env = discord = undefined;
});

async function setup(extra: Record<string, unknown> = {}, gateways?: GatewaySpec[]): Promise<{ env: Env; discord: FakeDiscord; reader: GroupsClient }> {
  discord = await FakeDiscord.start();
  discord.addChannel(GENERAL);
  discord.addChannel(RANDOM);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    // Posts into the chats paced for a test that relays 130 lines at once, not for people.
    reply_rate: { per_second: 200, burst: 200 },
    // The bot posting `**name**: text` (webhooks: relay-discord-webhooks.test.ts).
    plugins: [{ use: 'relay-discord', with: { token: discord.token, api_url: discord.apiUrl, channels: gateways ? {} : { general: GENERAL, random: RANDOM }, post_as: 'bot', ...extra } }],
  }], gateways);
  return { env, discord, reader: env.client('bob') };
}

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-discord']!;

/** The bot's posts in a chat (what the relay brought from Discord), oldest first. */
async function relayed(e: Env, reader: GroupsClient, subject: string): Promise<string[]> {
  const chat = (await chatOf(reader, subject))!;
  const bot = String((await chatOf(e.client('bot'), subject))!.chat_sub!.user_id);
  return (await history(reader, chat.id)).filter((m: ChatMessage) => String(m.user_id) === bot).map((m) => m.message);
}

const botPosts = (fake: FakeDiscord, channel: string) => fake.inChannel(channel).filter((m) => m.author.id === fake.bot.id);

describe('relay-discord', () => {
  test('both ways: chat lines as **name**: text with nobody pinged; Discord messages into the chat as <name> text; its own posts not relayed back', async () => {
    const { env: e, discord: fake, reader } = await setup();
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    expect(fake.identifies[0]).toMatchObject({ token: fake.token });

    await post(e.svc, 'general', 'bob', 'hello @everyone, *bold* and <@600000000000000001>');
    await post(e.svc, 'random', 'carol', 'over in random');
    await waitFor('two posts on Discord', () => botPosts(fake, GENERAL).length === 1 && botPosts(fake, RANDOM).length === 1);
    const [line] = botPosts(fake, GENERAL);
    // Markdown escaped, @everyone and the user mention defused with a zero-width space.
    expect(line!.content).toBe('**Bob Member**: hello @\u200beveryone, \\*bold\\* and <\u200b@600000000000000001\\>');
    expect(line!.allowed_mentions).toEqual({ parse: [] });
    expect(line!.nonce).toMatch(/^[\w-]{25}$/);

    fake.say(GENERAL, ALICE, 'hi from Discord, <@800000000000000001>');
    fake.say(RANDOM, { ...ALICE, global_name: null }, 'second');
    await waitFor('the Discord lines in the chats', async () => (await relayed(e, reader, 'general')).length === 1 && (await relayed(e, reader, 'random')).length === 1);
    expect(await relayed(e, reader, 'general')).toEqual(['<Alice D> hi from Discord, @groupwire-bot']);
    expect(await relayed(e, reader, 'random')).toEqual(['<alice> second']);
    // The relay's own two posts came back as MESSAGE_CREATE and were not relayed: still one line each way.
    await waitFor('the queue to Discord empty', () => stats(e).queued === 0);
    expect(botPosts(fake, GENERAL)).toHaveLength(1);
    expect(stats(e)).toMatchObject({ posted: 2, received: 2, dropped: 0 });
  });

  test('429s are waited out and every line is posted once, in order', async () => {
    const { env: e, discord: fake } = await setup();
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    fake.rateLimit(3);
    for (let n = 1; n <= 6; n += 1) await post(e.svc, 'general', 'bob', `line ${n}`);
    await waitFor('six posts', () => botPosts(fake, GENERAL).length === 6, 20_000);
    expect(botPosts(fake, GENERAL).map((m) => m.content)).toEqual([1, 2, 3, 4, 5, 6].map((n) => `**Bob Member**: line ${n}`));
    expect(fake.calls.filter((c) => c === `POST /channels/${GENERAL}/messages`).length).toBe(9);
  });

  test('a post whose answer was lost is tried again with the same nonce: Discord keeps one', async () => {
    const { env: e, discord: fake } = await setup();
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    fake.loseAnswer(2);
    await post(e.svc, 'general', 'bob', 'said once');
    await post(e.svc, 'general', 'bob', 'and once more');
    await waitFor('the queue to Discord empty', () => stats(e).queued === 0, 30_000);
    expect(fake.calls.filter((c) => c === `POST /channels/${GENERAL}/messages`).length).toBeGreaterThanOrEqual(4);
    expect(botPosts(fake, GENERAL).map((m) => m.content)).toEqual(['**Bob Member**: said once', '**Bob Member**: and once more']);
  });

  test('a dropped gateway connection resumes: what was said meanwhile is replayed by Discord and relayed once', async () => {
    const { env: e, discord: fake, reader } = await setup();
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    fake.say(GENERAL, ALICE, 'before the drop');
    await waitFor('the first line', async () => (await relayed(e, reader, 'general')).length === 1);
    fake.dropConnections();
    fake.say(GENERAL, ALICE, 'during the drop');
    await waitFor('resumed', () => (stats(e).resumes ?? 0) >= 1, 20_000);
    fake.say(GENERAL, ALICE, 'after the resume');
    await waitFor('three lines', async () => (await relayed(e, reader, 'general')).length === 3, 20_000);
    expect(await relayed(e, reader, 'general')).toEqual(['<Alice D> before the drop', '<Alice D> during the drop', '<Alice D> after the resume']);
    expect(stats(e).sessions).toBe(1);
  });

  test('a restart of the bot: what Discord said meanwhile is read back by REST, each line once', async () => {
    const { env: e, discord: fake, reader } = await setup();
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    fake.say(GENERAL, ALICE, 'one');
    await waitFor('one', async () => (await relayed(e, reader, 'general')).length === 1);
    await e.supervisor!.stop();
    for (let n = 2; n <= 130; n += 1) fake.say(GENERAL, ALICE, `said while away ${n}`);
    await e.start();
    await waitFor('all caught up', async () => (await relayed(e, reader, 'general')).length === 130, 30_000);
    expect(await relayed(e, reader, 'general')).toEqual(['<Alice D> one', ...Array.from({ length: 129 }, (_, k) => `<Alice D> said while away ${k + 2}`)]);
    expect(stats(e).caught_up).toBe(129);
  });

  test('in a gateway of two Discord channels: a reply answers the copy of its parent; an edit and a deletion follow the copy', async () => {
    const { env: e, discord: fake } = await setup({}, [{ name: 'lobby', endpoints: [{ chat: 'general' }, { discord: GENERAL }, { discord: RANDOM }] }]);
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    const parent = fake.say(GENERAL, ALICE, 'the plan');
    await waitFor('the copy in random', () => botPosts(fake, RANDOM).length === 1);
    const copy = botPosts(fake, RANDOM)[0]!;
    expect(copy.content).toBe('**Alice D**: the plan');
    fake.say(GENERAL, ALICE, 'and a detail', parent.id);
    await waitFor('the reply in random', () => botPosts(fake, RANDOM).length === 2);
    expect(botPosts(fake, RANDOM)[1]!.message_reference?.message_id).toBe(copy.id);
    fake.edit(parent.id, 'the new plan');
    await waitFor('the copy edited', () => fake.calls.includes(`PATCH /channels/${RANDOM}/messages/${copy.id}`));
    await waitFor('the copy\'s text', () => botPosts(fake, RANDOM)[0]!.content === '**Alice D**: the new plan');
    fake.remove(parent.id);
    await waitFor('the copy deleted', () => !fake.inChannel(RANDOM).some((m) => m.id === copy.id));
    expect(stats(e)).toMatchObject({ edited: 1, deleted: 1, dropped: 0 });
  });

  test('a refused token stops the relay only: the status says so, the bot goes on', async () => {
    const { env: e } = await setup({ token: 'not-the-right-token-at-all' });
    await e.start();
    const report = () => e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-discord')!;
    await waitFor('the relay failed', () => report().status.connection?.state === 'failed', 20_000);
    expect(report().status.connection?.detail).toMatch(/token/);
    expect(e.log.lines.some((line) => line.level === 50 && /Discord relay stopped/.test(String(line.msg)))).toBe(true);
    const answer = await post(e.svc, 'general', 'bob', 'still here');
    expect(answer.message).toBe('still here');
  });
});
