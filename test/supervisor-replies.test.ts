import { afterEach, describe, expect, test } from 'vitest';
import type { Supervisor } from '../src/supervisor/supervisor.js';
import { adminOk, chatOf, history, makeEnv, post, probes, type Env, waitFor } from './helpers/supervisor.js';

/** Replies: the loop guard, `!ping` answered exactly once (also across drops and refused upgrades), posts to closed chats. */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const runner = (supervisor: Supervisor, subject: string) => supervisor.bots[0]!.runners.find((r) => r.info.subject === subject)!;

async function setUp(key: string, extra: { timeout_ms?: number } = {}) {
  env = await makeEnv([]);
  const recorder = env.probe('recorder');
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    plugins: [{ use: 'responder', ...extra }, { use: recorder, with: { key } }],
  }]);
  const supervisor = await env.start();
  const bot = env.client('bot');
  const general = (await chatOf(bot, 'general'))!;
  const pongs = async () => (await history(bot, general.id)).filter((m) => m.message === 'pong');
  /**
   * Nothing more can be posted: every post is confirmed, the sockets are open and a marker posted now
   * went all the way through the chain.
   */
  const settled = async (marker: string) => {
    await waitFor('the outboxes empty and the sockets open', () =>
      supervisor.bots[0]!.runners.every((r) => r.outbox.pending === 0 && r.connection.state === 'open'), 30_000);
    await post(env!.svc, 'general', 'bob', marker);
    await waitFor(`the marker ${marker}`, () => probes().seen[key]!.some((s) => s.text === marker), 30_000);
  };
  return { env, supervisor, bot, general, pongs, settled };
}

describe('supervisor: replies', () => {
  test('!ping is answered once per !ping and the bot never sees its own messages', async () => {
    const { env, supervisor, bot, general, pongs, settled } = await setUp('own');
    for (let i = 1; i <= 3; i += 1) {
      await post(env.svc, 'general', 'carol', '!ping');
      await waitFor(`pong ${i}`, async () => (await pongs()).length === i);
    }
    // The bot's own words from elsewhere (another session of the same account) are not handed on either.
    await post(env.svc, 'general', 'bot', 'said by the bot elsewhere');
    await settled('marker');
    expect(await pongs()).toHaveLength(3);
    const botUser = String((await chatOf(bot, 'general'))!.chat_sub!.user_id);
    const seen = probes().seen.own!;
    expect(seen.map((s) => s.text)).toEqual(['!ping', '!ping', '!ping', 'marker']);
    expect(seen.some((s) => s.userId === botUser)).toBe(false);
    // The bot's messages moved the cursor all the same.
    const last = (await history(bot, general.id)).at(-1)!;
    expect(runner(supervisor, 'general').sequencer.position).toBe(last.msg_num);
    expect(supervisor.stats().bot0!.chats.find((c) => c.chat === 'general')!.sequencer.own).toBeGreaterThanOrEqual(3);
  });

  test('a !ping followed at once by a socket drop is still answered exactly once', { timeout: 60_000 }, async () => {
    const { env, pongs, settled } = await setUp('drop');
    for (let i = 1; i <= 4; i += 1) {
      await post(env.svc, 'general', 'carol', '!ping');
      await adminOk(env.svc, 'faults/drop-sockets', {});
      await waitFor(`pong ${i}`, async () => (await pongs()).length >= i, 30_000);
    }
    await settled('marker');
    expect(await pongs()).toHaveLength(4);
    expect(probes().seen.drop!.filter((s) => s.text === '!ping')).toHaveLength(4);
  });

  test('a !ping posted while the bot\'s upgrades are refused gets exactly one pong once it is back', { timeout: 60_000 }, async () => {
    const { env, supervisor, pongs, settled } = await setUp('refused');
    await adminOk(env.svc, 'faults/refuse-upgrades', { seconds: 2 });
    await adminOk(env.svc, 'faults/drop-sockets', {});
    await waitFor('the socket gone', () => runner(supervisor, 'general').connection.state !== 'open');
    await post(env.svc, 'general', 'carol', '!ping');
    await waitFor('the pong', async () => (await pongs()).length === 1, 30_000);
    await settled('marker');
    expect(await pongs()).toHaveLength(1);
    const ping = probes().seen.refused!.find((s) => s.text === '!ping')!;
    expect(ping.backfilled).toBe(true);
  });

  test('a post to a closed chat fails with PostFailedError, from the bot and from a plugin', async () => {
    const { env, supervisor } = await setUp('closed');
    const random = runner(supervisor, 'random');
    const alice = env.client('alice');
    const chat = (await chatOf(alice, 'random'))!;
    await alice.updateChat({ chat_id: chat.id, is_closed: true });
    await waitFor('random closed', () => random.connection.state === 'closed');

    await expect(supervisor.bots[0]!.send('random', 'x')).rejects.toMatchObject({ name: 'PostFailedError' });
    await post(env.svc, 'general', 'carol', '!send random hello from general');
    await waitFor('the plugin\'s send settled', () => probes().sends.closed?.length === 1);
    expect(probes().sends.closed![0]).toMatchObject({ chat: 'random', ok: false, error: 'PostFailedError' });
    // A chat the bot is not in at all fails the same way.
    await expect(supervisor.bots[0]!.send('nowhere', 'x')).rejects.toMatchObject({ name: 'PostFailedError' });
  });

  test('posts queued when the chat closes fail with PostFailedError; none is left in the outbox', async () => {
    env = await makeEnv([{ chats: [{ chat: 'random' }], reply_rate: { per_second: 0.5, burst: 1 } }]);
    const supervisor = await env.start();
    const random = runner(supervisor, 'random');
    const bot = supervisor.bots[0]!;
    const posts: Array<Promise<string>> = [];
    for (const text of ['one', 'two', 'three']) {
      posts.push(bot.send('random', text).then(() => 'posted', (error: Error) => error.name));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const alice = env.client('alice');
    await alice.updateChat({ chat_id: (await chatOf(alice, 'random'))!.id, is_closed: true });
    const outcomes = await Promise.all(posts);
    // The first may have made it before the close; the ones still waiting for the rate did not.
    expect(outcomes.slice(1)).toEqual(['PostFailedError', 'PostFailedError']);
    expect(['posted', 'PostFailedError']).toContain(outcomes[0]);
    expect(random.outbox.pending).toBe(0);
    expect(random.connection.state).toBe('closed');
  });
});
