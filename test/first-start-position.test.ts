import { afterAll, describe, expect, it } from 'vitest';
import { EMAILS } from './helpers/service.js';
import { adminOk, chatOf, history, makeEnv, serviceStats, waitFor, type Env } from './helpers/supervisor.js';

/**
 * A first start (no cursor yet) takes each chat's position from the history the socket sends on
 * connect, not from a getchathistory call per chat (10,000 chats cost 10,000 calls before): chats with
 * 0, 1, 50 and 120 messages, no history read, nothing old handed on, and what is said next handed on once.
 */
let env: Env | undefined;
afterAll(async () => {
  await env?.close();
});

const SIZES = { empty: 0, one: 1, fifty: 50, many: 120 } as const;

describe('first start', () => {
  it('reads no history: the socket\'s own frames say where each chat is', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    for (const [subject, count] of Object.entries(SIZES)) {
      await adminOk(env.svc, 'chats', { group: 'demo', owner: EMAILS.alice, subject, members: [EMAILS.bob] });
      if (count > 0) await adminOk(env.svc, 'chats/messages', { group: 'demo', chat: subject, user: EMAILS.alice, message: `old {n}`, count });
    }
    const probe = env.probe('seen');
    env.writeConfig([{ chats: Object.keys(SIZES).map((chat) => ({ chat })), plugins: [{ use: probe }] }]);
    const before = (await serviceStats(env.svc)).api_calls?.getchathistory ?? 0;
    const supervisor = await env.start();
    const runners = supervisor.bots[0]!.runners;
    await waitFor('every chat placed', () => runners.every((runner) => runner.sequencer.position !== undefined));
    expect(Object.fromEntries(runners.map((runner) => [runner.info.subject, runner.sequencer.position]))).toEqual(SIZES);
    expect(((await serviceStats(env.svc)).api_calls?.getchathistory ?? 0) - before).toBe(0);

    const reader = env.client('bob');
    for (const subject of Object.keys(SIZES)) await adminOk(env.svc, 'chats/messages', { group: 'demo', chat: subject, user: EMAILS.alice, message: `new in ${subject}`, count: 1 });
    await waitFor('the new messages handed on', () => runners.every((runner) => runner.sequencer.stats.delivered === 1));
    for (const runner of runners) {
      const all = await history(reader, String((await chatOf(reader, runner.info.subject))!.id));
      expect(runner.sequencer.position).toBe(all.at(-1)!.msg_num);
    }
  });
});
