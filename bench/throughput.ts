import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { GroupsClient } from '../src/api/index.js';
import type * as BotsConfig from '../src/config/bots-config.js';
import type * as SupervisorModule from '../src/supervisor/supervisor.js';
import { buildOnce, importBuilt } from './lib/build.js';
import { ROOT } from './lib/paths.js';
import { report, type Figure } from './lib/report.js';
import { cpuMicros } from './lib/memory.js';
import { startFlood, type Flood } from './lib/feeder.js';
import { startServiceProcess, type ServiceProcess } from './lib/service-process.js';
import { countBoard } from './plugins/count.js';

/**
 * Throughput: N chat_messages streamed over one socket, through the supervisor and a chain of a
 * responder (no rule matches), the logger (jsonl into a temp dir) and a counting plugin, against a bare
 * `ws` client that only parses the same frames. Both read from the same service process, fed by a
 * thread of this process (lib/feeder.ts) that keeps the service ahead of the reader; the rate is taken
 * between the first and the last message reaching the end of the line. groupwire is loaded from a tsc
 * build, as the package runs it (lib/build.ts).
 */
const COUNT = Number(process.env.BENCH_THROUGHPUT_COUNT ?? 200_000);
const STYLES = (process.env.BENCH_THROUGHPUT_STYLES?.split(',') ?? ['numeric', 'big', 'opaque']) as Array<'numeric' | 'big' | 'opaque'>;
const TEXT = 'throughput message {n}: the quick brown fox jumps over the lazy dog';
const BOT = { email: 'bot@example.com', password: 'bot-demo' };

interface Rate {
  perSecond: number;
  seconds: number;
  /** CPU time of this process per message (user + system): steadier than the rate on a shared machine. */
  cpuMicros: number;
}

function rateOf(count: number, firstAt: number, lastAt: number, cpu: NodeJS.CpuUsage): Rate {
  const seconds = (lastAt - firstAt) / 1000;
  return { perSecond: (count - 1) / seconds, seconds, cpuMicros: (cpu.user + cpu.system) / count };
}

/** Messages per admin call, and the most posted but not yet taken by the reader under test. */
const CHUNK = 1_000;
const WINDOW = 8_000;

function floodOf(service: ServiceProcess): Promise<Flood> {
  return startFlood({
    baseUrl: service.baseUrl, ca: service.ca, adminToken: service.adminToken,
    post: { chat: 'general', group: 'demo', user: 'alice@example.com', message: TEXT },
    count: COUNT, chunk: CHUNK, window: WINDOW,
  });
}

async function bareClient(service: ServiceProcess): Promise<Rate> {
  const client = new GroupsClient({ baseUrl: service.baseUrl, ca: service.ca, credentials: BOT });
  try {
    const chats = await client.getChats({ group_name: 'demo', limit: 100 });
    const general = chats.data.find((chat) => chat.subject === 'general')!;
    const chatsubId = general.chat_sub?.id ?? (await client.joinChat({ chat_id: general.id })).id;
    const ws = await client.openChatSocket({ chatsubId, noHistory: true });
    const feed = await floodOf(service);
    let count = 0;
    let firstAt = 0;
    let lastAt = 0;
    const done = new Promise<void>((resolve) => {
      ws.on('message', (data) => {
        const frame = JSON.parse(data.toString()) as { msg_num?: number };
        if (typeof frame.msg_num !== 'number') return;
        lastAt = performance.now();
        if (count === 0) firstAt = lastAt;
        feed.taken[0] = ++count;
        if (count === COUNT) resolve();
      });
    });
    const cpu = process.cpuUsage();
    const serviceCpu = cpuMicros(service.pid);
    await feed.run();
    await done;
    const used = process.cpuUsage(cpu);
    process.stderr.write(`bare: service CPU ${((cpuMicros(service.pid) - serviceCpu) / COUNT).toFixed(1)} µs/msg\n`);
    ws.close();
    return rateOf(COUNT, firstAt, lastAt, used);
  } finally {
    await client.close();
  }
}

async function throughSupervisor(service: ServiceProcess): Promise<Rate & { heapMB: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-bench-'));
  writeFileSync(join(dir, 'ca.pem'), service.ca);
  writeFileSync(join(dir, 'bots.yaml'), stringify({
    service: { base_url: service.baseUrl, ca_file: './ca.pem' },
    state_dir: './state',
    bots: [{
      name: 'bench',
      login: BOT,
      chats: [{ group: 'demo', chat: 'general' }],
      plugins: [
        { use: 'responder', with: { builtins: false, rules: [{ keyword: 'xyzzy-never-said', reply: 'never' }] } },
        { use: 'logger', with: { dir: './transcripts', format: 'jsonl' } },
        { use: join(ROOT, 'bench/plugins/count.ts') },
      ],
    }],
  }));
  const feed = await floodOf(service);
  const board = countBoard();
  Object.assign(board, { target: COUNT, count: 0, firstAt: 0, lastAt: 0, taken: feed.taken });
  const done = new Promise<void>((resolve) => {
    board.done = resolve;
  });
  const supervisor = await Supervisor.start(await loadBotsConfig(join(dir, 'bots.yaml')), {
    log: pino({ level: 'warn' }, pino.destination(2)),
  });
  try {
    await supervisor.connected();
    // The first catch-up settles the cursor ("from now on") before the flood.
    await supervisor.bots[0]!.runners[0]!.sequencer.idle();
    const heapBefore = process.memoryUsage().heapUsed;
    let heapPeak = heapBefore;
    const sampler = setInterval(() => {
      heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    }, 100);
    const cpu = process.cpuUsage();
    const serviceCpu = cpuMicros(service.pid);
    await feed.run();
    await done;
    process.stderr.write(`supervisor: service CPU ${((cpuMicros(service.pid) - serviceCpu) / COUNT).toFixed(1)} µs/msg\n`);
    // The logger writes off the chain, on its own clock: the run ends when every message is on disk.
    const written = () => Number((supervisor.stats().bench!.plugins.logger as { written?: number }).written ?? 0);
    while (written() < COUNT) await new Promise((r) => setTimeout(r, 5));
    const onDiskAt = performance.now();
    const used = process.cpuUsage(cpu);
    clearInterval(sampler);
    return { ...rateOf(COUNT, board.firstAt, onDiskAt, used), heapMB: (heapPeak - heapBefore) / 2 ** 20 };
  } finally {
    await supervisor.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

buildOnce();
const { loadBotsConfig } = await importBuilt<typeof BotsConfig>('src/config/bots-config.js');
const { Supervisor } = await importBuilt<typeof SupervisorModule>('src/supervisor/supervisor.js');

const rows: Array<Array<string | number>> = [];
const figures: Figure[] = [];
for (const style of STYLES) {
  const service = await startServiceProcess({ args: ['--ids', style, '--rate-limit', 'off', '--upgrade-rate-limit', 'off'] });
  try {
    // BENCH_THROUGHPUT_PROFILE=1 skips the bare client, so a --cpu-prof of the run shows the supervisor alone.
    const bare = process.env.BENCH_THROUGHPUT_PROFILE ? { perSecond: 1, seconds: 0, cpuMicros: 0 } : await bareClient(service);
    const groupwire = await throughSupervisor(service);
    const ratio = groupwire.perSecond / bare.perSecond;
    rows.push([
      `${style} ids`, Math.round(bare.perSecond), Math.round(groupwire.perSecond), Number(ratio.toFixed(2)),
      Number(bare.cpuMicros.toFixed(1)), Number(groupwire.cpuMicros.toFixed(1)),
      // The goal (#20): the supervisor's CPU per message at most twice the bare client's.
      Number((groupwire.cpuMicros / bare.cpuMicros).toFixed(2)), Number(groupwire.heapMB.toFixed(1)),
    ]);
    figures.push({
      label: `throughput, ${style} ids`, value: Math.round(groupwire.perSecond), unit: 'msg/s',
      baseline: { label: 'bare ws client', value: Math.round(bare.perSecond) }, ratio,
      ratioMeaning: "of the bare client's rate (higher is better)",
      limit: { text: 'at least half the bare client', ok: ratio >= 0.5 },
    });
  } finally {
    await service.stop();
  }
}
report({
  name: 'throughput',
  title: `Throughput: ${COUNT.toLocaleString('en-US')} chat messages over one socket`,
  table: {
    columns: ['ids', 'bare ws (msg/s)', 'supervisor + chain (msg/s)', 'ratio', 'bare CPU µs/msg', 'supervisor CPU µs/msg', 'CPU ratio', 'peak heap growth (MB)'],
    rows,
  },
  figures,
  notes: [
    'chain: responder (no rule matches), logger (jsonl, temp dir), counting plugin; service in its own process',
    'the flood is posted from a thread of the bench process (so the reader\'s own work never holds up the next chunk); CPU per message is the whole process\'s, that thread included, on both sides',
    'groupwire runs from a tsc build of this checkout (dist/bench-build), as the package does',
  ],
});
