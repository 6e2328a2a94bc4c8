import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { stringify } from 'yaml';
import type * as BotsConfig from '../../src/config/bots-config.js';
import type * as Logging from '../../src/supervisor/logging.js';
import type * as SupervisorModule from '../../src/supervisor/supervisor.js';
import type * as Metrics from '../../src/ops/metrics.js';
import type * as RecentErrorsModule from '../../src/ops/recent-errors.js';
import type * as Snapshot from '../../src/ops/status-snapshot.js';
import { importBuilt } from '../lib/build.js';
import { rssBytes, settle } from '../lib/memory.js';
import { adminClient } from '../lib/service-process.js';
import { diffCounts, heapPerSocket, receiveJob, socketFds, sendResult, timeUntil, type OpsCost, type Phase } from './job.js';

/**
 * groupwire: a Supervisor in this process with one bot in every chat of the group (bots.yaml in a
 * temp dir, no plugins), logging at info to a file as `groupwire run` would to stderr. It is loaded
 * from the tsc build the bench made (job.build), as the package runs: through tsx every closure would
 * carry a `name` property (esbuild's keepNames), 256 bytes each, some 4 KB per chat.
 */
const job = await receiveJob();
const { loadBotsConfig } = await importBuilt<typeof BotsConfig>('src/config/bots-config.js', job.build);
const { REDACTED_PATHS } = await importBuilt<typeof Logging>('src/supervisor/logging.js', job.build);
const { Supervisor } = await importBuilt<typeof SupervisorModule>('src/supervisor/supervisor.js', job.build);
const { createMetrics } = await importBuilt<typeof Metrics>('src/ops/metrics.js', job.build);
const { RecentErrors } = await importBuilt<typeof RecentErrorsModule>('src/ops/recent-errors.js', job.build);
const { takeSnapshot } = await importBuilt<typeof Snapshot>('src/ops/status-snapshot.js', job.build);
const service = adminClient(job);
const dir = job.dir!;
writeFileSync(join(dir, 'ca.pem'), job.ca);
writeFileSync(join(dir, 'bots.yaml'), stringify({
  // The gate's ceiling is the service's upgrade limit, as an operator who knows it would set it.
  service: { base_url: job.baseUrl, ca_file: './ca.pem', upgrade_rate: { per_second: job.upgrades.perSecond, burst: job.upgrades.burst } },
  state_dir: './state',
  bots: [{
    name: 'many',
    login: job.login,
    chats: Array.from({ length: job.chats }, (_, i) => ({ group: job.group, chat: `chat-${i}` })),
  }],
}));
const loaded = await loadBotsConfig(join(dir, 'bots.yaml'));
const logFile = join(dir, 'supervisor.log');
const log = pino({ level: 'info', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, pino.destination({ dest: logFile, sync: true }));

await settle();
const rssBefore = rssBytes();
const heapBefore = process.memoryUsage();
const statsBefore = await service.stats();
const startedAt = performance.now();
const supervisor = await Supervisor.start(loaded, { log });
const bot = supervisor.bots[0]!;
let allOpen = false;
void supervisor.connected().then(() => {
  allOpen = true;
});
const openMs = await timeUntil(() => allOpen, startedAt, job.phaseTimeoutMs, 50);
const openCount = () => bot.runners.filter((r) => r.connection.state === 'open').length;
const statsOpen = await service.stats();
const openPhase: Phase = { ms: openMs, open: openCount(), service: diffCounts(statsBefore, statsOpen) };
const gateAfterOpen = { ...supervisor.upgradeGate.stats, pace: supervisor.upgradeGate.pace };

let rssBytesPerSocket: number | undefined;
let heapBytesPerSocket: { heap: number; external: number } | undefined;
let fds: number | undefined;
let reopen: Phase | undefined;
let ops: OpsCost | undefined;
let caughtUpMs: number | undefined;
let firstStart = openPhase.service;
let afterReopen;
let gateAfterReopen;
if (openMs !== undefined) {
  // Each chat's first start takes its position from the history frames its socket sends; memory is read after.
  caughtUpMs = await timeUntil(() => bot.runners.every((r) => r.sequencer.position !== undefined), startedAt, job.phaseTimeoutMs, 50);
  firstStart = diffCounts(statsBefore, await service.stats());
  await settle();
  rssBytesPerSocket = (rssBytes() - rssBefore) / job.chats;
  fds = socketFds();
  heapBytesPerSocket = heapPerSocket(heapBefore, job.chats);
  ops = await opsCost();
  const statsBeforeDrop = await service.stats();
  const dropAt = performance.now();
  await service.admin('faults/drop-sockets', {});
  const reopenMs = await timeUntil(
    () => bot.runners.every((r) => r.connection.stats.opened >= 2 && r.connection.state === 'open'), dropAt, job.phaseTimeoutMs, 50,
  );
  const statsReopen = await service.stats();
  reopen = { ms: reopenMs, open: openCount(), service: diffCounts(statsBeforeDrop, statsReopen) };
  gateAfterReopen = { ...supervisor.upgradeGate.stats, pace: supervisor.upgradeGate.pace };
  await Promise.all(bot.runners.map((r) => r.sequencer.idle()));
  afterReopen = diffCounts(statsReopen, await service.stats());
}

await supervisor.stop(1_000);
await service.close();
const logLines = readFileSync(logFile, 'utf8').split('\n').length - 1;
sendResult({ ops, gate: { afterOpen: gateAfterOpen, afterReopen: gateAfterReopen }, open: openPhase, reopen, rssBytesPerSocket, heapBytesPerSocket, socketFds: fds, caughtUpMs, firstStart, afterReopen, logLines });

/** The operations endpoint's work with every chat open: a scrape, a snapshot, and the old stats() as the baseline. */
async function opsCost(): Promise<OpsCost> {
  const sources = {
    bots: () => supervisor.bots, version: 'bench', startedAt: Date.now(), errors: new RecentErrors(), eventLoopLagMs: () => 0, lastReload: () => undefined,
  };
  const metrics = createMetrics({ ...sources, gate: supervisor.upgradeGate, reloads: () => ({ applied: 0, refused: 0 }) });
  const median = async (work: () => string | Promise<string>) => {
    const times: number[] = [];
    let bytes = 0;
    for (let round = 0; round < 5; round += 1) {
      const at = performance.now();
      bytes = Buffer.byteLength(await work());
      times.push(performance.now() - at);
    }
    return { ms: times.toSorted((a, b) => a - b)[2]!, bytes };
  };
  const scrape = await median(() => metrics.scrape());
  const snapshot = await median(() => JSON.stringify(takeSnapshot(sources)));
  const stats = await median(() => JSON.stringify(supervisor.stats()));
  return { scrapeMs: scrape.ms, scrapeBytes: scrape.bytes, snapshotMs: snapshot.ms, snapshotBytes: snapshot.bytes, statsMs: stats.ms, statsBytes: stats.bytes };
}
