import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { IrcServer } from '../test/helpers/irc-server.js';
import { buildOnce } from './lib/build.js';
import { fileSizes, sampleProcess, totalBytes } from './lib/process-probe.js';
import { report, type Figure } from './lib/report.js';
import { startServiceProcess } from './lib/service-process.js';
import { measureMapMemory } from './restart/map-memory.js';
import { writeMonthOfState } from './restart/month-state.js';
import { startBot } from './soak/bot.js';
import { HTTP_CHANNEL, IRC_CHANNEL } from './soak/sides.js';

/**
 * Restart on a month of state (#32 part 4): RESTART_LINES (default 2,600,000: a month at one line a
 * second) go through the real stores into a state dir (bench/restart/month-state.ts: the gateway map,
 * the bot's cursor and outbox, relay-irc's queue and sent keys, the HTTP API's stream log, intake and
 * idempotency keys), then the soak's `groupwire run` (chat, relay-irc to ngircd, the HTTP API, the
 * logger and the responder) starts on a copy of it, and on an empty state dir, in turn, RESTART_ROUNDS
 * times (default 2): the time until /readyz answers 200 and the resident memory RESTART_IDLE_SECONDS
 * (default 30) after. Also the message map's heap per record at its default 20,000 records.
 */
const LINES = Number(process.env.RESTART_LINES ?? 2_600_000);
const ROUNDS = Number(process.env.RESTART_ROUNDS ?? 2);
const IDLE_SECONDS = Number(process.env.RESTART_IDLE_SECONDS ?? 30);
const PLAN = { ircRate: { lines_per_second: 50, burst: 50 }, replyRate: { per_second: 50, burst: 50 } };

interface Start {
  kind: 'fresh' | 'month';
  round: number;
  readyMs: number;
  rssMB: number;
  heapUsedMB: number;
  stateMB: number;
}

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

async function main(): Promise<void> {
  buildOnce();
  const root = mkdtempSync(join(tmpdir(), 'groupwire-restart-'));
  const mapMemory = measureMapMemory();
  const service = await startServiceProcess();
  const irc = await IrcServer.start();
  const starts: Start[] = [];
  let generatedMs = 0;
  let monthFiles = new Map<string, number>();
  try {
    const template = join(root, 'month', 'state');
    const began = performance.now();
    writeMonthOfState({ stateDir: template, bot: 'bridge', ircChannel: IRC_CHANNEL, httpChannel: HTTP_CHANNEL, lines: LINES }, (done) => {
      process.stdout.write(`  ${done.toLocaleString('en-US')} lines written (${((performance.now() - began) / 1000).toFixed(0)} s)\n`);
    });
    generatedMs = performance.now() - began;
    monthFiles = fileSizes(template);
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const kind of ['fresh', 'month'] as const) {
        const dir = join(root, `${kind}-${round}`);
        mkdirSync(dir, { recursive: true });
        if (kind === 'month') cpSync(template, join(dir, 'state'), { recursive: true });
        const stateMB = totalBytes(fileSizes(join(dir, 'state'))) / 1048576;
        const t0 = performance.now();
        const bot = await startBot(dir, { service, irc }, PLAN);
        const readyMs = performance.now() - t0;
        try {
          await sleep(IDLE_SECONDS * 1000);
          const sample = await sampleProcess(bot.pid, bot.opsUrl, bot.stateDir, bot.transcriptDir);
          starts.push({ kind, round, readyMs, rssMB: sample.rssMB, heapUsedMB: sample.heapUsedMB, stateMB });
          process.stdout.write(`  round ${round}, ${kind}: ready in ${(readyMs / 1000).toFixed(2)} s, RSS ${sample.rssMB.toFixed(1)} MB\n`);
        } finally {
          await bot.stop();
        }
      }
    }
  } finally {
    await irc.close();
    await service.stop();
    rmSync(root, { recursive: true, force: true });
  }
  const of = (kind: Start['kind'], field: 'readyMs' | 'rssMB') => mean(starts.filter((s) => s.kind === kind).map((s) => s[field]));
  const readyMonth = of('month', 'readyMs');
  const readyFresh = of('fresh', 'readyMs');
  const rssMonth = of('month', 'rssMB');
  const rssFresh = of('fresh', 'rssMB');
  const figures: Figure[] = [
    {
      label: 'restart on a month of state: ready', value: readyMonth / 1000, unit: 's', baseline: { label: 'a fresh start', value: readyFresh / 1000 },
      ratio: readyMonth / readyFresh, ratioMeaning: 'of a fresh start\'s time (lower is better)',
      limit: { text: 'ready within 5 s (#32)', ok: readyMonth <= 5_000 },
    },
    {
      label: 'restart on a month of state: idle RSS', value: rssMonth, unit: 'MB', baseline: { label: 'a fresh start', value: rssFresh },
      ratio: rssMonth / rssFresh, ratioMeaning: 'of a fresh start\'s RSS (lower is better)',
      limit: { text: 'within 1.2x a fresh start (#32)', ok: rssMonth / rssFresh <= 1.2 },
    },
  ];
  const largest = [...monthFiles].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([file, size]) => `${file} ${(size / 1048576).toFixed(2)} MB`);
  report({
    name: 'restart',
    title: `Restart on a month of state (${LINES.toLocaleString('en-US')} lines)`,
    table: {
      columns: ['start', 'round', 'state MB', 'ready s', `RSS MB after ${IDLE_SECONDS} s`, 'heap used MB'],
      rows: starts.map((s) => [s.kind === 'fresh' ? 'empty state dir' : 'a month of state', s.round, s.stateMB, s.readyMs / 1000, s.rssMB, s.heapUsedMB]),
    },
    figures,
    notes: [
      `the month's state: ${LINES.toLocaleString('en-US')} lines through the stores (every line through the gateway map, with two copies, dated over 30 days; the cursor; the outbox, added, sent and done; relay-irc's queue, pushed and shifted, and its sent keys; the HTTP API's stream log; 1 in 20 through the HTTP API's intake and idempotency keys), written in ${(generatedMs / 1000).toFixed(0)} s; ${(totalBytes(monthFiles) / 1048576).toFixed(1)} MB in all, the largest: ${largest.join(', ')}`,
      `the message map at its default 20,000 records (bench/restart/map-memory.ts: IRC, chat and Slack lines of 100 characters, each with two copies): ${mapMemory.writtenBytesPerRecord.toFixed(0)} bytes of memory a record as written (heap and typed arrays), ${mapMemory.openedBytesPerRecord.toFixed(0)} as opened from its file (${mapMemory.fileBytesPerRecord.toFixed(0)} bytes a record there); before #32 part 4: 1,045 and 1,158; before its older records went to disk alone (#32 part 2): 684 and 676`,
      'fresh and month starts alternate, each on its own copy of the state; the ready time is from spawning `groupwire run` (the tsc build) to /readyz answering 200, polled every 250 ms; figures are the means of the rounds',
      'transcripts (the logger\'s files) are not written: they are the user\'s record, read by nothing at start',
    ],
  });
}

await main();
