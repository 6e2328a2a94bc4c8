import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, test } from 'vitest';
import type { Supervisor } from '../src/supervisor/supervisor.js';
import { expectEveryMessageOnce, expectSocketsUntouched, messageStream, socketSnapshot } from './helpers/reload.js';
import { makeEnv, post, probes, serviceStats, type BotSpec, type Env, waitFor } from './helpers/supervisor.js';

/**
 * Reload (issue #16 item 2): bots.yaml read again while messages flow. Added chats start, removed ones
 * stop, a changed plugin restarts alone, a broken file changes nothing; no message is lost or handed
 * on twice, and the sockets of chats that did not change are never touched.
 */

let env: Env | undefined;
/** probes().stops is the process's: what earlier tests stopped is left out. */
let stopsBefore = 0;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

/** A bot in general and random with a responder (one rule) and a recorder that sees every message, the bot's own too. */
function botWith(recorder: string, key: string, options: { chats?: string[]; reply?: string } = {}): BotSpec {
  return {
    chats: (options.chats ?? ['general', 'random']).map((chat) => ({ chat, create: chat.startsWith('reload-') })),
    plugins: [
      { use: 'responder', with: { rules: [{ command: 'ver', reply: options.reply ?? 'version one' }] } },
      { use: recorder, with: { key } },
    ],
  };
}

async function started(key: string, options: { chats?: string[] } = {}): Promise<{ env: Env; supervisor: Supervisor; recorder: string }> {
  env = await makeEnv([]);
  const recorder = env.probe('recorder', 'record', { ownPosts: true });
  env.writeConfig([botWith(recorder, key, options)]);
  const supervisor = await env.start();
  stopsBefore = probes().stops.length;
  return { env, supervisor, recorder };
}

/** Asks !ver in a chat and answers the bot's reply, as the recorder saw it. */
async function askVersion(current: Env, key: string, chat: string): Promise<string> {
  const asked = await post(current.svc, chat, 'bob', '!ver');
  const reply = await waitFor(`the answer to !ver in ${chat}`, () => (probes().seen[key] ?? [])
    .find((s) => s.chat === chat && s.own === 'voice' && s.msgNum > asked.msg_num));
  return reply.text;
}

describe('reload: bots.yaml applied to the running supervisor', () => {
  test('a chat added while messages flow starts; the others keep their sockets; a second reload at once finds nothing to do', { timeout: 60_000 }, async () => {
    const { env, supervisor, recorder } = await started('added');
    const before = await socketSnapshot(env, supervisor);
    const stream = messageStream(env, ['general', 'random']);
    await waitFor('the stream under way', () => stream.first.size === 2);

    env.writeConfig([botWith(recorder, 'added', { chats: ['general', 'random', 'reload-added'] })]);
    const [outcome, again] = await Promise.all([supervisor.reload(env.configFile), supervisor.reload(env.configFile)]);
    expect(outcome).toMatchObject({ applied: true, problems: [], opsChanged: false });
    expect(outcome.changes).toEqual(['bot bot0: chat reload-added added']);
    expect(again).toMatchObject({ applied: true, changes: [], problems: [] });
    expect(supervisor.lastReload).toBe(again);
    expect(env.log.withMessage('reload: bot bot0: chat reload-added added')).toHaveLength(1);

    const bot = supervisor.bots[0]!;
    await waitFor('the added chat open', () => bot.runners.find((r) => r.info.subject === 'reload-added')?.connection.state === 'open');
    expect(bot.runners.filter((r) => r.info.subject === 'reload-added')).toHaveLength(1);
    const inAdded = await post(env.svc, 'reload-added', 'alice', 'hello, new chat');
    await waitFor('the message in the added chat', () => probes().seen.added?.some((s) => s.chat === 'reload-added' && s.msgNum === inAdded.msg_num));

    await stream.rounds(3);
    const last = await stream.stop();
    await expectEveryMessageOnce('added', stream.first, last);
    expectSocketsUntouched(before, supervisor, ['bot0/general', 'bot0/random']);
    const after = await serviceStats(env.svc);
    expect(after.sockets.accepted).toBe(before.accepted + 1);
    expect(after.open_sockets).toBe(before.open + 1);
    expect(probes().stops.slice(stopsBefore)).toEqual([]);
  });

  test('a chat removed while messages flow stops cleanly (its socket closed, its cursor kept); the other keeps its socket', { timeout: 60_000 }, async () => {
    const { env, supervisor, recorder } = await started('removed');
    const bot = supervisor.bots[0]!;
    const random = bot.runners.find((r) => r.info.subject === 'random')!;
    const inRandom = await post(env.svc, 'random', 'alice', 'before the reload');
    await waitFor('the message in random', () => probes().seen.removed?.some((s) => s.msgNum === inRandom.msg_num && s.chat === 'random'));
    const before = await socketSnapshot(env, supervisor);
    const stream = messageStream(env, ['general']);
    await waitFor('the stream under way', () => stream.first.size === 1);

    env.writeConfig([botWith(recorder, 'removed', { chats: ['general'] })]);
    const outcome = await supervisor.reload(env.configFile);
    expect(outcome).toMatchObject({ applied: true, problems: [], changes: ['bot bot0: chat random removed'] });
    expect(bot.runners.map((r) => r.info.subject)).toEqual(['general']);
    expect(random.connection.state).toBe('stopped');
    expect(random.sequencer.position).toBe(inRandom.msg_num);
    // Nothing is handed on from a chat the bot left, and a post to it is refused.
    const afterRemoval = await post(env.svc, 'random', 'alice', 'after the reload');
    await expect(bot.send('random', 'anyone?')).rejects.toThrow(/not in a chat random/);

    await stream.rounds(3);
    const last = await stream.stop();
    await expectEveryMessageOnce('removed', stream.first, last);
    expect(probes().seen.removed!.some((s) => s.msgNum === afterRemoval.msg_num && s.chat === 'random')).toBe(false);
    expectSocketsUntouched(before, supervisor, ['bot0/general']);
    await waitFor('the service sees one socket fewer', async () => (await serviceStats(env.svc)).open_sockets === before.open - 1);
    expect((await serviceStats(env.svc)).sockets.accepted).toBe(before.accepted);
    expect(probes().stops.slice(stopsBefore)).toEqual([]);
  });

  test('the responder\'s rules changed: the responder alone restarts, between messages; its answer changes', { timeout: 60_000 }, async () => {
    const { env, supervisor, recorder } = await started('rules');
    const bot = supervisor.bots[0]!;
    expect(await askVersion(env, 'rules', 'general')).toBe('version one');
    const recorderInstance = bot.pluginInstance('recorder');
    const responderInstance = bot.pluginInstance('responder');
    const handledBefore = bot.pluginReports().find((r) => r.instance === 'recorder')!.chain.handled;
    const before = await socketSnapshot(env, supervisor);
    const stream = messageStream(env, ['general', 'random']);
    await waitFor('the stream under way', () => stream.first.size === 2);

    env.writeConfig([botWith(recorder, 'rules', { reply: 'version two' })]);
    const outcome = await supervisor.reload(env.configFile);
    expect(outcome).toMatchObject({ applied: true, problems: [], changes: ['bot bot0: plugin responder restarted (options changed)'] });
    expect(bot.pluginInstance('responder')).not.toBe(responderInstance);
    expect(bot.pluginInstance('recorder')).toBe(recorderInstance);
    expect(await askVersion(env, 'rules', 'random')).toBe('version two');

    await stream.rounds(3);
    const last = await stream.stop();
    await expectEveryMessageOnce('rules', stream.first, last);
    expectSocketsUntouched(before, supervisor, ['bot0/general', 'bot0/random']);
    expect((await serviceStats(env.svc)).sockets.accepted).toBe(before.accepted);
    // Only the responder stopped; the counters of the plugins that went on kept counting from where they were.
    expect(probes().stops.slice(stopsBefore)).toEqual([]);
    const reports = bot.pluginReports();
    expect(reports.map((r) => r.instance)).toEqual(['responder', 'recorder']);
    expect(reports.find((r) => r.instance === 'recorder')!.chain.handled).toBeGreaterThan(handledBefore);
    expect(reports.find((r) => r.instance === 'recorder')!.latency.count).toBeGreaterThan(handledBefore);
  });

  test('a broken file, a plugin option that is wrong and a state_dir change are refused with where; everything goes on', { timeout: 60_000 }, async () => {
    const { env, supervisor, recorder } = await started('broken');
    const loaded = supervisor.loaded;
    const before = await socketSnapshot(env, supervisor);
    const stream = messageStream(env, ['general', 'random']);
    await waitFor('the stream under way', () => stream.first.size === 2);

    env.writeConfig([botWith(recorder, 'broken', { chats: ['general'] })]);
    appendFileSync(env.configFile, 'gateways: [\n');
    const broken = await supervisor.reload(env.configFile);
    expect(broken.applied).toBe(false);
    expect(broken.changes).toEqual([]);
    expect(broken.problems.join('\n')).toMatch(/bots\.yaml:\d+:\d+: /);
    expect(env.log.lines.some((line) => line.level === 50 && String(line.msg).startsWith('reload: '))).toBe(true);

    const badOptions = botWith(recorder, 'broken');
    badOptions.plugins![0] = { use: 'responder', with: { rules: [{ command: 'ver', reply: 'x', colour: 'blue' }] } };
    env.writeConfig([badOptions]);
    const wrong = await supervisor.reload(env.configFile);
    expect(wrong.applied).toBe(false);
    expect(wrong.problems.join('\n')).toMatch(/bots\.yaml:\d+:\d+: .*colour/);

    env.writeConfig([botWith(recorder, 'broken')]);
    const moved = parse(readFileSync(env.configFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(env.configFile, stringify({ ...moved, state_dir: './elsewhere' }));
    const refused = await supervisor.reload(env.configFile);
    expect(refused).toMatchObject({ applied: false, changes: [] });
    expect(refused.problems).toEqual(['state_dir changed: restart groupwire run to apply it']);

    expect(supervisor.loaded).toBe(loaded);
    expect(supervisor.lastReload).toBe(refused);
    expect(supervisor.bots[0]!.runners.map((r) => r.info.subject)).toEqual(['general', 'random']);
    await stream.rounds(3);
    const last = await stream.stop();
    await expectEveryMessageOnce('broken', stream.first, last);
    expectSocketsUntouched(before, supervisor, ['bot0/general', 'bot0/random']);
    expect((await serviceStats(env.svc)).sockets.accepted).toBe(before.accepted);
    expect(probes().stops.slice(stopsBefore)).toEqual([]);
  });
});

describe('reload: gateways', () => {
  test('a gateway added by a reload joins two running chats without touching their sockets; removed again, it stops', { timeout: 60_000 }, async () => {
    const { env, supervisor, recorder } = await started('gateway');
    const before = await socketSnapshot(env, supervisor);
    const spec = botWith(recorder, 'gateway');
    env.writeConfig([spec], [{ name: 'both', endpoints: [{ chat: 'general' }, { chat: 'random' }] }]);
    const outcome = await supervisor.reload(env.configFile);
    expect(outcome).toMatchObject({ applied: true, problems: [], changes: ['gateways changed: both'] });
    await post(env.svc, 'general', 'bob', 'across the gateway');
    await waitFor('the line in random', () => probes().seen.gateway?.some((s) => s.chat === 'random' && s.own === 'chat' && s.text.includes('across the gateway')));

    env.writeConfig([spec]);
    expect(await supervisor.reload(env.configFile)).toMatchObject({ applied: true, changes: ['gateways changed: none now'] });
    const alone = await post(env.svc, 'general', 'bob', 'not across any more');
    await waitFor('the line handed on in general', () => probes().seen.gateway?.some((s) => s.msgNum === alone.msg_num && s.chat === 'general'));
    const marker = await post(env.svc, 'random', 'carol', 'marker');
    await waitFor('the marker in random', () => probes().seen.gateway?.some((s) => s.msgNum === marker.msg_num && s.chat === 'random'));
    expect(probes().seen.gateway!.some((s) => s.chat === 'random' && s.text.includes('not across any more'))).toBe(false);
    expectSocketsUntouched(before, supervisor, ['bot0/general', 'bot0/random']);
    expect(probes().stops.slice(stopsBefore)).toEqual([]);
  });
});
