import { afterEach, describe, expect, test } from 'vitest';
import { FakeDiscord, type FakeUser } from './helpers/fake-discord.js';
import { makeEnv, post, waitFor, type Env, type GatewaySpec } from './helpers/supervisor.js';

/**
 * relay-discord posting through channel webhooks (its default): each line under its speaker's name and
 * avatar, against the local service and the local Discord (test/helpers/fake-discord.ts).
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

async function setup(extra: Record<string, unknown> = {}, gateways?: GatewaySpec[]): Promise<{ env: Env; discord: FakeDiscord }> {
  discord = await FakeDiscord.start();
  discord.addChannel(GENERAL);
  discord.addChannel(RANDOM);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    plugins: [{ use: 'relay-discord', with: { token: discord.token, api_url: discord.apiUrl, channels: gateways ? {} : { general: GENERAL }, ...extra } }],
  }], gateways);
  return { env, discord };
}

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-discord']!;
const hookPosts = (fake: FakeDiscord, channel: string) => fake.inChannel(channel).filter((m) => m.webhook_id !== undefined);

describe('relay-discord through webhooks', () => {
  test('a line is posted by the channel\'s webhook under its speaker\'s name and avatar, nobody pinged; its echo is not relayed back; a restart reuses the webhook', async () => {
    const { env: e, discord: fake } = await setup({ avatar_url: 'https://avatars.example.org/{platform}/{id}.png' });
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    await post(e.svc, 'general', 'bob', 'hello @here, *bold* <@600000000000000001>');
    await waitFor('the webhook post', () => hookPosts(fake, GENERAL).length === 1);
    const [line] = hookPosts(fake, GENERAL) as Array<ReturnType<FakeDiscord['inChannel']>[number] & { author: { avatar_url?: string } }>;
    expect(line!.author.username).toBe('Bob Member');
    expect(line!.author.avatar_url).toMatch(/^https:\/\/avatars\.example\.org\/chat\/\d+\.png$/);
    expect(line!.content).toBe('hello @\u200bhere, \\*bold\\* <\u200b@600000000000000001\\>');
    expect(line!.allowed_mentions).toEqual({ parse: [] });
    expect(fake.webhooks.size).toBe(1);
    expect(fake.inChannel(GENERAL).filter((m) => m.author.id === fake.bot.id)).toHaveLength(0);

    // Its echo (MESSAGE_CREATE from the webhook) is not relayed back; a person's line is.
    fake.say(GENERAL, ALICE, 'from Discord');
    await waitFor('Alice\'s line taken', () => stats(e).received === 1);
    await e.supervisor!.stop();
    await e.start();
    await waitFor('a new session', () => stats(e).sessions === 1);
    await post(e.svc, 'general', 'bob', 'after the restart');
    await waitFor('the second webhook post', () => hookPosts(fake, GENERAL).length === 2);
    // The webhook made by the first run was found again, not made twice.
    expect(fake.webhooks.size).toBe(1);
    expect(fake.calls.filter((c) => c === `POST /channels/${GENERAL}/webhooks`)).toHaveLength(1);
  });

  test('a webhook post whose answer was lost is found among the channel\'s messages, not posted again', async () => {
    const { env: e, discord: fake } = await setup();
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    await post(e.svc, 'general', 'bob', 'warm-up');
    await waitFor('the first post', () => hookPosts(fake, GENERAL).length === 1);
    fake.loseAnswer(2);
    await post(e.svc, 'general', 'bob', 'said once');
    await post(e.svc, 'general', 'bob', 'said once');
    await post(e.svc, 'general', 'bob', 'and a third');
    await waitFor('the queue to Discord empty', () => stats(e).queued === 0 && stats(e).posted === 4, 30_000);
    expect(hookPosts(fake, GENERAL).map((m) => m.content)).toEqual(['warm-up', 'said once', 'said once', 'and a third']);
    expect(stats(e).retries).toBeGreaterThanOrEqual(2);
  });

  test('a long run of posts leaves no listener behind on the relay\'s stop signal (no MaxListenersExceededWarning)', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      const { env: e, discord: fake } = await setup();
      await e.start();
      await waitFor('the gateway session', () => stats(e).sessions === 1);
      for (let n = 1; n <= 40; n += 1) await post(e.svc, 'general', 'bob', `line ${n}`);
      await waitFor('forty posts', () => hookPosts(fake, GENERAL).length === 40, 20_000);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => /MaxListeners/.test(w))).toEqual([]);
  });

  test('without Manage Webhooks the channel falls back to the bot posting **name**: text, and the status says why', async () => {
    const { env: e, discord: fake } = await setup();
    fake.webhooksAllowed = false;
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    await post(e.svc, 'general', 'bob', 'still relayed');
    await waitFor('the bot\'s post', () => fake.inChannel(GENERAL).some((m) => m.author.id === fake.bot.id));
    expect(fake.inChannel(GENERAL).map((m) => m.content)).toEqual(['**Bob Member**: still relayed']);
    const report = e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-discord')!;
    expect(report.status.connection).toMatchObject({ state: 'connected', detail: expect.stringMatching(/posting as the bot in 700000000000000001/) });
  });

  test('in a gateway of two channels: a reply quotes its parent; an edit and a deletion go through the webhook', async () => {
    const { env: e, discord: fake } = await setup({}, [{ name: 'lobby', endpoints: [{ chat: 'general' }, { discord: GENERAL }, { discord: RANDOM }] }]);
    await e.start();
    await waitFor('the gateway session', () => stats(e).sessions === 1);
    const parent = fake.say(GENERAL, ALICE, 'the plan');
    await waitFor('the copy in random', () => hookPosts(fake, RANDOM).length === 1);
    const copy = hookPosts(fake, RANDOM)[0]!;
    expect(copy).toMatchObject({ content: 'the plan', author: { username: 'Alice D' } });
    fake.say(GENERAL, ALICE, 'and a detail', parent.id);
    await waitFor('the reply in random', () => hookPosts(fake, RANDOM).length === 2);
    expect(hookPosts(fake, RANDOM)[1]!.content).toBe('> **Alice D**: the plan\nand a detail');
    fake.edit(parent.id, 'the new plan');
    await waitFor('the copy edited', () => fake.calls.some((c) => c.startsWith('PATCH /webhooks/') && c.endsWith(`/messages/${copy.id}`)));
    expect(hookPosts(fake, RANDOM)[0]!.content).toBe('the new plan');
    fake.remove(parent.id);
    await waitFor('the copy deleted', () => !fake.inChannel(RANDOM).some((m) => m.id === copy.id));
    expect(stats(e)).toMatchObject({ edited: 1, deleted: 1, dropped: 0 });
    // The webhook's own posts, edits and deletions were not relayed back to the chat or to general.
    expect(fake.inChannel(GENERAL).filter((m) => m.webhook_id !== undefined)).toHaveLength(0);
  });
});
