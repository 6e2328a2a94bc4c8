import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { adminOk, chatOf, history, makeEnv, post, probes, readCursors, type Env, waitFor } from './helpers/supervisor.js';

/**
 * Commands missed while the bot was away (answered when young enough, skipped with a log line when
 * too old), and no message answered twice: not after socket drops, not when a restart hands old
 * messages on again, even when the answer's text would now be different.
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

async function setUp(key: string) {
  env = await makeEnv([]);
  const current = env;
  const recorder = env.probe('recorder');
  const configure = (responder: Record<string, unknown> = {}) => current.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [{ use: 'responder', with: { builtins: { topics: { cooldown: {} } }, ...responder } }, { use: recorder, with: { key } }],
  }]);
  configure();
  await env.start();
  const bot = env.client('bot');
  const botId = String((await bot.login()).id);
  const general = (await chatOf(bot, 'general'))!;
  const botMessages = async () => (await history(bot, general.id)).filter((m) => m.user_id === botId);
  const restart = async (responder?: Record<string, unknown>) => {
    await current.supervisor!.stop();
    current.supervisor = undefined;
    if (responder) configure(responder);
  };
  /** Everything the bot will post is posted: a marker went through the chain and the outbox is empty. */
  const settled = async (marker: string) => {
    await post(current.svc, 'general', 'carol', marker);
    await waitFor(`the marker ${marker}`, () => probes().seen[key]?.some((s) => s.text === marker), 30_000);
    await waitFor('the outbox empty', () => current.supervisor!.bots[0]!.runners.every((r) => r.outbox.pending === 0), 30_000);
  };
  return { env: current, bot, general, botMessages, restart, settled };
}

describe('responder: missed commands and answering once', () => {
  test('a command missed while away is answered when young, skipped with a log line when older than max_age', { timeout: 40_000 }, async () => {
    const { env, botMessages, restart, settled } = await setUp('missed');
    await restart();
    await post(env.svc, 'general', 'bob', '!ping');
    await env.start();
    await waitFor('the missed !ping answered', async () => (await botMessages()).some((m) => m.message === 'pong'));
    const ping = await waitFor('the !ping past the responder', () => probes().seen.missed?.find((s) => s.text === '!ping'));
    expect(ping.backfilled).toBe(true);

    await restart({ max_age: '1ms' });
    await post(env.svc, 'general', 'bob', '!help');
    await env.start();
    await settled('marker 1');
    expect((await botMessages()).map((m) => m.message)).toEqual(['pong']);
    const skipped = env.log.withMessage('responder: missed while away and too old to answer now; skipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({ rule: '!help', maxAgeMs: 1 });
    // Live commands are answered whatever max_age says.
    await post(env.svc, 'general', 'bob', '!ping');
    await waitFor('the live !ping answered', async () => (await botMessages()).length === 2);
  });

  test('messages handed on again after a restart are not answered again, even when the answer would differ', { timeout: 40_000 }, async () => {
    const { env, general, botMessages, restart, settled } = await setUp('again');
    await post(env.svc, 'general', 'bob', '!topics 1');
    await post(env.svc, 'general', 'carol', '!ping');
    await waitFor('both answered', async () => (await botMessages()).length === 2);
    const before = (await botMessages()).map((m) => m.message);
    expect(before[0]).toMatch(/^Latest topics in demo:\n1\. Release planning/);

    // A new topic changes what !topics 1 says; then the cursor is moved back before both commands.
    await restart();
    await adminOk(env.svc, 'topics', { group: 'demo', user: 'alice@example.com', subject: 'A brand new topic', body: 'news' });
    const { cursors } = readCursors(env.stateDir, 'bot0');
    const first = (await history(env.client('bot'), general.id)).find((m) => m.message === '!topics 1')!;
    appendFileSync(join(env.stateDir, 'bots', 'bot0', 'cursors.jsonl'), `${JSON.stringify({ c: general.id, m: first.msg_num - 1 })}\n`);
    expect(cursors.get(general.id)).toBeGreaterThan(first.msg_num);
    await env.start();
    await settled('marker');
    expect(probes().seen.again!.filter((s) => s.text === '!topics 1').map((s) => s.backfilled)).toEqual([false, true]);
    expect((await botMessages()).map((m) => m.message)).toEqual(before);
    expect(env.log.withMessage('responder: already answered this message; not again').map((l) => l.rule)).toEqual(['!topics', '!ping']);

    // New commands are still answered, with what is true now.
    await post(env.svc, 'general', 'bob', '!topics 1');
    await waitFor('the new !topics answered', async () => (await botMessages()).length === 3);
    expect((await botMessages()).at(-1)!.message).toContain('A brand new topic');
  });

  test('a command followed at once by a socket drop is answered exactly once', { timeout: 40_000 }, async () => {
    const { env, botMessages, settled } = await setUp('drops');
    for (let i = 1; i <= 3; i += 1) {
      await post(env.svc, 'general', 'carol', `!topics ${i}`);
      await adminOk(env.svc, 'faults/drop-sockets', {});
      await waitFor(`answer ${i}`, async () => (await botMessages()).length >= i, 30_000);
    }
    await settled('marker');
    expect((await botMessages()).map((m) => m.message.split('\n').length)).toEqual([2, 3, 4]);
  });
});
