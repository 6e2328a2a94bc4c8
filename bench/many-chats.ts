import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { GroupsClient } from '../src/api/client.js';
import type { Chat } from '../src/api/types.js';
import { BUILD, buildOnce } from './lib/build.js';
import type { Figure } from './lib/report.js';
import { report } from './lib/report.js';
import { startServiceProcess, type ServiceProcess } from './lib/service-process.js';
import { runChild, type Phase, type SocketJob, type SocketResult } from './many-chats/job.js';

/**
 * Many chats: one bot subscribed to 1,000 and then 10,000 chats, in one supervisor process, against
 * the local service in a process of its own. Time until every socket is open, resident memory per
 * socket, and time until all are open again after the service drops every socket at once; the
 * service counts the upgrades its rate limit refused and the REST calls it received. The baseline is
 * bare `ws` clients opening the same sockets as fast as the upgrade limit allows.
 */
/** MANY_CHATS_SIZES=500,2000 and MANY_CHATS_PHASE_TIMEOUT_S=300 measure other sizes and cut-offs (while working on it). */
const SIZES = process.env.MANY_CHATS_SIZES?.split(',').map(Number) ?? [1_000, 10_000];
/** The service's limits for the run (see the notes): REST per caller, and chat socket upgrades per caller. */
const REST_LIMIT = { perSecond: 1_000, burst: 2_000 };
const UPGRADE_LIMIT = { perSecond: 400, burst: 800 };
const PHASE_TIMEOUT_MS = Number(process.env.MANY_CHATS_PHASE_TIMEOUT_S ?? 60) * 1000;
const GROUP = 'many';
const BOT = { email: 'bot@many.example', password: 'bot-many-pass' };
const OWNER = 'owner@many.example';
/** Every tenth chat has a few messages (the rest are empty, as most chats of a big group are). */
const TALKATIVE_EVERY = 10;

function seedFor(chats: number): unknown {
  return {
    users: [
      { email: OWNER, password: 'owner-many-pass', full_name: 'Chat Owner' },
      { email: BOT.email, password: BOT.password, full_name: 'Many Chats Bot' },
    ],
    groups: [{
      name: GROUP,
      members: [{ email: OWNER, role: 'owner' }, { email: BOT.email, role: 'member' }],
      chats: Array.from({ length: chats }, (_, i) => ({
        subject: `chat-${i}`, owner: OWNER, members: [BOT.email],
        history: i % TALKATIVE_EVERY === 0 ? [1, 2, 3].map((n) => ({ from: OWNER, message: `message ${n} of chat ${i}` })) : [],
      })),
    }],
  };
}

async function chatsubIds(service: ServiceProcess, token: string): Promise<string[]> {
  const client = new GroupsClient({ baseUrl: service.baseUrl, ca: service.ca, credentials: { token, scheme: 'bearer' } });
  const ids: string[] = [];
  for await (const chat of client.paginate<Chat>('getchats', { group_name: GROUP, limit: 100 })) {
    if (chat.chat_sub) ids.push(chat.chat_sub.id);
  }
  await client.close();
  return ids;
}

interface SizeResult {
  chats: number;
  baseline: SocketResult;
  groupwire: SocketResult;
}

async function measure(chats: number): Promise<SizeResult> {
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-many-'));
  try {
    writeFileSync(join(dir, 'seed.yaml'), stringify(seedFor(chats)));
    const service = await startServiceProcess({
      args: ['--seed', join(dir, 'seed.yaml'), '--rate-limit', `${REST_LIMIT.perSecond}/${REST_LIMIT.burst}`,
        '--upgrade-rate-limit', `${UPGRADE_LIMIT.perSecond}/${UPGRADE_LIMIT.burst}`],
    });
    try {
      const session = await service.admin('tokens', { user: BOT.email });
      const base: SocketJob = {
        chats, baseUrl: service.baseUrl, ca: service.ca, caFile: service.caFile, adminToken: service.adminToken, group: GROUP,
        upgrades: UPGRADE_LIMIT, phaseTimeoutMs: PHASE_TIMEOUT_MS,
      };
      const ids = await chatsubIds(service, session.token);
      if (ids.length !== chats) throw new Error(`the bot has ${ids.length} chat_subs, expected ${chats}`);
      const baseline = await runChild('./bare-sockets.ts', { ...base, token: session.token, csrf: session.csrf, chatsubIds: ids });
      await waitForNoSockets(service);
      const groupwireDir = join(dir, 'groupwire');
      mkdirSync(groupwireDir);
      const groupwire = await runChild('./supervisor-sockets.ts', { ...base, login: BOT, dir: groupwireDir, build: BUILD });
      return { chats, baseline, groupwire };
    } finally {
      await service.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function waitForNoSockets(service: ServiceProcess): Promise<void> {
  for (let i = 0; i < 200 && (await service.stats()).open_sockets > 0; i += 1) await new Promise((r) => setTimeout(r, 50));
}

buildOnce();
const results: SizeResult[] = [];
for (const chats of SIZES) {
  process.stdout.write(`many-chats: ${chats} chats...\n`);
  results.push(await measure(chats));
}

const seconds = (phase: Phase | undefined) => (phase?.ms === undefined ? `cut off (${phase?.open ?? 0} open)` : phase.ms / 1000);
const kb = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : bytes / 1024);
const rows: Array<Array<string | number>> = [];
for (const { chats, baseline, groupwire } of results) {
  for (const [who, r] of [['bare ws', baseline], ['groupwire', groupwire]] as const) {
    rows.push([
      chats, who, seconds(r.open), r.open.service.refusedUpgrades, (r.firstStart ?? r.open.service).apiCalls, kb(r.rssBytesPerSocket),
      kb(r.heapBytesPerSocket?.heap), r.socketFds ?? 'n/a',
      seconds(r.reopen), r.reopen?.service.refusedUpgrades ?? 'n/a', (r.reopen?.service.apiCalls ?? 0) + (r.afterReopen?.apiCalls ?? 0),
    ]);
  }
}

const figures: Figure[] = [];
for (const { chats, baseline, groupwire } of results) {
  const n = chats.toLocaleString('en-US');
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? Number.NaN : a / b);
  figures.push({
    label: `${n} chats: time until all open`, value: (groupwire.open.ms ?? Number.NaN) / 1000, unit: 's',
    baseline: { label: 'bare ws', value: (baseline.open.ms ?? Number.NaN) / 1000 },
    ratio: ratio(groupwire.open.ms, baseline.open.ms), ratioMeaning: 'of the bare clients\' time (lower is better)',
  });
  const perSocket = groupwire.rssBytesPerSocket;
  figures.push({
    label: `${n} chats: resident memory per socket`, value: kb(perSocket) as number, unit: 'KB',
    baseline: { label: 'bare ws', value: kb(baseline.rssBytesPerSocket) as number },
    ratio: ratio(perSocket, baseline.rssBytesPerSocket), ratioMeaning: 'of the bare clients\' memory (lower is better)',
    limit: { text: 'at most 64 KB per socket', ok: perSocket !== undefined && perSocket <= 64 * 1024 },
  });
  figures.push({
    label: `${n} chats: time until all open again after a mass drop`, value: (groupwire.reopen?.ms ?? Number.NaN) / 1000, unit: 's',
    baseline: { label: 'bare ws', value: (baseline.reopen?.ms ?? Number.NaN) / 1000 },
    ratio: ratio(groupwire.reopen?.ms, baseline.reopen?.ms), ratioMeaning: 'of the bare clients\' time (lower is better)',
  });
}

// The operations endpoint with every chat open: a Prometheus scrape and a status push, against the
// supervisor's stats() as JSON (what there was before the endpoint). Prometheus's default scrape timeout is 10 s.
for (const { chats, groupwire } of results) {
  const ops = groupwire.ops;
  if (!ops) continue;
  const n = chats.toLocaleString('en-US');
  figures.push({
    label: `${n} chats: a /metrics scrape`, value: ops.scrapeMs, unit: 'ms',
    baseline: { label: 'stats() as JSON', value: ops.statsMs }, ratio: ops.scrapeMs / ops.statsMs,
    ratioMeaning: 'of the time of stats() as JSON (lower is better)',
    limit: { text: 'under 1 s (a tenth of Prometheus\'s default scrape timeout)', ok: ops.scrapeMs < 1_000 },
  });
  figures.push({
    label: `${n} chats: a status snapshot as JSON (each /status/events push)`, value: ops.snapshotMs, unit: 'ms',
    baseline: { label: 'stats() as JSON', value: ops.statsMs }, ratio: ops.snapshotMs / ops.statsMs,
    ratioMeaning: 'of the time of stats() as JSON (lower is better)',
    limit: { text: 'under 250 ms (a quarter of the page\'s 1 s push interval)', ok: ops.snapshotMs < 250 },
  });
}

// What one more socket costs, from the two sizes: the per-process part (V8's young generation grown to its
// default 2 x 16 MB, warmed TLS and ws code) weighs on 1,000 sockets and hardly on 10,000.
const small = results.find((r) => r.chats === 1_000);
const large = results.find((r) => r.chats === 10_000);
const marginal = (pick: (r: SizeResult) => number | undefined) => {
  const a = small && pick(small);
  const b = large && pick(large);
  return a === undefined || b === undefined ? undefined : (b * 10_000 - a * 1_000) / 9_000;
};
const marginalGroupwire = marginal((r) => r.groupwire.rssBytesPerSocket);
const marginalBaseline = marginal((r) => r.baseline.rssBytesPerSocket);
if (marginalGroupwire !== undefined && marginalBaseline !== undefined) {
  figures.push({
    label: 'resident memory of each socket beyond the first 1,000 (from the two sizes)', value: marginalGroupwire / 1024, unit: 'KB',
    baseline: { label: 'bare ws', value: marginalBaseline / 1024 }, ratio: marginalGroupwire / marginalBaseline,
    ratioMeaning: 'of the bare clients\' memory (lower is better)',
    limit: { text: 'at most 64 KB per socket', ok: marginalGroupwire <= 64 * 1024 },
  });
}

const detail = results.map(({ chats, groupwire: g, baseline: b }) =>
  `${chats} chats: groupwire's first start (no cursors) made ${(g.firstStart ?? g.open.service).apiCalls} REST calls ` +
  `(${(g.firstStart ?? g.open.service).chatListCalls} getchats, ${(g.firstStart ?? g.open.service).historyCalls} getchathistory) ` +
  `until every chat had its position, ${g.open.service.apiCalls} of them until all were open; every chat had its position at ` +
  `${g.caughtUpMs === undefined ? 'n/a' : (g.caughtUpMs / 1000).toFixed(1)} s; after the mass drop ` +
  `${(g.reopen?.service.apiCalls ?? 0) + (g.afterReopen?.apiCalls ?? 0)} REST calls; ${g.logLines ?? 0} log lines at info; ` +
  `the upgrade gate cut its pace ${g.gate?.afterOpen.cuts ?? 0} times while opening (pace then ${g.gate?.afterOpen.pace.toFixed(0)}/s) and ` +
  `${(g.gate?.afterReopen?.cuts ?? 0) - (g.gate?.afterOpen.cuts ?? 0)} times while reopening (pace then ${g.gate?.afterReopen?.pace.toFixed(0) ?? 'n/a'}/s). ` +
  `Bare ws received ${b.frames ?? 0} history frames on its first open.` +
  (g.ops ? ` The operations endpoint: a /metrics scrape ${(g.ops.scrapeBytes / 1e6).toFixed(1)} MB, a status snapshot ${(g.ops.snapshotBytes / 1e6).toFixed(1)} MB, stats() ${(g.ops.statsBytes / 1e6).toFixed(1)} MB as JSON.` : ''));

report({
  name: 'many-chats',
  title: 'Many chats: one supervisor process holding 1,000 and 10,000 chat sockets',
  table: {
    columns: ['chats', 'client', 'all open (s)', 'refused upgrades', 'first start REST calls', 'RSS/socket (KB)', 'JS heap/socket (KB)', 'socket fds',
      'open again after drop (s)',
      'refused again', 'REST calls again'],
    rows,
  },
  figures,
  notes: [
    `The local service runs in its own process with REST ${REST_LIMIT.perSecond}/s (burst ${REST_LIMIT.burst}) and chat socket ` +
      `upgrades ${UPGRADE_LIMIT.perSecond}/s (burst ${UPGRADE_LIMIT.burst}) per caller. The upgrade limit stays on: its refusals ` +
      'are counted. It is raised from the default 20/s (burst 50) so 10,000 sockets open in seconds, not eight minutes; the REST ' +
      'limit is raised as it was when a first start read each chat\'s position by getchathistory (it now takes it from the ' +
      'history frames its socket sends on connect, and the REST calls of a first start are the group\'s listing and the login).',
    'Each client runs in a fresh node process (so the RSS delta is its own): bare ws clients (Bearer token, one shared TLS ' +
      'context, paced by a token bucket at the service\'s upgrade limit, refused upgrades retried after Retry-After), then a ' +
      'Supervisor with one bot listing every chat in bots.yaml, no plugins, logging at info to a file.',
    `RSS per socket: the process's resident memory after all sockets are open (and, for groupwire, every chat's first catch-up ` +
      'is done) minus before starting, after three gc() calls, divided by the number of chats. About 30 MB of it is the ' +
      'process\'s, not the sockets\' (V8\'s young generation grows to its default 2 x 16 MB; TLS and ws code warm up): it weighs ' +
      'on 1,000 sockets (where the bare clients too are over 64 KB) and hardly on 10,000; the figure "beyond the first 1,000" ' +
      'takes it out. Of the rest, some 35 KB a socket is native TLS state (OpenSSL buffers), the same for both clients.',
    'groupwire runs from a tsc build of this checkout (dist/bench-build), as the package does: run through tsx, each of its ' +
      'closures would carry a `name` property (esbuild\'s keepNames), some 4 KB more per chat.',
    `Every ${TALKATIVE_EVERY}th chat holds three messages; the others are empty. Phases are cut off after ${PHASE_TIMEOUT_MS / 1000} s.`,
    ...detail,
  ],
});
