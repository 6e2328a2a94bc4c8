import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import type { Supervisor } from '../src/supervisor/supervisor.js';
import {
  AdminLink, chaosSeed, IrcAudience, planFaults, planPosts, PostGate, seededRandom, withoutResentAfterKills, type Fault, type PostBatch, type TimedFault,
} from './helpers/chaos.js';
import { IrcServer, relayPlugin } from './helpers/irc-server.js';
import { EMAILS, type DemoUser } from './helpers/service.js';
import { chatOf, history, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The chaos suite: three chats, three members posting 5,000 messages while the service drops sockets,
 * refuses upgrades, answers bursts of 429, expires every session and restarts once, and the IRC
 * server is killed and started again. A bot with the logger, the responder and the IRC relay must
 * come out of it with every transcript equal to its chat's history, every member message on IRC
 * exactly once and in order, and every `!ping` answered exactly once. See docs/chaos.md; replay a
 * run with CHAOS_SEED=<the seed it printed>.
 */

const TOTAL_MESSAGES = 5_000;
/** The posts, and the faults with them, are spread over this long. */
const POSTING_MS = 32_000;
const MEMBERS: Record<string, readonly DemoUser[]> = {
  general: ['alice', 'bob', 'carol'],
  random: ['alice', 'carol'],
  standup: ['alice', 'bob', 'carol'],
};
const CHATS = Object.keys(MEMBERS);
const channelOf = (chat: string) => `#${chat}`;
const RELAY_NICK = /^gwbot/;
const IRC_PASSWORD = 'back-soon';
/** The relay's lines sent and not yet confirmed, at most (its `queue.in_flight`). */
const IRC_IN_FLIGHT = 100;
/**
 * The service's own rate limits, on (the test harness turns them off by default) and tighter than its
 * defaults (100/s and 20/s), so that a bot reading history wastefully meets them.
 */
const API_RATE_LIMIT = { perSecond: 20, burst: 40 };
const UPGRADE_RATE_LIMIT = { perSecond: 2, burst: 4 };

const seed = chaosSeed();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let env: Env | undefined;
let irc: IrcServer | undefined;
let audience: IrcAudience | undefined;
let adminLink: AdminLink | undefined;

afterAll(async () => {
  audience?.close();
  await adminLink?.close();
  await env?.close();
  await irc?.close();
});

type FaultCounts = Record<Fault['kind'], number>;

describe('chaos', () => {
  test(`5,000 messages through faults of every kind: transcripts, IRC and answers exact (seed ${seed})`, { timeout: 120_000 }, async ({ onTestFailed }) => {
    const started = Date.now();
    process.stdout.write(`chaos: seed ${seed} (replay with CHAOS_SEED=${seed})\n`);
    onTestFailed(() => {
      // The bot's log of the failed run (debug level), for reading next to the replay.
      const file = join(tmpdir(), `groupwire-chaos-${seed}.log.jsonl`);
      writeFileSync(file, (env?.log.lines ?? []).map((line) => JSON.stringify(line)).join('\n'));
      process.stdout.write(`chaos: seed ${seed} failed; the bot's log is in ${file}\n`);
    });
    const random = seededRandom(seed);
    const batches = planPosts(random, TOTAL_MESSAGES, MEMBERS);
    const faults = planFaults(random, POSTING_MS, CHATS);
    const supervisor = await setUp();
    const reader = env!.client('bot');
    const botId = String((await reader.login()).id);
    const chatIds = Object.fromEntries(await Promise.all(CHATS.map(async (chat) => [chat, (await chatOf(reader, chat))!.id] as const)));
    const historyOf = (chat: string) => history(reader, chatIds[chat]!);
    // The relay hands on what arrives from now on; the transcripts hold the whole history.
    const startedAt = Object.fromEntries(await Promise.all(CHATS.map(async (chat) => [chat, (await historyOf(chat)).at(-1)?.msg_num ?? 0] as const)));

    // The members post on a schedule spread over the fault period; the faults run alongside.
    const gate = new PostGate();
    const counts = { retriedPosts: 0, socketsCut: 0 };
    const issued: FaultCounts = { 'drop-sockets': 0, 'refuse-upgrades': 0, 'rate-limit-burst': 0, 'expire-sessions': 0, 'service-restart': 0, 'irc-kill': 0 };
    const t0 = Date.now();
    await Promise.all([postAll(batches, t0, gate, counts), runFaults(faults, t0, gate, counts, issued)]);
    const postedAt = Date.now();
    const { relayStats, responderStats } = await drain(supervisor, batches.filter((b) => b.message === '!ping').length);
    await supervisor.stop();
    env!.supervisor = undefined;

    // The service's history is the truth: its write path (the admin API) takes no faults.
    const checked = { transcript: 0, irc: 0, ircResent: 0, pings: 0, members: 0 };
    for (const chat of CHATS) {
      const all = await historyOf(chat);
      const logged = transcript(join(env!.dir, 'transcripts', 'demo', chat));
      // Every message once, in msg_num order, the bot's own answers included.
      expect(logged.map((m) => [m.msg_num, m.user_id, m.message]), `transcript of ${chat}`).toEqual(all.map((m) => [m.msg_num, m.user_id, m.message]));
      checked.transcript += logged.length;

      const since = all.filter((m) => m.msg_num > startedAt[chat]!);
      const fromMembers = since.filter((m) => m.user_id !== botId);
      // Members' lines and the bot's own answers (the gateway relays its voice), once each, in order; but
      // for what the killed IRC server had taken and not confirmed, which may come twice (documented).
      // No more than the relay says it sent again: with none, nothing is let through.
      const budget = Math.min(IRC_IN_FLIGHT, relayStats.to_irc_resent_lines! - checked.ircResent);
      const { lines: onIrc, resent } = withoutResentAfterKills(audience!.relayedPerConnection(channelOf(chat), RELAY_NICK), budget);
      checked.ircResent += resent;
      // The bot's own answers go out under the name the chat shows for it, as everyone's lines do.
      expect(onIrc, `IRC channel of ${chat}`).toEqual(since.map((m) => `<${m.display_name}> ${m.message}`));
      checked.irc += onIrc.length;
      checked.members += fromMembers.length;

      // The responder answers pings in the order they arrive and the outbox posts in order: the k-th
      // pong answers the k-th ping, and comes after it. The bot says nothing else.
      const asked = fromMembers.filter((m) => m.message === '!ping');
      const answers = since.filter((m) => m.user_id === botId);
      expect(answers.map((m) => m.message), `answers in ${chat}`).toEqual(asked.map(() => 'pong'));
      asked.forEach((ping, k) => expect(answers[k]!.msg_num, `pong ${k + 1} of ${chat} after its ping`).toBeGreaterThan(ping.msg_num));
      checked.pings += asked.length;
    }
    // The planned messages and the three last words (and a post retried, should one ever be).
    expect(checked.members).toBe(TOTAL_MESSAGES + CHATS.length + counts.retriedPosts);
    expect(responderStats.repeats).toBe(0);
    expect(relayStats.to_irc_dropped_refused).toBe(0);
    expect(Object.values(issued).every((n) => n > 0)).toBe(true);

    const stats = await adminLink!.stats();
    process.stdout.write(`chaos: seed ${seed}; faults: ${issued['drop-sockets']} socket drops (${counts.socketsCut} sockets cut), ` +
      `${issued['refuse-upgrades']} upgrade refusal windows (${stats.faults.refusedUpgrades} upgrades refused), ` +
      `${issued['rate-limit-burst']} bursts of 429 (${stats.faults.errors} calls answered 429), ${issued['expire-sessions']} session expiries, ` +
      `${issued['service-restart']} service restart, ${issued['irc-kill']} IRC server kill (relay reconnects: ${relayStats.irc_connects! - 1}, lines sent again: ${relayStats.to_irc_resent_lines}); ` +
      `service rate limits: ${stats.rate_limited.api} api / ${stats.rate_limited.upgrades} upgrade refusals; ` +
      `checked: ${checked.members} member messages, ${checked.transcript} transcript lines, ${checked.irc} IRC lines (${checked.ircResent} shown twice: taken by the killed IRC server, not confirmed), ${checked.pings} pings; ` +
      `posting ${((postedAt - t0) / 1000).toFixed(1)} s, draining ${((Date.now() - postedAt) / 1000).toFixed(1)} s, ` +
      `in all ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  });
});

/** The IRC server and its watcher, the service (rate limits on), a third chat, and the bot with its three plugins. */
async function setUp(): Promise<Supervisor> {
  irc = await IrcServer.start({ kind: 'inspircd' });
  audience = new IrcAudience(irc, 'watcher', CHATS.map(channelOf));
  await audience.connect();
  env = await makeEnv([], { rateLimit: API_RATE_LIMIT, upgradeRateLimit: UPGRADE_RATE_LIMIT });
  adminLink = new AdminLink(env.svc);
  await adminLink.call('chats', { group: 'demo', owner: EMAILS.alice, subject: 'standup', members: [EMAILS.bob, EMAILS.carol] });
  env.writeConfig([{
    chats: CHATS.map((chat) => ({ chat })),
    plugins: [
      { use: 'logger', with: { dir: './transcripts', format: 'jsonl', include_own: true, full_history: true, flush_interval_ms: 100 } },
      { use: 'responder' },
      relayPlugin(irc, {
        channels: Object.fromEntries(CHATS.map((chat) => [chat, channelOf(chat)])),
        // Room for the whole stream, and for the backlog after the IRC server's outage.
        rate: { lines_per_second: 600, burst: 100 }, queue: { in_flight: IRC_IN_FLIGHT },
      }),
    ],
  }]);
  const supervisor = await env.start();
  for (const chat of CHATS) await audience.current.waitForLine(new RegExp(`^:gwbot!\\S+ JOIN :?#${chat}$`, 'i'));
  return supervisor;
}

/** Posts every batch at its time in the schedule (as fast as it can when behind), through the gate. */
async function postAll(batches: PostBatch[], t0: number, gate: PostGate, counts: { retriedPosts: number }): Promise<void> {
  for (const [index, batch] of batches.entries()) {
    const due = t0 + (index * POSTING_MS) / batches.length;
    if (due > Date.now()) await pause(due - Date.now());
    for (let attempt = 1; ; attempt += 1) {
      await gate.enter();
      try {
        await adminLink!.post(batch);
        break;
      } catch (error) {
        // Not expected (the restart waits for the gate). Should it happen, the post may or may not be
        // stored: the history stays the truth, and the count allows for it.
        if (attempt >= 5) throw error;
        counts.retriedPosts += batch.count;
        await pause(100);
      } finally {
        gate.leave();
      }
    }
  }
}

/** Applies each fault at its time; the IRC outage runs alongside the rest. */
async function runFaults(faults: TimedFault[], t0: number, gate: PostGate, counts: { socketsCut: number }, issued: FaultCounts): Promise<void> {
  const link = adminLink!;
  const outages: Promise<void>[] = [];
  for (const { atMs, fault } of faults) {
    if (t0 + atMs > Date.now()) await pause(t0 + atMs - Date.now());
    issued[fault.kind] += 1;
    switch (fault.kind) {
      case 'drop-sockets':
        counts.socketsCut += (await link.call('faults/drop-sockets', fault.chat ? { chat: fault.chat, group: 'demo' } : {})).dropped;
        break;
      case 'refuse-upgrades':
        await link.call('faults/refuse-upgrades', { seconds: fault.seconds });
        break;
      case 'rate-limit-burst':
        await link.call('faults/errors', { count: fault.count, type: 'rate_limit', scope: fault.scope, retry_after: 1 });
        break;
      case 'expire-sessions':
        await link.call('faults/expire-sessions', {});
        break;
      case 'service-restart':
        await gate.close();
        try {
          await link.call('restart', {});
          await link.renew();
        } finally {
          gate.open();
        }
        break;
      case 'irc-kill':
        outages.push(ircOutage(fault.downMs));
        break;
    }
  }
  await Promise.all(outages);
  // The fault period is over: what is left of a 429 burst (upgrades are rare) ends with it.
  await link.call('faults/clear', {});
}

/**
 * The IRC server killed while the relay has lines in flight (sent, not yet confirmed), down a while,
 * then back with a password the relay does not have until the watcher has rejoined, so the watcher
 * sees everything the relay sends after the outage.
 */
async function ircOutage(downMs: number): Promise<void> {
  const inFlight = () => (env!.supervisor!.stats().bot0!.plugins['relay-irc'] as Record<string, number>).in_flight_lines!;
  // Lines are in flight for about a round trip: look every turn of the event loop, for up to 2 s.
  const deadline = Date.now() + 2_000;
  while (inFlight() === 0 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
  await irc!.kill();
  await pause(downMs);
  await irc!.setPassword(IRC_PASSWORD);
  await irc!.start();
  await audience!.connect(IRC_PASSWORD);
  await irc!.setPassword(undefined);
}

/**
 * Waits until everything is through: every ping answered and the answer confirmed, then one last word
 * per chat, which must reach the end of the chain and of IRC (and brings the logger's read of the
 * bot's own last posts). Answers the plugins' stats at that point.
 */
async function drain(supervisor: Supervisor, pings: number) {
  const plugins = () => supervisor.stats().bot0!.plugins as Record<string, Record<string, number>>;
  const runners = supervisor.bots[0]!.runners;
  await waitFor('every !ping answered', () => plugins().responder!.answered! >= pings, 60_000);
  await waitFor('every answer confirmed', () => runners.every((r) => r.outbox.pending === 0), 30_000);
  const last: Record<string, number> = {};
  for (const chat of CHATS) last[chat] = (await adminLink!.post({ chat, who: 'alice', message: `the end of ${chat}`, count: 1 })).msg_num;
  await waitFor('the last words through the chain', () => runners.every((r) => r.sequencer.position === last[r.info.subject]), 30_000);
  await waitFor('the last words on IRC', () => CHATS.every((chat) => audience!.relayed(channelOf(chat), RELAY_NICK).at(-1) === `<Alice Owner> the end of ${chat}`), 30_000);
  await waitFor('the relay queues empty', () => plugins()['relay-irc']!.queued_lines === 0, 30_000);
  return { relayStats: plugins()['relay-irc']!, responderStats: plugins().responder! };
}

/** Every jsonl line of a chat's transcript files, in file (day) order. */
function transcript(dir: string): ChatMessage[] {
  return readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort()
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as ChatMessage));
}
