import { afterEach, describe, expect, test } from 'vitest';
import type { Supervisor } from '../src/supervisor/supervisor.js';
import { adminOk, makeEnv, post, probes, range, type Env, waitFor } from './helpers/supervisor.js';

/** Exactly once, in order: through many socket drops and through a disconnect longer than the 50 on-connect messages. */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const runner = (supervisor: Supervisor, subject: string) => supervisor.bots[0]!.runners.find((r) => r.info.subject === subject)!;

describe('supervisor: every message exactly once, in order', () => {
  test('a stream of 300 messages from two members while the sockets are dropped every 100-300 ms', { timeout: 90_000 }, async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'general' }, { chat: 'random' }], plugins: [{ use: recorder, with: { key: 'drops' } }] }]);
    const supervisor = await env.start();
    const chats = ['general', 'random'];
    const first = new Map<string, number>();
    const last = new Map<string, number>();
    let drops = 0;
    // 30 rounds: 5 messages from carol and 5 from bob in one chat (the chats alternate), a drop on every
    // other round, 100 to 300 ms apart.
    for (let round = 0; round < 30; round += 1) {
      const chat = chats[round % 2]!;
      const a = await post(env.svc, chat, 'carol', `carol ${round}.{n}`, 5);
      const b = await post(env.svc, chat, 'bob', `bob ${round}.{n}`, 5);
      if (!first.has(chat)) first.set(chat, a.msg_num - 4);
      last.set(chat, b.msg_num);
      if (round % 2 === 1 || round === 0) {
        await adminOk(env.svc, 'faults/drop-sockets', {});
        drops += 1;
      }
      await pause(100 + Math.random() * 200);
    }
    expect(drops).toBeGreaterThanOrEqual(10);
    const seenIn = (chat: string) => (probes().seen.drops ?? []).filter((s) => s.chat === chat);
    await waitFor('all 300 messages', () => chats.every((chat) => seenIn(chat).at(-1)?.msgNum === last.get(chat)), 60_000);
    for (const chat of chats) {
      expect(seenIn(chat).map((s) => s.msgNum)).toEqual(range(first.get(chat)!, last.get(chat)!));
    }
    expect(probes().seen.drops).toHaveLength(300);
    const texts = probes().seen.drops!.map((s) => s.text);
    expect(texts.filter((t) => t.startsWith('carol'))).toHaveLength(150);
    // The drops did cut the bot's sockets, and some messages came through history.
    const dropped = chats.map((chat) => runner(supervisor, chat).connection.stats.dropped);
    expect(dropped.reduce((x, y) => x + y)).toBeGreaterThanOrEqual(3);
    expect(probes().seen.drops!.some((s) => s.backfilled)).toBe(true);
  });

  test('120 messages missed while upgrades are refused all arrive, in order, marked backfilled', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: recorder, with: { key: 'missed' } }] }]);
    const supervisor = await env.start();
    const general = runner(supervisor, 'general');
    const before = await post(env.svc, 'general', 'carol', 'before the outage');
    await waitFor('the first message', () => probes().seen.missed?.length === 1);

    await adminOk(env.svc, 'faults/refuse-upgrades', { seconds: 2 });
    await adminOk(env.svc, 'faults/drop-sockets', {});
    await waitFor('the socket gone', () => general.connection.state !== 'open');
    for (let batch = 0; batch < 6; batch += 1) {
      await post(env.svc, 'general', batch % 2 ? 'bob' : 'carol', `missed ${batch}.{n}`, 20);
    }
    expect(general.connection.state).not.toBe('open');
    await waitFor('the socket back', () => general.connection.state === 'open', 30_000);
    const after = await post(env.svc, 'general', 'bob', 'after the outage');
    await waitFor('all of them', () => probes().seen.missed!.at(-1)?.msgNum === after.msg_num, 30_000);

    const seen = probes().seen.missed!;
    expect(seen.map((s) => s.msgNum)).toEqual(range(before.msg_num, after.msg_num));
    const missed = seen.slice(1, -1);
    expect(missed).toHaveLength(120);
    expect(missed.every((s) => s.backfilled)).toBe(true);
    expect(missed[0]!.text).toBe('missed 0.1');
    expect(missed.at(-1)!.text).toBe('missed 5.20');
    expect(seen[0]!.backfilled).toBe(false);
  });
});
