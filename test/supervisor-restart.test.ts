import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { OutboxFile } from '../src/store/outbox-file.js';
import { adminOk, chatOf, history, kill, makeEnv, post, range, readCursors, readSeenFile, type Env, waitFor } from './helpers/supervisor.js';

/**
 * The supervisor killed (SIGKILL of its process) and started again on the same state dir: nothing lost,
 * nothing handed on twice, and posts accepted before the kill are made after the restart, once.
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const outbox = (e: Env) => {
  try {
    return OutboxFile.read(join(e.stateDir, 'bots', 'bot0', 'outbox.jsonl')).items;
  } catch {
    return [];
  }
};

describe('supervisor: killed and restarted', () => {
  test('SIGKILL in the middle of a stream: after the restart the plugin\'s file has every msg_num in order, none lost, none repeated but the one in flight', { timeout: 90_000 }, async () => {
    env = await makeEnv([]);
    const file = join(env.dir, 'seen.jsonl');
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: recorder, with: { file } }] }]);
    const child = await env.spawn();
    const first = await post(env.svc, 'general', 'carol', 'first');
    await waitFor('the first message in the file', () => readSeenFile(file).length === 1);

    // A stream from two members; the process is killed while it runs.
    let last = first.msg_num;
    let streaming = true;
    const stream = (async () => {
      for (let round = 0; streaming || round < 12; round += 1) {
        last = (await post(env!.svc, 'general', round % 2 ? 'bob' : 'carol', `stream ${round}.{n}`, 4)).msg_num;
        await pause(30);
      }
    })();
    await waitFor('some of the stream in the file', () => readSeenFile(file).length >= 15, 30_000);
    await kill(child, 'SIGKILL');
    streaming = false;
    await stream;
    const beforeRestart = readSeenFile(file).length;
    expect(beforeRestart).toBeLessThan(last - first.msg_num + 1);
    await post(env.svc, 'general', 'bob', 'while down {n}', 10);

    await env.spawn();
    const after = await post(env.svc, 'general', 'carol', 'after the restart');
    await waitFor('everything in the file', () => readSeenFile(file).at(-1)?.msgNum === after.msg_num, 30_000);
    const seen = readSeenFile(file);
    // The one message a plugin may have been working on at the kill (its cursor not yet saved) is handed
    // on again, right after the restart: docs/bots.md saves the cursor after the plugins are done. Nothing
    // else repeats and nothing is missing.
    const nums = seen.map((s) => s.msgNum);
    const again = seen[beforeRestart - 1]!.msgNum === seen[beforeRestart]!.msgNum ? [beforeRestart] : [];
    expect(nums.filter((_, i) => !again.includes(i))).toEqual(range(first.msg_num, after.msg_num));
    // What was missed while down came through history after the restart.
    expect(seen.slice(beforeRestart, -1).every((s) => s.backfilled)).toBe(true);
  });

  test('a post queued while its chat is disconnected, then SIGKILL: it is made after the restart, exactly once', { timeout: 90_000 }, async () => {
    env = await makeEnv([]);
    const file = join(env.dir, 'seen.jsonl');
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'general' }, { chat: 'random' }], plugins: [{ use: recorder, with: { file } }] }]);
    const child = await env.spawn();
    // random's socket is cut and cannot come back; general stays connected.
    await adminOk(env.svc, 'faults/refuse-upgrades', { seconds: 60 });
    await adminOk(env.svc, 'faults/drop-sockets', { chat: 'random', group: 'demo' });
    const asked = await post(env.svc, 'general', 'carol', '!send random queued before the kill');
    // Killed once the plugins are done with the message (its cursor saved) and the post is queued.
    const general = (await chatOf(env.client('carol'), 'general'))!;
    await waitFor('the cursor past the message', () => readCursors(env!.stateDir, 'bot0').cursors.get(general.id) === asked.msg_num);
    expect(outbox(env).map((item) => [item.text, item.state])).toEqual([['queued before the kill', 'queued']]);
    await kill(child, 'SIGKILL');

    await adminOk(env.svc, 'faults/clear', {});
    await env.spawn();
    const carol = env.client('carol');
    const random = (await chatOf(carol, 'random'))!;
    const made = async () => (await history(carol, random.id)).filter((m) => m.message === 'queued before the kill');
    await waitFor('the post made', async () => (await made()).length >= 1, 30_000);
    await waitFor('the outbox empty', () => outbox(env!).length === 0, 30_000);
    // A later message goes all the way through the chain: nothing more is on its way.
    const marker = await post(env.svc, 'general', 'bob', 'marker');
    await waitFor('the marker', () => readSeenFile(file).some((s) => s.msgNum === marker.msg_num && s.chat === 'general'));
    expect(await made()).toHaveLength(1);
    // The message that asked for the post was handed on once: the restart did not ask again.
    expect(readSeenFile(file).filter((s) => s.text.startsWith('!send'))).toHaveLength(1);
  });

  test('a !ping missed while upgrades are refused, the reply queued during the catch-up, then SIGKILL: one pong after the restart', { timeout: 90_000 }, async () => {
    env = await makeEnv([]);
    const file = join(env.dir, 'seen.jsonl');
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'responder', timeout_ms: 3000 }, { use: recorder, with: { file } }] }]);
    const child = await env.spawn();
    const carol = env.client('carol');
    const general = (await chatOf(carol, 'general'))!;
    const pongs = async () => (await history(carol, general.id)).filter((m) => m.message === 'pong');
    await adminOk(env.svc, 'faults/refuse-upgrades', { seconds: 1 });
    await adminOk(env.svc, 'faults/drop-sockets', {});
    const ping = await post(env.svc, 'general', 'carol', '!ping');
    // Back after the refusal, the catch-up hands the !ping to the responder, whose pong is queued.
    await waitFor('the pong queued', () => outbox(env!).some((item) => item.text === 'pong'), 30_000);
    await kill(child, 'SIGKILL');

    await env.spawn();
    await waitFor('the outbox empty', () => outbox(env!).length === 0, 30_000);
    const marker = await post(env.svc, 'general', 'bob', 'marker');
    await waitFor('the marker', () => readSeenFile(file).some((s) => s.msgNum === marker.msg_num), 30_000);
    expect(await pongs()).toHaveLength(1);
    expect(readSeenFile(file).filter((s) => s.msgNum === ping.msg_num)).toHaveLength(1);
  });
});
