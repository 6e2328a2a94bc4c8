import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { adminOk, chatOf, history, makeEnv, post, probes, type Env, waitFor } from './helpers/supervisor.js';

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

/** Cases that once went wrong: posts asked for in one tick, replies awaited during a catch-up, a first start. */
describe('supervisor: edge cases', () => {
  test('a service whose TLS certificate is not trusted (no ca_file): said at error level with what to set, not as a passing network warning', async () => {
    env = await makeEnv([{ chats: [{ chat: 'general' }] }]);
    writeFileSync(env.configFile, readFileSync(env.configFile, 'utf8').replace(/^\s*ca_file: .*\n/m, ''));
    await env.start({ waitConnected: false });
    const said = await waitFor('the certificate said', () => env!.log.lines.find((line) => String(line.msg).startsWith('the service\'s TLS certificate is not trusted')));
    expect(said).toMatchObject({ level: 50 });
    expect(String(said.msg)).toContain('set service.ca_file in bots.yaml');
    expect(String(said.reason)).toMatch(/certificate/);
  });

  test('two posts asked for in the same tick are both made, in order', async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: recorder, with: { key: 'b1' } }] }]);
    const supervisor = await env.start();
    await post(env.svc, 'general', 'carol', 'hello');
    await waitFor('caught up', () => probes().seen.b1?.length === 1);
    const bot = supervisor.bots[0]!;
    const a = bot.send('general', 'first reply');
    const b = bot.send('general', 'second reply');
    const [first, second] = await Promise.all([a, b]);
    expect(second.msg_num).toBe(first.msg_num + 1);
    const general = (await chatOf(env.client('carol'), 'general'))!;
    const replies = (await history(env.client('carol'), general.id)).filter((m) => m.message.endsWith(' reply'));
    expect(replies.map((m) => m.message)).toEqual(['first reply', 'second reply']);
  });

  test('a plugin awaiting its reply during a reconnect\'s catch-up gets it without timing out', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'responder' }, { use: recorder, with: { key: 'b2' } }] }]);
    const supervisor = await env.start();
    const general = supervisor.bots[0]!.runners[0]!;
    await adminOk(env.svc, 'faults/refuse-upgrades', { seconds: 1 });
    await adminOk(env.svc, 'faults/drop-sockets', {});
    await waitFor('the socket gone', () => general.connection.state !== 'open');
    await post(env.svc, 'general', 'carol', '!ping');
    await waitFor('back', () => general.connection.state === 'open', 10_000);
    await waitFor('the !ping through the chain', () => probes().seen.b2?.length === 1, 20_000);
    // The responder awaited its pong inside the catch-up: confirmed from history, not stuck behind it.
    const stats = supervisor.stats().bot0!.plugins.responder;
    // The !ping and the bot's own pong (the chain sees the bot's posts; the responder passes its own by).
    expect(stats).toMatchObject({ handled: 2, timeouts: 0, errors: 0 });
  });

  test('first start: a message posted right after the socket opened is handed on', { timeout: 30_000 }, async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: recorder, with: { key: 'b3' } }] }]);
    await adminOk(env.svc, 'faults/latency', { ms: 400, seconds: 5 });
    const supervisor = await env.start({ waitConnected: false });
    await supervisor.ready();
    const general = supervisor.bots[0]!.runners[0]!;
    await waitFor('open', () => general.connection.state === 'open', 10_000);
    // The socket is open; the first catch-up's getchathistory is still on its way (400 ms latency).
    const m = await post(env.svc, 'general', 'carol', 'said after the bot connected');
    await adminOk(env.svc, 'faults/clear', {});
    await waitFor('the first catch-up done', () => general.sequencer.position !== undefined, 10_000);
    const next = await post(env.svc, 'general', 'carol', 'said later');
    await waitFor('the later message', () => probes().seen.b3?.some((s) => s.msgNum === next.msg_num), 10_000);
    expect(probes().seen.b3!.map((s) => s.msgNum)).toEqual([m.msg_num, next.msg_num]);
  });
});
