import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeSlack } from '../test/fakes/slack/index.js';
import { IrcServer } from '../test/helpers/irc-server.js';
import { RELAYED_SPACING_MS } from '../src/supervisor/chat-outbox.js';
import { buildOnce } from './lib/build.js';
import { member } from './lib/member.js';
import { RawIrc } from './lib/raw-irc.js';
import { report, type Figure } from './lib/report.js';
import { startServiceProcess } from './lib/service-process.js';
import { spread, type Spread } from './lib/stats.js';
import { Marks, type Point, type Times } from './gateway-latency/marks.js';
import { watchChat, watchIrc, watchSlack } from './gateway-latency/observers.js';
import { IRC_CHANNEL, REPLY_RATE, startGroupwire, type Setup, type Sides } from './gateway-latency/setups.js';
import { chatSource, ircSource, saySteadily, untilFlowing, type Source } from './gateway-latency/traffic.js';
import { IRC_IRC_RATES, IrcToIrcResults, linesAt, SETTLE_MS, startIrcToIrc } from './gateway-latency/irc-to-irc.js';
import type { Running } from './lib/child.js';

/**
 * Gateway latency (issue #14): lines said on IRC at 100 a second, through one bot whose chat general
 * is in a gateway with an ngircd channel and a channel of the fake Slack, timed per hop:
 *
 * - IRC → chat: the talker's PRIVMSG written → a chat member's socket reads the bot's post of it;
 * - IRC → Slack: the talker's PRIVMSG written → the fake Slack recorded the bot's chat.postMessage
 *   (the gateway's intake hands the line to relay-slack at once, beside its post into the chat);
 * - chat → Slack: a chat member's line (a second turn of the same gateway, `gateway-chat`), from a
 *   member's socket reading it → the fake Slack recorded chat.postMessage;
 * - IRC → IRC (issue #32): lines said on one ngircd, through a gateway of two relay-irc and the chat, to
 *   a second ngircd, at 10 and 100 lines a second, with lost, doubled and out-of-order lines counted
 *   (bench/gateway-latency/irc-to-irc.ts).
 *
 * Baselines in the same run, each hop through its relay alone: relay-irc alone (IRC → chat, the same
 * talker), and relay-slack alone (a second member posts in the chat; chat → Slack from the moment the
 * first member's socket reads it); for IRC → IRC, a bare relay from one server to the other that
 * confirms nothing. Every end is watched in this process, so each sample is read from
 * one clock; groupwire, the service and ngircd each run in a process of their own. The setups take
 * turns in rounds (the order rotates each round), each warmed up before it is measured.
 *
 * GATEWAY_LATENCY_LINES=200 (measured lines per setup, default 1,000; half that at 10 a second) makes a quick run;
 * GATEWAY_LATENCY_DUMP=<file> appends every measured line's times to that file (JSON lines), to see
 * where in a run the slow ones fall.
 */

const PER_SECOND = 100;
const MEASURED = Number(process.env.GATEWAY_LATENCY_LINES ?? 1000);
const ROUNDS = 2;
const PER_ROUND = Math.ceil(MEASURED / ROUNDS);
const WARMUP = Math.min(200, PER_ROUND);
/**
 * The limit of a gateway hop's p99: twice the bare relay's, plus 5 ms for one stall of this shared
 * machine. No hop measured here waits for the read that confirms the bot's post (RELAYED_SPACING_MS
 * apart at the closest): a chat member's line goes on when the bot reads it, an IRC line from the intake.
 */
const LIMIT = { factor: 2, plusMs: 5, confirmMs: RELAYED_SPACING_MS };

type Hop = 'irc-chat' | 'chat-slack' | 'irc-slack';
type Path = 'gateway' | 'bare';

const HOPS: Record<Hop, { label: string; from: Point; to: Point }> = {
  'irc-chat': { label: 'IRC → chat', from: 'sent', to: 'chat' },
  'chat-slack': { label: 'chat → Slack', from: 'chat', to: 'slack' },
  'irc-slack': { label: 'IRC → Slack', from: 'sent', to: 'slack' },
};

/** What each setup is measured for: where its lines are said, where they must arrive, and which hops they time. */
const MEASURES: Record<Setup, { path: Path; from: 'irc' | 'chat'; until: Point[]; hops: Hop[] }> = {
  gateway: { path: 'gateway', from: 'irc', until: ['chat', 'slack'], hops: ['irc-chat', 'irc-slack'] },
  'gateway-chat': { path: 'gateway', from: 'chat', until: ['chat', 'slack'], hops: ['chat-slack'] },
  'bare-irc': { path: 'bare', from: 'irc', until: ['chat'], hops: ['irc-chat'] },
  'bare-slack': { path: 'bare', from: 'chat', until: ['chat', 'slack'], hops: ['chat-slack'] },
};
const SETUPS: Setup[] = ['gateway', 'gateway-chat', 'bare-irc', 'bare-slack'];
const CODE: Record<Setup, string> = { gateway: 'g', 'gateway-chat': 'c', 'bare-irc': 'i', 'bare-slack': 's' };

/** One setup's turn in a round: how it starts, where its lines go, at what rate, and what is done with them. */
interface Turn {
  name: string;
  code: string;
  rate: number;
  perRound: number;
  from: 'irc' | 'chat';
  until: Point[];
  settleMs: number;
  start(run: string): Running | Promise<Running>;
  take(lines: Times[], tag: string, round: number): void;
}

interface Measured {
  latencies: number[];
  lost: number;
}

function hopOf(lines: readonly Times[], hop: Hop): Measured {
  const { from, to } = HOPS[hop];
  const latencies: number[] = [];
  for (const times of lines) if (times[from] !== undefined && times[to] !== undefined) latencies.push(times[to]! - times[from]!);
  return { latencies, lost: lines.length - latencies.length };
}

function row(label: string, path: string, s: Spread, lost: number): Array<string | number> {
  // Doubled and out of order are counted for IRC → IRC only (irc-to-irc.ts).
  return [label, path, s.count, s.p50, s.p99, s.max, s.mean, lost, '–', '–'];
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const service = await startServiceProcess();
  const irc = await IrcServer.start();
  const ircB = await IrcServer.start();
  const slack = await FakeSlack.start();
  const sides: Sides = { service, irc, slack };
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-gateway-latency-'));
  const marks = new Marks();
  watchSlack(slack, marks);
  // bob watches the chat; carol speaks in it for the bare Slack relay; the talker speaks on IRC.
  const bob = await member(service, 'bob@example.com', 'bob-demo');
  const carol = await member(service, 'carol@example.com', 'carol-demo');
  const watcher = await bob.client.openChatSocket({ chatsubId: bob.chatsubId, noHistory: true });
  watchChat(watcher, marks);
  const speaker = await carol.client.openChatSocket({ chatsubId: carol.chatsubId, noHistory: true });
  const talker = await RawIrc.connect(irc.port, 'talker', IRC_CHANNEL);
  const watcherB = await RawIrc.connect(ircB.port, 'watcher', IRC_CHANNEL);
  watchIrc(watcherB, marks);
  const sources: Record<'irc' | 'chat', Source> = { irc: ircSource(talker, IRC_CHANNEL), chat: chatSource(speaker) };

  const all = new Map<string, Measured>();
  const add = (hop: Hop, path: Path, measured: Measured) => {
    const sum = all.get(`${hop} ${path}`) ?? { latencies: [], lost: 0 };
    sum.latencies.push(...measured.latencies);
    sum.lost += measured.lost;
    all.set(`${hop} ${path}`, sum);
  };
  const rounds: Array<Array<string | number>> = [];
  const ircToIrc = new IrcToIrcResults();
  const turns: Turn[] = [
    ...SETUPS.map((setup): Turn => ({
      name: setup, code: CODE[setup], rate: PER_SECOND, perRound: PER_ROUND, from: MEASURES[setup].from, until: MEASURES[setup].until, settleMs: 0,
      start: (run) => startGroupwire(setup, sides, dir, run),
      take: (lines, _tag, round) => {
        for (const hop of MEASURES[setup].hops) {
          const measured = hopOf(lines, hop);
          add(hop, MEASURES[setup].path, measured);
          const s = spread(measured.latencies);
          rounds.push(row(`round ${round + 1}: ${HOPS[hop].label}`, setup, s, measured.lost));
          process.stderr.write(`round ${round + 1} ${setup} ${HOPS[hop].label}: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, lost ${measured.lost}\n`);
        }
      },
    })),
    ...IRC_IRC_RATES.flatMap((rate) => (['gateway', 'bare'] as const).map((path): Turn => ({
      name: `irc-irc-${path}-${rate}`, code: `${path === 'gateway' ? 'x' : 'b'}${rate}`, rate, perRound: Math.ceil(linesAt(rate, MEASURED) / ROUNDS), from: 'irc',
      until: path === 'gateway' ? ['chat', 'irc'] : ['irc'], settleMs: SETTLE_MS,
      start: (run) => startIrcToIrc(path, { service, irc, ircB }, dir, run),
      take: (lines, tag, round) => {
        rounds.push(...ircToIrc.record(path, rate, round, lines, marks.arrivals(tag, 'irc')));
        marks.forget(tag);
      },
    }))),
  ];
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = turns.map((_, i) => turns[(i + round) % turns.length]!);
      for (const turn of order) {
        const { code, rate, perRound, from, until, settleMs } = turn;
        const run = `${round}${code}`;
        const running = await turn.start(run);
        try {
          await untilFlowing(sources[from], marks, `p${run}`, until.at(-1)!);
          // Warm-up at the turn's own rate, 10 s of it at most (a slow rate would otherwise warm up for 20 s).
          await saySteadily(sources[from], marks, `w${run}`, Math.min(WARMUP, rate * 10), rate, until);
          const lines = await saySteadily(sources[from], marks, `m${run}`, perRound, rate, until, 15_000, settleMs);
          const dump = process.env.GATEWAY_LATENCY_DUMP;
          if (dump) appendFileSync(dump, lines.map((times, n) => `${JSON.stringify({ run: turn.name, round, n, ...times })}\n`).join(''));
          turn.take(lines, `m${run}`, round);
        } finally {
          await running.stop();
        }
      }
    }
  } finally {
    watcher.close();
    speaker.close();
    talker.close();
    watcherB.close();
    await bob.client.close();
    await carol.client.close();
    await slack.close();
    await irc.close();
    await ircB.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const result = (hop: Hop, path: Path) => all.get(`${hop} ${path}`) ?? { latencies: [], lost: 0 };
  const s = (hop: Hop, path: Path) => spread(result(hop, path).latencies);
  const bareLabel: Record<Exclude<Hop, 'irc-slack'>, string> = { 'irc-chat': 'relay-irc alone', 'chat-slack': 'relay-slack alone' };
  const figures: Figure[] = [];
  for (const hop of ['irc-chat', 'chat-slack'] as const) {
    const gw = s(hop, 'gateway');
    const bare = s(hop, 'bare');
    const meaning = `of ${bareLabel[hop]}'s (lower is better)`;
    const limit = LIMIT.factor * bare.p99 + LIMIT.plusMs;
    figures.push(
      { label: `gateway ${HOPS[hop].label} p50`, value: gw.p50, unit: 'ms', baseline: { label: `${bareLabel[hop]} p50`, value: bare.p50 }, ratio: gw.p50 / bare.p50, ratioMeaning: meaning },
      {
        label: `gateway ${HOPS[hop].label} p99`, value: gw.p99, unit: 'ms', baseline: { label: `${bareLabel[hop]} p99`, value: bare.p99 }, ratio: gw.p99 / bare.p99, ratioMeaning: meaning,
        limit: { text: `≤ ${LIMIT.factor}× the bare p99 + ${LIMIT.plusMs} ms = ${limit.toFixed(1)} ms`, ok: gw.p99 <= limit },
      },
    );
  }
  // End to end against the two bare hops one after the other (the sum of their quantiles: a reference, not a measured path).
  const e2e = s('irc-slack', 'gateway');
  const sum = (q: 'p50' | 'p99') => s('irc-chat', 'bare')[q] + s('chat-slack', 'bare')[q];
  const e2eLimit = LIMIT.factor * sum('p99') + LIMIT.plusMs;
  const e2eMeaning = 'of the two bare hops added up (lower is better)';
  figures.push(
    { label: 'gateway IRC → Slack p50', value: e2e.p50, unit: 'ms', baseline: { label: 'bare p50s added', value: sum('p50') }, ratio: e2e.p50 / sum('p50'), ratioMeaning: e2eMeaning },
    {
      label: 'gateway IRC → Slack p99', value: e2e.p99, unit: 'ms', baseline: { label: 'bare p99s added', value: sum('p99') }, ratio: e2e.p99 / sum('p99'), ratioMeaning: e2eMeaning,
      limit: { text: `≤ ${LIMIT.factor}× the bare p99s added + ${LIMIT.plusMs} ms = ${e2eLimit.toFixed(1)} ms`, ok: e2e.p99 <= e2eLimit },
    },
  );

  const lostInGateway = (['irc-chat', 'chat-slack', 'irc-slack'] as const).reduce((n, hop) => n + result(hop, 'gateway').lost, 0);
  const lostBare = result('irc-chat', 'bare').lost + result('chat-slack', 'bare').lost;
  report({
    name: 'gateway-latency',
    title: `Gateway latency: ${MEASURED} lines said on IRC, and as many in the chat, at ${PER_SECOND}/s through a gateway IRC ⇄ chat ⇄ Slack, per hop against each relay alone; IRC → IRC through a gateway of two ngircd and the chat at 10 and 100/s against a bare relay (ms)`,
    table: {
      columns: ['hop', 'path', 'lines', 'p50 ms', 'p99 ms', 'max ms', 'mean ms', 'lost', 'doubled', 'out of order'],
      rows: [
        row('IRC → chat', 'gateway', s('irc-chat', 'gateway'), result('irc-chat', 'gateway').lost),
        row('IRC → chat', 'relay-irc alone', s('irc-chat', 'bare'), result('irc-chat', 'bare').lost),
        row('chat → Slack', 'gateway', s('chat-slack', 'gateway'), result('chat-slack', 'gateway').lost),
        row('chat → Slack', 'relay-slack alone', s('chat-slack', 'bare'), result('chat-slack', 'bare').lost),
        row('IRC → Slack', 'gateway', e2e, result('irc-slack', 'gateway').lost),
        ...ircToIrc.rows(),
        ...rounds,
      ],
    },
    figures: [...figures, ...ircToIrc.figures()],
    notes: [
      `One bot, chat general in a named gateway with an ngircd channel and the fake Slack's C0GENERAL1; the baselines are the same bot with relay-irc alone and with relay-slack alone (their own channels: pairs). Each setup in a groupwire process of its own (the tsc build), ${ROUNDS} rounds of ${PER_ROUND} measured lines each after ${WARMUP} warm-up lines, the order rotated each round; the gateway runs twice a round, once with lines said on IRC and once with lines said by a chat member.`,
      'IRC → chat: from just before the talker\'s PRIVMSG is written to a chat member\'s socket reading the bot\'s post. IRC → Slack: from the same moment to the fake Slack recording chat.postMessage (the intake hands the line to relay-slack beside its post into the chat). chat → Slack: a chat member says the line; from another member\'s socket reading it to the fake Slack recording chat.postMessage, in the gateway and with relay-slack alone. One clock: every end is in the bench process.',
      `reply_rate is ${REPLY_RATE.per_second}/s (burst ${REPLY_RATE.burst}) in every setup: at the default 5/s a channel speaking 100 lines a second falls further behind every second.`,
      'relay-irc runs with rate: off (ngircd\'s penalties are off); relay-slack with its defaults, against the fake Slack on loopback (no rate limits).',
      `The limit: a gateway hop does what its relay alone does plus the gateway's bookkeeping (the message map), with both relays' traffic on one event loop; twice the bare p99 allows for that, and ${LIMIT.plusMs} ms absorbs a single stall of this shared machine, which alone would double a p99 of a few ms. No hop here waits for the read of the chat's history that confirms the bot's post (reads of a chat are ${LIMIT.confirmMs} ms apart at the closest): lines between relays go from the gateway's intake straight to the other relay (docs/gateways.md); only lines of another bot, or of a gateway with through_chat: true, still go on from the chat.`,
      `Load average (1 min) ${loadBefore.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end on ${cpus().length} cores: the tails (p99, max) move with whatever else runs on this shared machine, the baselines' as much as the gateway's.`,
      ...(lostInGateway + lostBare > 0 ? [`LOST: ${lostInGateway} hop samples through the gateway, ${lostBare} through the relays alone (not seen within 15 s)`] : []),
      ...ircToIrc.notes(ROUNDS),
    ],
  });
  // A line that never arrived (or came twice, or out of order) is a bug, not a slow figure.
  if (lostInGateway + ircToIrc.brokenInGateway() > 0) process.exitCode = 1;
}

buildOnce();
await main();
