import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildOnce } from './lib/build.js';
import { sampleProcess } from './lib/process-probe.js';
import { report, type Figure } from './lib/report.js';
import { spread } from './lib/stats.js';
import { startBot, type Bot } from './soak/bot.js';
import { fileGrowth, GAUGES, hopCell, per10kRatio, ratioCell, type Gauge, type Taken } from './soak/growth.js';
import { IRC_CHANNEL, startSides, type Sides } from './soak/sides.js';
import { Tally, hopLatencies, HOPS, type Hop, type Line } from './soak/tally.js';
import { drain, speak, untilFlowing, type Stream } from './soak/traffic.js';

/**
 * Soak (#32, "Measure"): 40 lines a second for SOAK_MINUTES (default 10) through one `groupwire run`
 * whose chat general is in a gateway with an ngircd channel (relay-irc) and the HTTP API's channel,
 * with the logger and the responder: 20 a second said in the chat by a member (1 in 50 a `!pingn`),
 * 18 on IRC by a raw client, 2 POSTed to the HTTP API; the API's event stream is read throughout.
 * Every SOAK_SAMPLE_SECONDS (default 10) the process's RSS, heap, event-loop lag (its /metrics), open
 * fds and every file's size under its state and transcript dirs are read. Printed per 10,000 lines
 * said: each figure as a ratio to the first sample after the warm-up, with the hop latencies of the
 * lines said in between; at the end, each figure's growth per 10,000 lines (a least-squares fit over
 * every sample after the warm-up), and the lines lost and doubled once everything drained.
 */
const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const SAMPLE_SECONDS = Number(process.env.SOAK_SAMPLE_SECONDS ?? 10);
const WARMUP_SECONDS = Math.min(60, MINUTES * 15);
const STREAMS: Stream[] = [{ origin: 'c', perSecond: 20, pingEvery: 50 }, { origin: 'i', perSecond: 18 }, { origin: 'h', perSecond: 2 }];
const PER_SECOND = STREAMS.reduce((sum, s) => sum + s.perSecond, 0);
/** As in the issue's soak: the bot's posts and relay-irc's lines each paced at 50 a second, above what the bench offers each way. */
const PLAN = { ircRate: { lines_per_second: 50, burst: 50 }, replyRate: { per_second: 50, burst: 50 } };
const GAUGE_ORDER: Gauge[] = ['rss', 'heap', 'fds', 'state', 'transcripts', 'lag'];

function row(label: string, t: Taken, base: Taken, lines: readonly Line[], from: number, startedAt: number, previous?: Taken): Array<string | number> {
  const cells: Array<string | number> = [label, t.said, (t.sample.at - startedAt) / 60_000];
  for (const gauge of GAUGE_ORDER) {
    const of = GAUGES[gauge].of;
    cells.push(of(t.sample), ratioCell(of(t.sample), of(base.sample)));
  }
  cells.push(hopCell(lines, 'irc-chat', from, t.said), hopCell(lines, 'chat-irc', from, t.said));
  // Disk writes per line since the row before: a state file rewritten whole per line shows as a figure growing with the run.
  cells.push(previous && t.said > previous.said ? ((t.sample.diskWrittenMB - previous.sample.diskWrittenMB) * 1024) / (t.said - previous.said) : '-');
  return cells;
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-soak-'));
  const tally = new Tally();
  let sides: Sides | undefined;
  let bot: Bot | undefined;
  let stopped: { ms: number; killed: boolean } | undefined;
  const taken: Taken[] = [];
  let drained: Awaited<ReturnType<typeof drain>>;
  let startedAt = 0;
  let warmupEnd = 0;
  let trafficEnd = 0;
  try {
    sides = await startSides(tally);
    bot = await startBot(dir, sides, PLAN);
    await sides.readStream(bot.httpUrl);
    await untilFlowing(sides, tally, 'q', 'chat');
    await untilFlowing(sides, tally, 'p', 'irc');
    const running = bot;
    const sample = async () => {
      if (running.ended()) throw new Error('groupwire run ended during the soak');
      taken.push({ sample: await sampleProcess(running.pid, running.opsUrl, running.stateDir, running.transcriptDir), said: tally.said });
    };
    startedAt = performance.now();
    warmupEnd = startedAt + WARMUP_SECONDS * 1000;
    process.stderr.write(`soak: ${PER_SECOND} lines/s for ${MINUTES} min (warm-up ${WARMUP_SECONDS} s), a sample every ${SAMPLE_SECONDS} s\n`);
    const talking = new AbortController();
    let failure: unknown;
    const sampling = (async () => {
      let next = startedAt + SAMPLE_SECONDS * 1000;
      while (!talking.signal.aborted) {
        await sleep(Math.max(0, next - performance.now()));
        next += SAMPLE_SECONDS * 1000;
        if (talking.signal.aborted) break;
        try {
          await sample();
        } catch (error) {
          failure = error;
          talking.abort();
          break;
        }
        const s = taken.at(-1)!;
        process.stderr.write(`  ${((s.sample.at - startedAt) / 60_000).toFixed(1)} min, ${s.said} lines: RSS ${s.sample.rssMB.toFixed(1)} MB, heap ${s.sample.heapUsedMB.toFixed(1)} MB, ` +
          `fds ${s.sample.fds}, lag p99 ${s.sample.lagP99Ms.toFixed(1)} ms, outbox ${s.sample.outboxDepth}, /metrics ${s.sample.scrapeMs.toFixed(0)} ms, missing ${tally.missing()}\n`);
      }
    })();
    try {
      await speak(sides, STREAMS, MINUTES * 60, talking.signal);
    } finally {
      talking.abort();
      await sampling;
    }
    if (failure) throw failure;
    trafficEnd = performance.now();
    await sample();
    drained = await drain(tally, 30_000, 5 * 60_000);
    await sample();
  } finally {
    stopped = await bot?.stop();
    await sides?.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const after = taken.filter((t) => t.sample.at >= warmupEnd && t.sample.at <= trafficEnd + 1);
  const base = after[0] ?? taken[0]!;
  const lines = tally.counting();
  const rows: Array<Array<string | number>> = [row('first after warm-up', base, base, lines, 0, startedAt)];
  let previous = base;
  for (let k = 10_000; k <= tally.said; k += 10_000) {
    const at = after.find((t) => t.said >= k);
    if (!at || at === previous) continue;
    rows.push(row(`${(k / 1000).toFixed(0)},000 lines`, at, base, lines, previous.said, startedAt, previous));
    previous = at;
  }
  const end = after.at(-1)!;
  rows.push(row('traffic over', end, base, lines, previous.said, startedAt, previous));
  rows.push(row(`drained (${(drained.waitedMs / 1000).toFixed(0)} s later)`, taken.at(-1)!, base, lines, 0, startedAt));
  const fit = ['growth per 10,000 lines (fit)', 10_000, '-'];
  // The lag is read per scrape and does not accumulate: it has no growth to fit.
  for (const gauge of GAUGE_ORDER) fit.push('-', gauge !== 'lag' && Number.isFinite(per10kRatio(after, gauge)) ? `${per10kRatio(after, gauge).toFixed(2)}x` : '-');
  rows.push([...fit, '-', '-', '-']);

  const { lost, doubled, lostTotal, doubledTotal } = tally.account();
  const hopsBase = (hop: Hop) => spread(hopLatencies(lines.filter((l) => l.seq > base.said && l.seq <= base.said + PER_SECOND * 60), hop));
  const hopsEnd = (hop: Hop) => spread(hopLatencies(lines.filter((l) => l.seq > Math.max(base.said, end.said - PER_SECOND * 60) && l.seq <= end.said), hop));
  const figures: Figure[] = GAUGE_ORDER.filter((g) => g !== 'lag').map((gauge) => {
    const { label, unit, of } = GAUGES[gauge];
    const ratio = per10kRatio(after, gauge);
    return {
      label: `soak: ${label} 10,000 lines on (fit)`, value: of(base.sample) * ratio, unit, baseline: { label: 'the first sample after warm-up', value: of(base.sample) },
      ratio, ratioMeaning: 'of the first sample after warm-up (1 = flat)',
    };
  });
  for (const hop of ['irc-chat', 'chat-irc'] as const) {
    figures.push({
      label: `soak: ${HOPS[hop].label} p99, last minute`, value: hopsEnd(hop).p99, unit: 'ms', baseline: { label: 'its p99 in the first minute after warm-up', value: hopsBase(hop).p99 },
      ratio: hopsEnd(hop).p99 / hopsBase(hop).p99, ratioMeaning: 'of the first minute (lower is better)',
    });
  }
  const logged = bot!.logSummary();
  const files = fileGrowth(base, end);
  const failures = [...sides!.postFailures].map(([why, n]) => `${n} × ${why}`).join(', ');
  report({
    name: 'soak',
    title: `Soak: ${PER_SECOND} lines a second for ${MINUTES} min through a gateway chat ⇄ IRC ⇄ HTTP API, with the logger and the responder (growth as a ratio to the first sample after warm-up)`,
    table: {
      columns: ['when', 'lines said', 'min', 'RSS MB', 'x', 'heap used MB', 'x', 'fds', 'x', 'state KB', 'x', 'transcripts KB', 'x', 'loop lag p99 ms', 'x', 'IRC → chat p50 / p99 ms', 'chat → IRC p50 / p99 ms', 'disk KB written per line'],
      rows,
    },
    figures,
    notes: [
      `One \`groupwire run\` (the tsc build): chat general in a gateway with ngircd's ${IRC_CHANNEL} (relay-irc, rate ${PLAN.ircRate.lines_per_second}/s burst ${PLAN.ircRate.burst}) and the HTTP API's channel ops; the logger (jsonl) and the responder (\`!pingn <text>\` answered); reply_rate ${PLAN.replyRate.per_second}/s. Lines a second: ${STREAMS.map((s) => `${s.perSecond} ${{ c: 'said in the chat by a member', i: 'on IRC by a raw client', h: 'POSTed to the HTTP API' }[s.origin]}`).join(', ')}; 1 in 50 chat lines is a \`!pingn\`. The API's event stream is read throughout.`,
      `A sample every ${SAMPLE_SECONDS} s after a ${WARMUP_SECONDS} s warm-up: VmRSS and open fds from /proc, heap used and event-loop lag p99 (since the previous scrape) from the bot's /metrics, every file's size under the state and transcript dirs. A row per 10,000 lines said; "growth per 10,000 lines" is a least-squares fit over every sample after the warm-up, as a ratio to the first. Hop latencies of the lines said since the row before: IRC → chat from the talker's PRIVMSG to a member's socket reading the bot's post; chat → IRC from that socket reading a member's line to an IRC client reading the bot's PRIVMSG. Disk KB written per line: write_bytes of /proc/<pid>/io since the row before over the lines said since (state, transcripts and log together).`,
      `Lost ${lostTotal}${lostTotal ? ` (${JSON.stringify(lost)})` : ''}, doubled ${doubledTotal}${doubledTotal ? ` (${JSON.stringify(doubled)})` : ''} of ${tally.said} lines (every side a line should reach, each !pingn's answer), after waiting ${(drained.waitedMs / 1000).toFixed(0)} s ${drained.complete ? 'until all had arrived' : drained.stalled ? '(nothing more arrived for 30 s)' : '(5 min at most)'}.${failures ? ` POSTs refused or failed: ${failures}.` : ''}`,
      `!pingn answered: ${spread(hopLatencies(lines, 'ping')).count} of ${lines.filter((l) => l.ping).length}, p50 ${spread(hopLatencies(lines, 'ping')).p50.toFixed(1)} ms, p99 ${spread(hopLatencies(lines, 'ping')).p99.toFixed(1)} ms.`,
      `Files growing fastest (KB at the first sample → at the end, KB per 10,000 lines): ${files.slice(0, 8).map((f) => `${f.file} ${f.firstKB.toFixed(1)} → ${f.lastKB.toFixed(1)} (${f.per10kKB.toFixed(1)})`).join('; ')}.`,
      `/metrics scrapes: slowest ${Math.max(...taken.map((t) => t.sample.scrapeMs)).toFixed(0)} ms, ${taken.filter((t) => t.sample.scrapeFailed).length} without an answer. SIGTERM to exit: ${(stopped!.ms / 1000).toFixed(2)} s${stopped!.killed ? ' (killed after 30 s)' : ''}.`,
      `The bot's log: ${logged.length === 0 ? 'no warnings or errors' : logged.slice(0, 5).map((l) => `${l.count} × ${l.level} "${l.msg}"`).join('; ')}.`,
      `Load average (1 min) ${loadBefore.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end on ${cpus().length} cores.`,
    ],
  });
  if (lostTotal + doubledTotal > 0) process.exitCode = 1;
}

buildOnce();
await main();
