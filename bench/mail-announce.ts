import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildOnce } from './lib/build.js';
import { report, type Figure } from './lib/report.js';
import { startServiceProcess, type ServiceProcess } from './lib/service-process.js';
import { spread, type Spread } from './lib/stats.js';
import { perHour, quietWindow, type CallCount } from './mail-announce/quiet.js';
import { prepare, setupOf, startBare, startSupervisor, watchChats, type Setup } from './mail-announce/setups.js';
import { seededRandom } from '../test/helpers/chaos.js';
import { TopicMarks } from './mail-announce/topics.js';

/**
 * The group-mail bench (issue #19), two measures against baselines taken in the same run.
 * 1. Announcement delay: TOPICS topics made in the demo group's archive (the admin `topics` route, as
 *    alice and carol), spaced at random 0.5–3 s (seeded), from just before each is made to bob's
 *    socket reading its announcement in the chat. Four setups watch the same topics at once, each
 *    announcing into a chat of its own: group-mail at its default poll options (2 s, 60 s) and at
 *    { min: 500ms, max: 60s }, two bots of one groupwire process; and the bare poller at a fixed 2 s
 *    and 500 ms, in one process of their own (bench/mail-announce/bare-poller.ts).
 * 2. REST calls when the group is quiet: group-mail after a burst of topics, its pause grown to poll.max,
 *    counted by the service over a window; against the bare poller at poll.min, counted the same way.
 *    poll.max is scaled down to QUIET_MAX_MS so the steady pause comes within the bench's time.
 * MAIL_ANNOUNCE_TOPICS=20 makes a quick run.
 */

const TOPICS = Number(process.env.MAIL_ANNOUNCE_TOPICS ?? 60);
const GAP_MS = { min: 500, max: 3_000 };
/** group-mail's defaults (plugins/group-mail/options.ts). */
const DEFAULT_POLL = { min: 2_000, max: 60_000 };
const FAST_MIN = 500;
/** poll.max of the quiet measure, a tenth of the default: the calls it counts are scaled by QUIET_MAX_MS / 60 s. */
const QUIET_MAX_MS = 6_000;
/** After the burst's last topic was told: pauses of 2 and 4 s, then every pause is 6 s; a margin on top. */
const QUIET_SETTLE_MS = 15_000;
const QUIET_WINDOW_S = 60;
const BARE_WINDOW_S = 30;
const BURST = 5;

interface Row {
  setup: Setup;
  label: string;
  delays: Spread;
  lost: number;
}

/** Measure 1: every setup at once, on the same topics. */
async function announceDelays(service: ServiceProcess, marks: TopicMarks, setups: Setup[], dir: string): Promise<Row[]> {
  const gateways = setups.filter((setup) => setup.kind === 'gateway');
  const supervisor = startSupervisor(service, gateways, dir, 'announce');
  const bare = await startBare(service, setups.filter((setup) => setup.kind === 'bare'));
  try {
    await marks.untilFlowing(setups, 'probe');
    const random = seededRandom(19);
    for (let n = 0; n < TOPICS; n += 1) {
      await marks.post('topic', n);
      if ((n + 1) % 20 === 0) process.stderr.write(`${n + 1} of ${TOPICS} topics made\n`);
      await sleep(GAP_MS.min + random() * (GAP_MS.max - GAP_MS.min));
    }
    // The slowest setup polls every 4 s at most while topics come (its pause doubles from 2 s once).
    await marks.untilShown(setups, 'topic', TOPICS, 30_000);
  } finally {
    await supervisor.stop();
    await bare.stop();
  }
  return setups.map((setup) => {
    const { delays, lost } = marks.delays(setup, 'topic', TOPICS);
    const s = spread(delays);
    process.stderr.write(`${setup.key}: p50 ${s.p50.toFixed(0)} ms, p99 ${s.p99.toFixed(0)} ms, lost ${lost}\n`);
    return { setup, label: label(setup), delays: s, lost };
  });
}

/** Measure 2: group-mail (poll 2 s – QUIET_MAX_MS) alone after a burst, then the bare poller at 2 s alone. */
async function quietCalls(service: ServiceProcess, marks: TopicMarks, gateway: Setup, bare: Setup, dir: string): Promise<{ gateway: CallCount; bare: CallCount }> {
  const quiet: Setup = { ...gateway, poll: { min: DEFAULT_POLL.min, max: QUIET_MAX_MS } };
  const gatewayCount = await quietWindow(service, async () => startSupervisor(service, [quiet], dir, 'quiet'), async () => {
    await marks.untilFlowing([quiet], 'qprobe');
    for (let n = 0; n < BURST; n += 1) await marks.post('burst', n);
    await marks.untilShown([quiet], 'burst', BURST, 30_000);
    if (marks.shown(quiet, 'burst', BURST) < BURST) throw new Error('the burst before the quiet window was not announced');
    await sleep(QUIET_SETTLE_MS);
  }, QUIET_WINDOW_S);
  process.stderr.write(`quiet group-mail: ${gatewayCount.getmessages} getmessages, ${gatewayCount.all} calls in ${gatewayCount.seconds.toFixed(1)} s\n`);
  // The bare poller's first call (its position) is made before it says ready: the window holds only its schedule.
  const bareCount = await quietWindow(service, () => startBare(service, [bare]), () => sleep(1_000), BARE_WINDOW_S);
  process.stderr.write(`quiet bare poller: ${bareCount.getmessages} getmessages, ${bareCount.all} calls in ${bareCount.seconds.toFixed(1)} s\n`);
  return { gateway: gatewayCount, bare: bareCount };
}

/** Which topic the p99 is, by bench/lib/stats.ts's nearest rank: with few topics it is the slowest. */
const p99Rank = (count: number) => {
  const fromTop = count - Math.ceil(0.99 * count);
  return fromTop === 0 ? 'the slowest topic' : `the slowest but ${fromTop}`;
};
const seconds = (ms: number) => `${ms / 1000} s`;
const label = (setup: Setup) => setup.kind === 'gateway'
  ? `group-mail, poll ${seconds(setup.poll.min)}–${seconds(setup.poll.max)}`
  : `bare poller every ${seconds(setup.poll.min)}`;

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const started = performance.now();
  const service = await startServiceProcess();
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-mail-announce-'));
  const setups = [
    setupOf('gateway', DEFAULT_POLL.min, DEFAULT_POLL.max), setupOf('gateway', FAST_MIN, DEFAULT_POLL.max),
    setupOf('bare', DEFAULT_POLL.min, DEFAULT_POLL.min), setupOf('bare', FAST_MIN, FAST_MIN),
  ];
  const [gatewayDefault, gatewayFast, bareDefault, bareFast] = setups as [Setup, Setup, Setup, Setup];
  let rows: Row[];
  let calls: { gateway: CallCount; bare: CallCount };
  try {
    await prepare(service, setups);
    const marks = new TopicMarks(service);
    const watcher = await watchChats(service, setups, (setup, tag, n, at) => marks.seen(setup, tag, n, at));
    try {
      rows = await announceDelays(service, marks, setups, dir);
      calls = await quietCalls(service, marks, gatewayDefault, bareDefault, dir);
    } finally {
      await watcher.close();
    }
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const rowOf = (setup: Setup) => rows.find((row) => row.setup === setup)!;
  const figures: Figure[] = [];
  for (const [gateway, bare] of [[gatewayDefault, bareDefault], [gatewayFast, bareFast]] as const) {
    const gw = rowOf(gateway);
    const base = rowOf(bare);
    const meaning = `of the bare poller's every ${seconds(bare.poll.min)} (lower is better)`;
    for (const q of ['p50', 'p99'] as const) {
      figures.push({
        label: `announcement delay, ${gw.label}, ${q}`, value: gw.delays[q], unit: 'ms',
        baseline: { label: `${base.label} ${q}`, value: base.delays[q] }, ratio: gw.delays[q] / base.delays[q], ratioMeaning: meaning,
      });
    }
  }
  const scale = QUIET_MAX_MS / DEFAULT_POLL.max;
  const gatewayPerHour = perHour(calls.gateway.getmessages, calls.gateway.seconds) * scale;
  const barePerHour = perHour(calls.bare.getmessages, calls.bare.seconds);
  figures.push({
    label: `getmessages calls an hour, quiet group, group-mail at poll ${seconds(DEFAULT_POLL.min)}–${seconds(DEFAULT_POLL.max)} (measured at ${seconds(QUIET_MAX_MS)} max, scaled ×${scale})`,
    value: gatewayPerHour, unit: 'calls/h',
    baseline: { label: `fixed-interval poller every ${seconds(DEFAULT_POLL.min)}`, value: barePerHour },
    ratio: gatewayPerHour / barePerHour, ratioMeaning: 'of the fixed-interval poller\'s calls (lower is better)',
  });

  const dash = '–';
  const table = [
    ...rows.map((row) => [row.label, row.delays.count, row.delays.p50, row.delays.p99, row.delays.max, row.delays.mean, row.lost, dash, dash]),
    [`quiet: group-mail, poll ${seconds(DEFAULT_POLL.min)}–${seconds(QUIET_MAX_MS)}`, dash, dash, dash, dash, dash, dash,
      `${calls.gateway.getmessages} (${calls.gateway.all}) in ${calls.gateway.seconds.toFixed(0)} s`,
      perHour(calls.gateway.getmessages, calls.gateway.seconds)],
    [`quiet: the same scaled to max ${seconds(DEFAULT_POLL.max)} (×${scale})`, dash, dash, dash, dash, dash, dash, dash, gatewayPerHour],
    [`quiet: bare poller every ${seconds(DEFAULT_POLL.min)}`, dash, dash, dash, dash, dash, dash,
      `${calls.bare.getmessages} (${calls.bare.all}) in ${calls.bare.seconds.toFixed(0)} s`, barePerHour],
  ];
  const lost = rows.reduce((sum, row) => sum + (row.setup.kind === 'gateway' ? row.lost : 0), 0);
  report({
    name: 'mail-announce',
    title: `Group mail: ${TOPICS} new topics announced in the chat by group-mail against a bare poller (ms), and REST calls an hour when the group is quiet`,
    table: {
      columns: ['setup', 'topics', 'p50 ms', 'p99 ms', 'max ms', 'mean ms', 'lost', 'quiet getmessages (all calls)', 'getmessages/h'],
      rows: table,
    },
    figures,
    notes: [
      `Announcement delay: from just before the admin \`topics\` call that makes a topic (as alice or carol) to bob's chat socket reading the announcement. ${TOPICS} topics spaced at random ${seconds(GAP_MS.min)}–${seconds(GAP_MS.max)} (seeded), watched at once by the four setups, each announcing into a chat of its own: group-mail in one groupwire process (the tsc build; two bots), the bare pollers in one process of their own (a GroupsClient calling getmessages on a fixed schedule and posting each new topic through the chat socket at once: no durable cursor, no gateway, no queue). With ${TOPICS} topics the p99 (nearest rank) is ${p99Rank(TOPICS)}.`,
      `group-mail polls again ${seconds(DEFAULT_POLL.min)} (or 500 ms) after a read that found something, and doubles the pause after each read that found nothing: with topics at most ${seconds(GAP_MS.max)} apart its pause is 2 or 4 s (0.5 to 4 s), so it waits up to twice the bare poller's interval after a gap.`,
      `Quiet group: group-mail with poll ${seconds(DEFAULT_POLL.min)}–${seconds(QUIET_MAX_MS)} alone against the service after a burst of ${BURST} topics (told), ${seconds(QUIET_SETTLE_MS)} to reach its longest pause, then the service's own count (\`/_admin/stats\` api_calls) over ${QUIET_WINDOW_S} s; its calls an hour are scaled by ${seconds(QUIET_MAX_MS)} / ${seconds(DEFAULT_POLL.max)} to stand for the default poll.max (the pause is capped at max whatever it is, so a read every max is the steady state either way). The baseline: the bare poller every ${seconds(DEFAULT_POLL.min)} alone over ${BARE_WINDOW_S} s. "all calls" counts every operation the service took in the window.`,
      `Load average (1 min) ${loadBefore.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end on ${cpus().length} cores; the bench took ${((performance.now() - started) / 1000).toFixed(0)} s.`,
      ...(lost > 0 ? [`LOST: ${lost} topics never announced by group-mail within 30 s of the last`] : []),
    ],
  });
  if (lost > 0) process.exitCode = 1;
}

buildOnce();
await main();
