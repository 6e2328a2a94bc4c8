import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import WebSocket from 'ws';
import type { ChatMessage } from '../src/api/index.js';
import { OutboxFile } from '../src/store/outbox-file.js';
import { chatOf, history, makeEnv, post, probes, readCursors, serviceStats, type Env, waitFor } from './helpers/supervisor.js';

/** A clean stop: posts flushed, sockets closed with 1000, plugins stopped in reverse, cursors saved. */

let env: Env | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await env?.close();
  env = undefined;
});

const outbox = (e: Env) => OutboxFile.read(join(e.stateDir, 'bots', 'bot0', 'outbox.jsonl')).items;

describe('supervisor: stopping', () => {
  test('stop() flushes queued posts, closes every socket with 1000, stops plugins in reverse order and saves the cursors', async () => {
    env = await makeEnv([]);
    const first = env.probe('first');
    const second = env.probe('second');
    env.writeConfig([{
      chats: [{ chat: 'general' }, { chat: 'random' }],
      plugins: [{ use: first, with: { key: 'stop' } }, { use: second, with: { key: 'stop-2' } }],
      reply_rate: { per_second: 5, burst: 1 },
    }]);
    const supervisor = await env.start();
    expect((await serviceStats(env.svc)).open_sockets).toBe(2);
    const lastGeneral = await post(env.svc, 'general', 'carol', 'general {n}', 3);
    const lastRandom = await post(env.svc, 'random', 'carol', 'random {n}', 2);
    await waitFor('5 messages', () => probes().seen.stop?.length === 5);

    // Client sockets closed, with their codes (ws itself calls close() again when the peer's close frame arrives).
    const closes = new Map<WebSocket, number[]>();
    const close = WebSocket.prototype.close;
    vi.spyOn(WebSocket.prototype, 'close').mockImplementation(function (this: WebSocket, code?: number, reason?: string | Buffer) {
      if (!(this as unknown as { _isServer: boolean })._isServer) closes.set(this, [...(closes.get(this) ?? []), code ?? 1005]);
      return close.call(this, code, reason);
    });
    const bot = supervisor.bots[0]!;
    // Paced at 5 a second with bursts of 1: most of these are still queued when stop() is called.
    const stopsBefore = probes().stops.length;
    const byes: Array<Promise<ChatMessage>> = [];
    for (const i of [1, 2, 3, 4, 5]) {
      byes.push(bot.send('general', `bye ${i}`));
    }
    await supervisor.stop();
    env.supervisor = undefined;

    const posted: ChatMessage[] = await Promise.all(byes);
    expect(posted.map((m) => m.message)).toEqual(['bye 1', 'bye 2', 'bye 3', 'bye 4', 'bye 5']);
    const general = (await chatOf(env.client('carol'), 'general'))!;
    const byesInHistory = (await history(env.client('carol'), general.id)).filter((m) => m.message.startsWith('bye '));
    expect(byesInHistory.map((m) => m.message)).toEqual(['bye 1', 'bye 2', 'bye 3', 'bye 4', 'bye 5']);
    expect(byesInHistory.map((m) => m.msg_num)).toEqual(posted.map((m) => m.msg_num));
    expect(outbox(env)).toEqual([]);

    expect(closes.size).toBe(2);
    expect([...closes.values()].flat().every((code) => code === 1000)).toBe(true);
    await waitFor('no socket open at the service', async () => (await serviceStats(env!.svc)).open_sockets === 0);
    expect(bot.runners.map((r) => r.connection.state)).toEqual(['stopped', 'stopped']);
    expect(probes().stops.slice(stopsBefore)).toEqual(['second', 'first']);

    // The cursors file: compacted to one line per chat, at the last message handed to the plugins.
    const { cursors, lines } = readCursors(env.stateDir, 'bot0');
    expect(lines).toBe(2);
    const random = (await chatOf(env.client('carol'), 'random'))!;
    expect(cursors.get(general.id)).toBe(lastGeneral.msg_num);
    expect(cursors.get(random.id)).toBe(lastRandom.msg_num);

    await expect(bot.send('general', 'too late')).rejects.toMatchObject({ name: 'PostFailedError' });
  });

  test('posts still queued at a stop without flushing go out on the next start, each once', { timeout: 30_000 }, async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [{ use: recorder, with: { key: 'later' } }],
      reply_rate: { per_second: 2, burst: 1 },
    }]);
    let supervisor = await env.start();
    const bot = supervisor.bots[0]!;
    const later = ['later 1', 'later 2', 'later 3'].map((text) => bot.send('general', text).then(() => 'posted', (e: Error) => e.message));
    await supervisor.stop(0);
    env.supervisor = undefined;
    const outcomes = await Promise.all(later);
    expect(outcomes.filter((o) => o !== 'posted').every((o) => /stays queued/.test(o))).toBe(true);
    expect(outbox(env).map((item) => item.text)).toEqual(['later 1', 'later 2', 'later 3'].slice(outcomes.filter((o) => o === 'posted').length));

    await post(env.svc, 'general', 'carol', 'while stopped');
    supervisor = await env.start();
    await waitFor('the outbox empty', () => supervisor.bots[0]!.runners[0]!.outbox.pending === 0, 20_000);
    expect(outbox(env)).toEqual([]);
    const general = (await chatOf(env.client('carol'), 'general'))!;
    const texts = (await history(env.client('carol'), general.id)).map((m) => m.message);
    expect(texts.filter((t) => t.startsWith('later '))).toEqual(['later 1', 'later 2', 'later 3']);
    // The message posted while it was down came through history; the bot's own posts were not handed on.
    await waitFor('the message from while it was stopped', () => probes().seen.later?.length === 1);
    expect(probes().seen.later![0]).toMatchObject({ text: 'while stopped', backfilled: true });
  });
});
