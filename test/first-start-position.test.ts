import { afterEach, describe, expect, it } from 'vitest';
import { EMAILS } from './helpers/service.js';
import { adminOk, chatOf, history, makeEnv, post, probes, range, serviceStats, waitFor, type Env } from './helpers/supervisor.js';

/**
 * A first start (no cursor yet) takes each chat's position from the history the socket sends on
 * connect, not from a getchathistory call per chat (10,000 chats cost 10,000 calls before), and hands on
 * what the REST read did: nothing old (history_on_first_start 0) or the N most recent, then every
 * message after it once, in order.
 */
let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const SIZES = { empty: 0, one: 1, fifty: 50, many: 120 } as const;

async function makeChat(subject: string, messages: number): Promise<void> {
  await adminOk(env!.svc, 'chats', { group: 'demo', owner: EMAILS.alice, subject, members: [EMAILS.bob] });
  if (messages > 0) await adminOk(env!.svc, 'chats/messages', { group: 'demo', chat: subject, user: EMAILS.alice, message: `old {n}`, count: messages });
}

const historyReads = async () => ((await serviceStats(env!.svc)).api_calls?.getchathistory ?? 0) as number;

describe('first start', () => {
  it('reads no history: the socket\'s own frames say where each chat is (0, 1, 50, 120 messages)', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    for (const [subject, count] of Object.entries(SIZES)) await makeChat(subject, count);
    const probe = env.probe('seen');
    env.writeConfig([{ chats: Object.keys(SIZES).map((chat) => ({ chat })), plugins: [{ use: probe, with: { key: 'sizes' } }] }]);
    const before = await historyReads();
    const supervisor = await env.start();
    const runners = supervisor.bots[0]!.runners;
    await waitFor('every chat placed', () => runners.every((runner) => runner.sequencer.position !== undefined));
    expect(Object.fromEntries(runners.map((runner) => [runner.info.subject, runner.sequencer.position]))).toEqual(SIZES);
    expect(await historyReads() - before).toBe(0);

    for (const subject of Object.keys(SIZES)) await post(env.svc, subject, 'alice', `new in ${subject}`);
    await waitFor('the new messages handed on', () => runners.every((runner) => runner.sequencer.stats.delivered === 1));
    const seen = probes().seen.sizes ?? [];
    expect(seen.map((s) => [s.chat, s.msgNum, s.backfilled]).toSorted()).toEqual(
      Object.entries(SIZES).map(([subject, count]) => [subject, count + 1, false]).toSorted());
    expect(await historyReads() - before).toBe(0);
    const reader = env.client('bob');
    for (const runner of runners) {
      const all = await history(reader, String((await chatOf(reader, runner.info.subject))!.id));
      expect(runner.sequencer.position).toBe(all.at(-1)!.msg_num);
    }
  });

  it('history_on_first_start hands on that many of the frames, backfilled, with no history read', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    await makeChat('recent', 120);
    const probe = env.probe('seen');
    env.writeConfig([{ chats: [{ chat: 'recent' }], history_on_first_start: 3, plugins: [{ use: probe, with: { key: 'recent' } }] }]);
    const before = await historyReads();
    const supervisor = await env.start();
    const runner = supervisor.bots[0]!.runners[0]!;
    await waitFor('the three most recent handed on', () => runner.sequencer.position === 120);
    await post(env.svc, 'recent', 'alice', 'after the start');
    await waitFor('the new message handed on', () => runner.sequencer.position === 121);
    expect((probes().seen.recent ?? []).map((s) => [s.msgNum, s.backfilled])).toEqual([[118, true], [119, true], [120, true], [121, false]]);
    expect(await historyReads() - before).toBe(0);
  });

  it('messages posted while the socket opens: everything after the starting position once, in order', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    await makeChat('busy', 45);
    const probe = env.probe('seen');
    env.writeConfig([{ chats: [{ chat: 'busy' }], plugins: [{ use: probe, with: { key: 'busy' } }] }]);
    let posted = 45;
    let placed = false;
    let after = 0;
    // Posts one at a time from before the start until a few after the chat was placed: some land before
    // the socket, some while it opens and its history is sent, some live.
    const poster = (async () => {
      while (after < 5) {
        await post(env!.svc, 'busy', 'alice', `during ${posted + 1}`);
        posted += 1;
        if (placed) after += 1;
      }
    })();
    const supervisor = await env.start({ waitConnected: false });
    await supervisor.connected();
    const runner = supervisor.bots[0]!.runners[0]!;
    await waitFor('the chat placed', () => runner.sequencer.position !== undefined);
    placed = true;
    await poster;
    await waitFor('every message handed on', () => runner.sequencer.position === posted);
    const seen = (probes().seen.busy ?? []).map((s) => s.msgNum);
    expect(seen.length).toBeGreaterThanOrEqual(5);
    // Nothing skipped after the start, nothing twice: a run of msg_nums ending at the newest.
    expect(seen).toEqual(range(posted - seen.length + 1, posted));
  });
});
