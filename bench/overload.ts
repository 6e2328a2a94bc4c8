import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOnce } from './lib/build.js';
import { report, type Figure } from './lib/report.js';
import { spread } from './lib/stats.js';
import { backlogAt, peakFiles, phaseFigures, Sampler, shownBetween, type Phase } from './overload/sampler.js';
import { startBot, type Bot } from './soak/bot.js';
import { IRC_CHANNEL, startSides, type Sides } from './soak/sides.js';
import { hopLatencies, Tally } from './soak/tally.js';
import { drain, lastShowing, speak, untilFlowing, type Stream } from './soak/traffic.js';

/**
 * Overload (#32, "Measure"): lines in at twice the rate the slowest side takes them, then quiet. The
 * bot (`groupwire run`, the soak's set-up: chat general in a gateway with ngircd's channel and the
 * HTTP API, the logger, the responder) has relay-irc paced at OVERLOAD_RATE lines a second (default
 * 10) and its posts into the chat paced (reply_rate) at the same: both ways have a slow side. A member
 * says 2 × OVERLOAD_RATE lines a second in the chat (1 in 50 a `!pingn`) and a raw IRC client as
 * many on IRC, for OVERLOAD_MINUTES (default 5), after CALM_SECONDS at half the rate (the baseline);
 * then nothing is said until every line has arrived (or nothing more arrives for a minute).
 *
 * Measured: the event-loop lag p99 (each /metrics scrape's, every OVERLOAD_SAMPLE_SECONDS), /metrics
 * and /healthz answer times, the peak RSS and heap, the outbox and queue depths and the state files'
 * sizes at their peak, the rate each slow side sustained, the time the backlog took to drain after the
 * overload against the time it needs at that rate, and the lines lost and doubled.
 */
const RATE = Number(process.env.OVERLOAD_RATE ?? 10);
const MINUTES = Number(process.env.OVERLOAD_MINUTES ?? 5);
const SAMPLE_SECONDS = Number(process.env.OVERLOAD_SAMPLE_SECONDS ?? 2);
const CALM_SECONDS = 30;
/** The drain is given three times the overload's length and two minutes more before it is cut off; it stops sooner when nothing arrives for a minute. */
const DRAIN_MAX_MS = (3 * MINUTES + 2) * 60_000;
const STALL_MS = 60_000;
const PLAN = { ircRate: { lines_per_second: RATE, burst: 4 }, replyRate: { per_second: RATE, burst: 10 } };
const streams = (perSecond: number): Stream[] => [{ origin: 'c', perSecond, pingEvery: 50 }, { origin: 'i', perSecond }];

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-overload-'));
  const tally = new Tally();
  let sides: Sides | undefined;
  let bot: Bot | undefined;
  let sampler: Sampler | undefined;
  let stopped: { ms: number; killed: boolean } | undefined;
  const times: Record<Phase | 'end', number> = { calm: 0, overload: 0, quiet: 0, end: 0 };
  let drained: Awaited<ReturnType<typeof drain>>;
  let logged: ReturnType<Bot['logSummary']> = [];
  try {
    sides = await startSides(tally);
    bot = await startBot(dir, sides, PLAN);
    await sides.readStream(bot.httpUrl);
    await untilFlowing(sides, tally, 'q', 'chat');
    await untilFlowing(sides, tally, 'p', 'irc');
    const running = sampler = new Sampler(bot, SAMPLE_SECONDS);
    const phase = async (name: Phase, perSecond: number, seconds: number) => {
      times[name] = performance.now();
      running.phase = name;
      process.stderr.write(`overload: ${name}, ${perSecond * 2} lines/s for ${seconds} s\n`);
      const failed = new AbortController();
      const watch = setInterval(() => running.failure !== undefined && failed.abort(), 500);
      try {
        await speak(sides!, streams(perSecond), seconds, failed.signal);
      } finally {
        clearInterval(watch);
      }
      if (running.failure !== undefined) throw running.failure;
    };
    await phase('calm', RATE / 2, CALM_SECONDS);
    await phase('overload', 2 * RATE, MINUTES * 60);
    times.quiet = performance.now();
    running.phase = 'quiet';
    process.stderr.write(`overload: quiet, ${tally.missing()} showings outstanding\n`);
    let shown = 0;
    drained = await drain(tally, STALL_MS, DRAIN_MAX_MS, async () => {
      await new Promise((r) => setTimeout(r, 500));
      if (running.failure !== undefined) throw running.failure;
      if ((shown += 1) % 20 === 0) process.stderr.write(`  quiet ${((performance.now() - times.quiet) / 1000).toFixed(0)} s: ${tally.missing()} outstanding, RSS ${running.samples.at(-1)?.sample.rssMB.toFixed(1)} MB\n`);
    });
    times.end = performance.now();
    await new Promise((r) => setTimeout(r, 2 * SAMPLE_SECONDS * 1000)); // a last sample or two of the quiet bot
  } finally {
    await sampler?.stop();
    stopped = await bot?.stop();
    // Read before the directory (the log's too) goes: read after, it always said "no warnings or errors".
    logged = bot?.logSummary() ?? [];
    await sides?.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const calm = phaseFigures(sampler!.of('calm'));
  const over = phaseFigures(sampler!.of('overload'));
  const quiet = phaseFigures(sampler!.of('quiet'));
  const seconds = (from: number, to: number) => (to - from) / 1000;
  const sustained = (origin: 'c' | 'i', point: 'irc' | 'chat') => shownBetween(tally, origin, point, times.overload, times.quiet) / seconds(times.overload, times.quiet);
  const ways = [
    { label: 'IRC → chat', origin: 'i', point: 'chat', slow: `the bot's posts (reply_rate ${RATE}/s)` },
    { label: 'chat → IRC', origin: 'c', point: 'irc', slow: `relay-irc (rate ${RATE}/s)` },
  ] as const;
  const perWay = ways.map((way) => {
    const rate = sustained(way.origin, way.point);
    const backlog = backlogAt(tally, way.origin, way.point, times.quiet);
    const last = lastShowing(tally, way.origin, way.point);
    const drainS = last !== undefined && last > times.quiet ? seconds(times.quiet, last) : 0;
    return { ...way, rate, backlog, drainS, idealS: backlog / rate };
  });
  const phaseRow = (name: string, f: ReturnType<typeof phaseFigures>, from: number, to: number, said: number) => [
    name, seconds(from, to), said, f.lagP99MedianMs, f.lagP99PeakMs, f.lagMaxMs, f.rssPeakMB, f.heapPeakMB, f.scrapeSlowestMs, f.scrapesFailed, f.healthzSlowestMs,
    f.outboxPeak, f.toIrcPeak, f.stateKBPeak, f.diskWrittenMB,
    shownBetween(tally, 'i', 'chat', from, to) / seconds(from, to), shownBetween(tally, 'c', 'irc', from, to) / seconds(from, to),
  ];
  const lines = tally.counting();
  const saidIn = (from: number, to: number) => lines.filter((l) => l.sent >= from && l.sent < to).length;
  const { lost, doubled, lostTotal, doubledTotal } = tally.account();
  const files = peakFiles(sampler!.samples);
  const ratioOf = (value: number, base: number) => value / base;
  const figures: Figure[] = [
    {
      label: 'overload: event-loop lag p99 (worst scrape)', value: over.lagP99PeakMs, unit: 'ms', baseline: { label: 'the calm phase\'s worst', value: calm.lagP99PeakMs },
      ratio: ratioOf(over.lagP99PeakMs, calm.lagP99PeakMs), ratioMeaning: 'of the calm phase (lower is better)',
    },
    {
      label: 'overload: peak RSS (overload and drain)', value: Math.max(over.rssPeakMB, quiet.rssPeakMB), unit: 'MB', baseline: { label: 'the calm phase\'s peak', value: calm.rssPeakMB },
      ratio: ratioOf(Math.max(over.rssPeakMB, quiet.rssPeakMB), calm.rssPeakMB), ratioMeaning: 'of the calm phase (lower is better)',
    },
    {
      label: 'overload: slowest /metrics', value: over.scrapeSlowestMs, unit: 'ms', baseline: { label: 'the calm phase\'s slowest', value: calm.scrapeSlowestMs },
      ratio: ratioOf(over.scrapeSlowestMs, calm.scrapeSlowestMs), ratioMeaning: 'of the calm phase (lower is better)',
    },
    ...perWay.map((way): Figure => ({
      label: `overload: ${way.label} backlog drained`, value: way.drainS, unit: 's', baseline: { label: `${way.backlog} lines at the ${way.rate.toFixed(1)}/s it sustained`, value: way.idealS },
      ratio: way.drainS / way.idealS, ratioMeaning: 'of the time the backlog needs at the rate sustained under overload (lower is better)',
    })),
  ];
  report({
    name: 'overload',
    title: `Overload: ${4 * RATE} lines a second for ${MINUTES} min into a gateway whose slow sides take ${RATE} a second each way, then quiet until drained`,
    table: {
      columns: ['phase', 's', 'lines said', 'loop lag p99 ms (median)', 'loop lag p99 ms (worst)', 'loop lag max ms', 'peak RSS MB', 'peak heap MB', 'slowest /metrics ms', '/metrics failed', 'slowest /healthz ms',
        'peak outbox', 'peak to_irc', 'peak state KB', 'disk MB written', 'IRC → chat /s', 'chat → IRC /s'],
      rows: [
        phaseRow(`calm (${RATE} lines/s)`, calm, times.calm, times.overload, saidIn(times.calm, times.overload)),
        phaseRow(`overload (${4 * RATE} lines/s)`, over, times.overload, times.quiet, saidIn(times.overload, times.quiet)),
        phaseRow('quiet (drain)', quiet, times.quiet, times.end, 0),
      ],
    },
    figures,
    notes: [
      `One \`groupwire run\` (the tsc build), set up as in the soak bench: chat general in a gateway with ngircd's ${IRC_CHANNEL} (relay-irc, rate ${RATE}/s, burst ${PLAN.ircRate.burst}) and the HTTP API's channel ops (its event stream read throughout), the logger, the responder; reply_rate ${RATE}/s (burst ${PLAN.replyRate.burst}). A member says ${2 * RATE} lines a second in the chat (1 in 50 a \`!pingn\`) and a raw IRC client ${2 * RATE}: twice what each way's slow side takes. Calm: ${CALM_SECONDS} s at half the slow sides' rate.`,
      `A sample every ${SAMPLE_SECONDS} s: /healthz answer time, VmRSS from /proc, heap used and the event-loop lag p99 and max since the previous scrape from /metrics (prom-client's histogram is reset on each scrape), the outbox depth and relay-irc's to_irc queue from /metrics, every state file's size; disk MB written: write_bytes of /proc/<pid>/io from the phase's first sample to its last (state, transcripts, log).`,
      ...perWay.map((way) => `${way.label} (slow side: ${way.slow}): ${way.rate.toFixed(1)} lines/s shown during the overload; ${way.backlog} lines behind when it ended; the last shown ${way.drainS.toFixed(0)} s into the quiet.`),
      `Drain: ${drained!.complete ? 'everything arrived' : drained!.stalled ? `nothing more arrived for ${STALL_MS / 1000} s` : `cut off after ${DRAIN_MAX_MS / 60_000} min`}, ${(drained!.waitedMs / 1000).toFixed(0)} s after the overload. Lost ${lostTotal}${lostTotal ? ` (${JSON.stringify(lost)})` : ''}, doubled ${doubledTotal}${doubledTotal ? ` (${JSON.stringify(doubled)})` : ''} of ${tally.said} lines. !pingn answered: ${spread(hopLatencies(lines, 'ping')).count} of ${lines.filter((l) => l.ping).length}, p99 ${(spread(hopLatencies(lines, 'ping')).p99 / 1000).toFixed(1)} s.`,
      `State files at their peak (KB): ${files.slice(0, 8).map((f) => `${f.file} ${f.peakKB.toFixed(1)}`).join('; ')}.`,
      `SIGTERM to exit after the drain: ${(stopped!.ms / 1000).toFixed(2)} s${stopped!.killed ? ' (killed after 30 s)' : ''}. The bot's log: ${logged.length === 0 ? 'no warnings or errors' : logged.slice(0, 5).map((l) => `${l.count} × ${l.level} "${l.msg}"`).join('; ')}.`,
      `Load average (1 min) ${loadBefore.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end on ${cpus().length} cores.`,
    ],
  });
  if (lostTotal + doubledTotal > 0) process.exitCode = 1;
}

buildOnce();
await main();
