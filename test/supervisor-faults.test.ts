import { afterEach, describe, expect, test } from 'vitest';
import type { Supervisor } from '../src/supervisor/supervisor.js';
import { adminOk, makeEnv, post, probes, range, serviceStats, type Env, waitFor } from './helpers/supervisor.js';

/** The bot recovers by itself: expired sessions, 429 on upgrades, refused upgrades; failing plugins are contained. */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const runner = (supervisor: Supervisor, subject: string) => supervisor.bots[0]!.runners.find((r) => r.info.subject === subject)!;

async function recording(key: string, chats = ['general']) {
  env = await makeEnv([]);
  const recorder = env.probe('recorder');
  env.writeConfig([{ chats: chats.map((chat) => ({ chat })), plugins: [{ use: recorder, with: { key } }] }]);
  const supervisor = await env.start();
  return { env, supervisor };
}

const seen = (key: string) => probes().seen[key] ?? [];

/** Waits until every chat of the bot has opened a new socket since `since` (counts from reopened()). */
function opens(supervisor: Supervisor): number[] {
  return supervisor.bots[0]!.runners.map((r) => r.connection.stats.opened);
}
async function reopened(supervisor: Supervisor, since: number[]): Promise<void> {
  await waitFor('every socket opened again', () => supervisor.bots[0]!.runners.every((r, i) =>
    r.connection.stats.opened > since[i]! && r.connection.state === 'open'), 45_000);
}

describe('supervisor: recovering from service faults', () => {
  test('sessions expired and sockets dropped: the bot logs in again and messages keep arriving', { timeout: 60_000 }, async () => {
    const { env, supervisor } = await recording('expired', ['general', 'random']);
    const first = await post(env.svc, 'general', 'carol', 'before expiry');
    await waitFor('the first message', () => seen('expired').length === 1);

    const { expired } = await adminOk(env.svc, 'faults/expire-sessions', {});
    expect(expired).toBeGreaterThan(0);
    const before = opens(supervisor);
    await adminOk(env.svc, 'faults/drop-sockets', {});
    await post(env.svc, 'general', 'bob', 'during expiry {n}', 5);
    await reopened(supervisor, before);
    const last = await post(env.svc, 'general', 'carol', 'after login');
    await post(env.svc, 'random', 'carol', 'random after login');
    await waitFor('every message', () => seen('expired').some((s) => s.text === 'random after login') &&
      seen('expired').some((s) => s.msgNum === last.msg_num && s.chat === 'general'), 30_000);
    expect(seen('expired').filter((s) => s.chat === 'general').map((s) => s.msgNum)).toEqual(range(first.msg_num, last.msg_num));
    // The refused upgrade (`expired`) was answered by a new login (the client's or the socket's own).
    const logins = [...env.log.withMessage('logging in again'), ...env.log.withMessage('logging in again for the chat socket')];
    expect(logins.some((line) => line.operation === 'chatdata' || line.msg === 'logging in again for the chat socket')).toBe(true);
  });

  test('429 on upgrades (Retry-After 1, 5 times): the bot waits them out and comes back by itself', { timeout: 90_000 }, async () => {
    const { env, supervisor } = await recording('limited', ['general', 'random']);
    const first = await post(env.svc, 'general', 'carol', 'before');
    await waitFor('the first message', () => seen('limited').length === 1);

    await adminOk(env.svc, 'faults/errors', { count: 5, type: 'rate_limit', scope: 'upgrade', retry_after: 1 });
    const before = opens(supervisor);
    await adminOk(env.svc, 'faults/drop-sockets', {});
    await post(env.svc, 'general', 'bob', 'while limited {n}', 5);
    await reopened(supervisor, before);
    expect((await serviceStats(env.svc)).faults.errors).toBe(5);
    const waits = env.log.withMessage('upgrade refused; waiting');
    expect(waits).toHaveLength(5);
    // Each 429 was waited out for at least its Retry-After.
    expect(waits.every((line) => (line.delayMs as number) >= 1000)).toBe(true);
    // The refusals slowed the process's whole upgrade budget, and successes count towards its recovery.
    expect(supervisor.upgradeGate.stats).toMatchObject({ refused: 5, accepted: 4 });
    expect(supervisor.upgradeGate.stats.cuts).toBeGreaterThanOrEqual(1);

    const last = await post(env.svc, 'general', 'bob', 'after recovery');
    await post(env.svc, 'random', 'bob', 'random after recovery');
    await waitFor('every message', () => seen('limited').some((s) => s.text === 'random after recovery') &&
      seen('limited').some((s) => s.msgNum === last.msg_num), 30_000);
    const general = seen('limited').filter((s) => s.chat === 'general');
    expect(general.map((s) => s.msgNum)).toEqual(range(first.msg_num, last.msg_num));
    expect(general.slice(1, -1).every((s) => s.backfilled)).toBe(true);
    expect(general.at(-1)!.backfilled).toBe(false);
  });

  test('upgrades refused for 2 s: the bot keeps trying and comes back by itself', { timeout: 90_000 }, async () => {
    const { env, supervisor } = await recording('refused', ['general', 'random']);
    const first = await post(env.svc, 'general', 'carol', 'before');
    await waitFor('the first message', () => seen('refused').length === 1);

    await adminOk(env.svc, 'faults/refuse-upgrades', { seconds: 2 });
    const before = opens(supervisor);
    await adminOk(env.svc, 'faults/drop-sockets', {});
    await post(env.svc, 'general', 'carol', 'while refused {n}', 5);
    await reopened(supervisor, before);
    expect((await serviceStats(env.svc)).faults.refusedUpgrades).toBeGreaterThan(0);
    expect(supervisor.bots[0]!.runners.every((r) => r.connection.stats.refused > 0)).toBe(true);

    const last = await post(env.svc, 'general', 'bob', 'after recovery');
    await post(env.svc, 'random', 'bob', 'random after recovery');
    await waitFor('every message', () => seen('refused').some((s) => s.text === 'random after recovery') &&
      seen('refused').some((s) => s.msgNum === last.msg_num), 30_000);
    const general = seen('refused').filter((s) => s.chat === 'general');
    expect(general.map((s) => s.msgNum)).toEqual(range(first.msg_num, last.msg_num));
    expect(general.at(-1)!.backfilled).toBe(false);
  });
});

describe('supervisor: reconnecting without REST calls', () => {
  test('every socket dropped with messages missed: the history sent on connect catches up, no getchathistory call', { timeout: 60_000 }, async () => {
    const { env, supervisor } = await recording('no-rest', ['general', 'random']);
    const first = await post(env.svc, 'general', 'carol', 'before');
    await waitFor('the first message', () => seen('no-rest').length === 1);
    // Each chat's first start reads its position (that is the one history read it needs).
    await waitFor('both chats positioned', () => supervisor.bots[0]!.runners.every((r) => r.sequencer.position !== undefined));
    const historyReads = async () => (await serviceStats(env.svc)).api_calls.getchathistory ?? 0;
    const readsBefore = await historyReads();

    // Refused for a moment, so the messages are posted while the bot is away.
    await adminOk(env.svc, 'faults/refuse-upgrades', { seconds: 1 });
    const before = opens(supervisor);
    await adminOk(env.svc, 'faults/drop-sockets', {});
    await post(env.svc, 'general', 'bob', 'while away {n}', 3);
    await post(env.svc, 'random', 'bob', 'random while away');
    await reopened(supervisor, before);
    const last = await post(env.svc, 'general', 'carol', 'after');
    await waitFor('every message', () => seen('no-rest').some((s) => s.msgNum === last.msg_num && s.chat === 'general') &&
      seen('no-rest').some((s) => s.text === 'random while away'), 30_000);

    const general = seen('no-rest').filter((s) => s.chat === 'general');
    expect(general.map((s) => s.msgNum)).toEqual(range(first.msg_num, last.msg_num));
    expect(general.slice(1, -1).map((s) => [s.text, s.backfilled])).toEqual([1, 2, 3].map((n) => [`while away ${n}`, true]));
    expect(general.at(-1)!.backfilled).toBe(false);
    expect(seen('no-rest').find((s) => s.text === 'random while away')!.backfilled).toBe(true);
    expect(await historyReads()).toBe(readsBefore);
  });
});

describe('supervisor: plugins that fail', () => {
  test('a plugin that throws and one that hangs (timeout_ms 200): the plugin after them gets every message; stats count them', { timeout: 30_000 }, async () => {
    env = await makeEnv([]);
    const thrower = env.probe('thrower', 'throw');
    const hanger = env.probe('hanger', 'hang');
    const recorder = env.probe('recorder');
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [{ use: thrower }, { use: hanger, timeout_ms: 200 }, { use: recorder, with: { key: 'failing' } }],
    }]);
    const supervisor = await env.start();
    const first = await post(env.svc, 'general', 'carol', 'message {n}', 6);
    await waitFor('all 6 messages', () => seen('failing').length === 6, 20_000);
    expect(seen('failing').map((s) => s.msgNum)).toEqual(range(first.msg_num - 5, first.msg_num));

    const plugins = supervisor.stats().bot0!.plugins;
    expect(plugins.thrower).toEqual({ handled: 0, errors: 6, timeouts: 0 });
    expect(plugins.hanger).toEqual({ handled: 0, errors: 0, timeouts: 6 });
    expect(plugins.recorder).toEqual({ handled: 6, errors: 0, timeouts: 0 });
    // Logged with the plugin's name.
    const failed = env.log.withMessage('plugin failed; the chain goes on');
    expect(failed).toHaveLength(6);
    expect(failed.every((line) => line.plugin === 'thrower')).toBe(true);
    const timedOut = env.log.withMessage('plugin timed out; the chain goes on');
    expect(timedOut).toHaveLength(6);
    expect(timedOut.every((line) => line.plugin === 'hanger' && line.timeoutMs === 200)).toBe(true);
    // The cursor moved past every message all the same.
    expect(runner(supervisor, 'general').sequencer.position).toBe(first.msg_num);
  });
});
