import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AdminLink, IrcAudience, planPosts, seededRandom, chaosSeed, type PostBatch } from './helpers/chaos.js';
import { channelOf, checkEverything, clusterLayout, strangerJoins, type ClusterLayout } from './helpers/cluster-checks.js';
import { IrcServer } from './helpers/irc-server.js';
import { RedisServer } from './helpers/redis-server.js';
import { EMAILS, startTestService, type DemoUser, type TestService } from './helpers/service.js';
import { chatOf, history, waitFor } from './helpers/supervisor.js';
import { GroupsClient } from '../src/api/client.js';
import { DEMO } from './helpers/service.js';
import { WorkerCluster } from './helpers/worker-cluster.js';
import { request } from 'undici';
import { Redis } from 'ioredis';
import { cleanEnv, runCli } from './helpers/cli.js';
import { promtoolCheck, samples } from './helpers/prometheus-text.js';
import { EXPORTED_METRICS, WORKER_METRICS } from './helpers/alert-metrics.js';

/**
 * Workers sharing the bots of one bots.yaml on a real Redis (docs/scale-out.md): three `groupwire run`
 * processes, 30 chats in four relay bots (logger, responder, relay-irc on a real ngircd) and one bot
 * split in three shards. Every unit runs on exactly one worker at every moment (sampled from the
 * workers' /status.json, and checked afterwards from their logs), a relay's nick never connects twice,
 * and every message reaches its transcript, IRC and the responder exactly once — also while a fourth
 * worker joins under load and one worker stops (SIGTERM) and hands its units over.
 */

const WATCHER = 'watcher';
const MEMBERS: readonly DemoUser[] = ['alice', 'bob', 'carol'];
const seed = chaosSeed();

let redis: RedisServer;
let irc: IrcServer;
let svc: TestService;
let link: AdminLink;
let cluster: WorkerCluster;
let audience: IrcAudience;
let layout: ClusterLayout;
let reader: GroupsClient;
let chatIds: Record<string, string> = {};
let botId = '';
const transcripts = () => join(cluster.dir, 'transcripts');

beforeAll(async () => {
  redis = await RedisServer.start();
  irc = await IrcServer.start();
  svc = await startTestService();
  link = new AdminLink(svc);
  cluster = new WorkerCluster(svc, redis, { leaseSeconds: 3 });
  layout = clusterLayout(irc, transcripts(), { relayBots: 4, perBot: 6, shardedChats: 6, shards: 3 });
  for (const chat of layout.chats) await link.call('chats', { group: 'demo', owner: EMAILS.alice, subject: chat, members: [EMAILS.bob, EMAILS.carol] });
  reader = new GroupsClient({ baseUrl: svc.baseUrl, ca: svc.service.ca, credentials: { email: DEMO.bot[0], password: DEMO.bot[1] } });
  botId = String((await reader.login()).id);
  for (const chat of layout.chats) chatIds[chat] = String((await chatOf(reader, chat))!.id);
  audience = new IrcAudience(irc, WATCHER, layout.chats.filter((chat) => layout.owner.get(chat)!.nick).map(channelOf));
  await audience.connect();
  cluster.writeConfig(layout.bots);
}, 60_000);

afterAll(async () => {
  audience?.close();
  await cluster?.close();
  await reader?.close();
  await link?.close();
  await svc?.close();
  await irc?.close();
  await redis?.stop();
});

/** Samples which worker runs which unit every 150 ms; a unit on two workers at once is recorded. */
function sampleExclusive(): { stop(): Promise<string[]>; samples: number } {
  const doubled: string[] = [];
  let running = true;
  const state = { samples: 0 };
  const loop = (async () => {
    while (running) {
      for (const [unit, workers] of await cluster.running()) if (workers.length > 1) doubled.push(`${unit} on ${workers.join(' and ')}`);
      state.samples += 1;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();
  return {
    get samples() { return state.samples; },
    async stop() {
      running = false;
      await loop;
      return doubled;
    },
  };
}

/** Every chat's socket open on some worker (30 chats), and every relay's nick in its channels. */
async function everyChatOpen(): Promise<void> {
  await waitFor('every chat open on some worker', async () => {
    let open = 0;
    for (const worker of cluster.live()) {
      const status = await cluster.status(worker);
      for (const bot of status?.bots ?? []) open += bot.chats.filter((chat: { state: string }) => chat.state === 'open').length;
    }
    // At least: a reload may add a bot in a chat another bot holds too.
    return open >= layout.chats.length;
  }, 60_000);
  for (const chat of layout.chats) {
    const nick = layout.owner.get(chat)!.nick;
    if (nick) await audience.current.waitForLine(new RegExp(`^:${nick}!\\S+ JOIN :?${channelOf(chat)}$`, 'i'), 30_000);
  }
}

async function postAll(batches: PostBatch[], perSecond: number): Promise<void> {
  const t0 = Date.now();
  for (const [index, batch] of batches.entries()) {
    const due = t0 + (index * 1000) / perSecond;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    await link.post(batch);
  }
}

/** A last word in every chat, seen at the end of its transcript and IRC channel; every ping answered. */
async function drained(): Promise<void> {
  for (const chat of layout.chats) await link.post({ chat, who: 'alice', message: `the end of ${chat} (${Date.now()})`, count: 1 });
  // A failed check throws: waitFor keeps the last one, so a timeout says what was still missing.
  await waitFor('every chat drained: answers, transcripts and IRC', async () => {
    await checkEverything({ reader, layout, chatIds, transcripts: transcripts(), audience, startedAt: zeroes(), botId });
    return true;
  }, 60_000);
}

const zeroes = () => Object.fromEntries(layout.chats.map((chat) => [chat, 0]));
const members = () => Object.fromEntries(layout.chats.map((chat) => [chat, MEMBERS]));

describe('workers sharing bots on Redis', () => {
  test(`three workers: 7 units spread 3/2/2, each on one worker at every moment, everything once (seed ${seed})`, { timeout: 150_000 }, async () => {
    for (const id of ['w1', 'w2', 'w3']) await cluster.start(id);
    await everyChatOpen();
    const sampler = sampleExclusive();
    const random = seededRandom(seed);
    await postAll(planPosts(random, 600, members()), 150);
    await drained();
    const doubled = await sampler.stop();

    expect(doubled, 'a unit on two workers at once').toEqual([]);
    expect(sampler.samples).toBeGreaterThan(5);
    expect(cluster.overlaps(), 'runs of one unit overlapping in time (workers\' logs)').toEqual([]);
    expect(strangerJoins(audience, layout, WATCHER), 'a relay nick connected twice').toEqual([]);
    const counts = [...(await cluster.running()).values()].flat().reduce((by, worker) => by.set(worker, (by.get(worker) ?? 0) + 1), new Map<string, number>());
    expect([...counts.values()].sort()).toEqual([2, 2, 3]);
    const checked = await checkEverything({ reader, layout, chatIds, transcripts: transcripts(), audience, startedAt: zeroes(), botId });
    expect(checked.messages).toBeGreaterThanOrEqual(600 + layout.chats.length);
    expect(checked.ircLines).toBeGreaterThan(400);
    expect(checked.pings).toBeGreaterThan(0);

    // Which worker holds what: /metrics of any worker and `groupwire status` beside one.
    const first = cluster.byId('w1');
    const running = [...(await cluster.running()).keys()].sort();
    // w1 reads the lease table every few seconds: its /metrics may lag the last hand-over by one read.
    const exposition = await waitFor('w1\'s /metrics naming every unit\'s holder', async () => {
      const text = await (await request(`http://127.0.0.1:${first.opsPort}/metrics`)).body.text();
      const held = samples(text).filter((sample) => sample.name === 'groupwire_unit_holder');
      const current = JSON.stringify(held.map((sample) => sample.labels.unit).sort()) === JSON.stringify(running) && new Set(held.map((sample) => sample.labels.worker)).size === 3;
      return current ? text : undefined;
    }, 20_000);
    promtoolCheck(exposition);
    for (const name of [...EXPORTED_METRICS, ...WORKER_METRICS]) expect(exposition, name).toContain(`# TYPE ${name} `);
    const holders = samples(exposition).filter((sample) => sample.name === 'groupwire_unit_holder');
    expect(holders.map((sample) => sample.labels.unit).sort()).toEqual(running);
    expect(new Set(holders.map((sample) => sample.labels.worker))).toEqual(new Set(['w1', 'w2', 'w3']));
    expect(samples(exposition).find((sample) => sample.name === 'groupwire_redis_up')?.value).toBe(1);
    const status = await runCli(['status', cluster.configFile], cleanEnv({ WORKER_ID: 'w1', REDIS_URL: redis.url, OPS_LISTEN: '127.0.0.1:1' }), cluster.dir);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^Worker w1 of 3 · Redis up · leases of 3 s/m);
    for (const id of ['w1', 'w2', 'w3']) expect(status.stdout).toMatch(new RegExp(`^\\s+${id}( \\(this one\\))?\\s.*bot:`, 'm'));
    process.stdout.write(`workers: ${sampler.samples} samples; checked ${checked.messages} transcript lines, ${checked.ircLines} IRC lines, ${checked.pings} pings\n`);
  });

  test('a fourth worker joins under load and one stops (SIGTERM): units move, nothing lost or doubled', { timeout: 150_000 }, async () => {
    const sampler = sampleExclusive();
    const random = seededRandom(seed + 1);
    const posting = postAll(planPosts(random, 900, members()), 100);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const fourth = await cluster.start('w4');
    await waitFor('the fourth worker took a share', async () => ((await cluster.status(fourth))?.coordination?.held.length ?? 0) >= 1, 30_000);
    const stopped = await cluster.terminate('w1');
    expect(stopped.code).toBe(0);
    await posting;
    await waitFor('every unit running again on w2..w4', async () => (await cluster.running()).size === layout.units, 30_000);
    await everyChatOpen();
    await drained();
    const doubled = await sampler.stop();

    expect(doubled, 'a unit on two workers at once').toEqual([]);
    expect(cluster.overlaps(), 'runs of one unit overlapping in time (workers\' logs)').toEqual([]);
    expect(strangerJoins(audience, layout, WATCHER), 'a relay nick connected twice').toEqual([]);
    const handedOver = cluster.workers.find((worker) => worker.id === 'w1')!.cli.stderr().match(/"why":"shutdown"/g)?.length ?? 0;
    expect(handedOver).toBeGreaterThan(0);
    const counts = [...(await cluster.running()).values()].flat().reduce((by, worker) => by.set(worker, (by.get(worker) ?? 0) + 1), new Map<string, number>());
    expect([...counts.values()].sort()).toEqual([2, 2, 3]);
    const checked = await checkEverything({ reader, layout, chatIds, transcripts: transcripts(), audience, startedAt: zeroes(), botId });
    expect(checked.messages).toBeGreaterThanOrEqual(1500 + 2 * layout.chats.length);
    expect(checked.ircLines).toBeGreaterThan(1000);
    process.stdout.write(`workers (join and leave): ${handedOver} units handed over by w1; checked ${checked.messages} transcript lines, ${checked.ircLines} IRC lines, ${checked.pings} pings\n`);
  });

  test('reload on every worker: a new bot is placed, a changed bot restarts, the others keep their leases', { timeout: 90_000 }, async () => {
    // Every lease's fencing token, read from Redis itself.
    const leases = new Redis(redis.url);
    const tokens = async () => {
      const keys = await leases.keys('gwtest:lease:*');
      const values = keys.length === 0 ? [] : await leases.mget(...keys);
      return new Map(keys.map((key, index) => [key.slice('gwtest:lease:'.length), values[index]!.split(':')[0]!] as const).filter(([, token]) => token));
    };
    await waitFor('every unit held', async () => (await tokens()).size === layout.units, 10_000);
    const before = await tokens();
    const bots = layout.bots.map((bot) => (bot.name === 'b1'
      ? { ...bot, plugins: bot.plugins!.map((plugin) => (plugin.use === 'responder' ? { use: 'responder', with: { prefix: '?' } } : plugin)) }
      : bot));
    cluster.writeConfig([...bots, { name: 'extra', chats: [{ chat: layout.chats[0]! }], plugins: [] }]);
    for (const worker of cluster.live()) {
      const answer = await request(`http://127.0.0.1:${worker.opsPort}/reload`, { method: 'POST' });
      expect(answer.statusCode).toBe(200);
      expect(((await answer.body.json()) as { applied: boolean }).applied).toBe(true);
    }
    await waitFor('the new unit placed and the changed one started again', async () => {
      const after = await tokens();
      return after.size === layout.units + 1 && after.get('bot:b1') !== before.get('bot:b1') ? after : undefined;
    }, 30_000);
    const after = await tokens();
    for (const [unit, token] of before) if (unit !== 'bot:b1') expect(after.get(unit), unit).toBe(token);
    // The changed bot runs with its new options: `?ping` is answered in its chat.
    const chat = [...layout.owner].find(([, owner]) => owner.bot === 'b1')![0];
    await everyChatOpen();
    const asked = (await link.post({ chat, who: 'bob', message: '?ping', count: 1 })) as { msg_num: number };
    await waitFor('?ping answered', async () =>
      (await history(reader, chatIds[chat]!)).some((message) => message.msg_num > asked.msg_num && message.message === 'pong'), 30_000);
    leases.disconnect();
  });
});
