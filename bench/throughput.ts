import { closeSync, createWriteStream, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { GroupsClient } from '../src/api/index.js';
import type * as WireJson from '../src/api/wire-json.js';
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

/**
 * A bare `ws` client reading the flood. `guarded` adds the work the supervisor's guarantees cannot do
 * without, and nothing else: ids parsed without losing a digit (the client's wire parser), a cursor line
 * written to a journal per message before the next (writeSync: a SIGKILL re-hands at most the message in
 * flight), and the frame's text appended to a transcript file (a buffered stream).
 */
async function bareClient(service: ServiceProcess, guarded = false): Promise<Rate> {
  const client = new GroupsClient({ baseUrl: service.baseUrl, ca: service.ca, credentials: BOT });
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-bench-guarded-'));
  const cursor = guarded ? openSync(join(dir, 'cursors.jsonl'), 'a') : -1;
  const transcript = guarded ? createWriteStream(join(dir, 'transcript.jsonl')) : undefined;
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
        const text = data.toString();
        const frame = (guarded ? parseWireJson(text) : JSON.parse(text)) as { msg_num?: number; chat_id?: string };
        if (typeof frame.msg_num !== 'number') return;
        if (guarded) {
          transcript!.write(`${text}\n`);
          writeSync(cursor, `{"c":${JSON.stringify(String(frame.chat_id))},"m":${frame.msg_num}}\n`);
        }
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
    if (transcript) await new Promise<void>((resolve) => transcript.end(resolve));
    const used = process.cpuUsage(cpu);
    process.stderr.write(`${guarded ? 'guarded' : 'bare'}: service CPU ${((cpuMicros(service.pid) - serviceCpu) / COUNT).toFixed(1)} µs/msg\n`);
    ws.close();
    return rateOf(COUNT, firstAt, lastAt, used);
  } finally {
    if (cursor >= 0) closeSync(cursor);
    await client.close();
    rmSync(dir, { recursive: true, force: true });
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
const { parseWireJson } = await importBuilt<typeof WireJson>('src/api/wire-json.js');
const { Supervisor } = await importBuilt<typeof SupervisorModule>('src/supervisor/supervisor.js');

const rows: Array<Array<string | number>> = [];
const figures: Figure[] = [];
/** Runs one reader against a service of its own, so none reads a chat the ones before it filled. */
async function onFreshService<T>(style: string, read: (service: ServiceProcess) => Promise<T>): Promise<T> {
  const service = await startServiceProcess({ args: ['--ids', style, '--rate-limit', 'off', '--upgrade-rate-limit', 'off'] });
  try {
    return await read(service);
  } finally {
    await service.stop();
  }
}

for (const style of STYLES) {
  // BENCH_THROUGHPUT_PROFILE=1 skips the bare clients, so a --cpu-prof of the run shows the supervisor alone.
  const skip = { perSecond: 1, seconds: 0, cpuMicros: 1 };
  const bare = process.env.BENCH_THROUGHPUT_PROFILE ? skip : await onFreshService(style, (service) => bareClient(service));
  const guarded = process.env.BENCH_THROUGHPUT_PROFILE ? skip : await onFreshService(style, (service) => bareClient(service, true));
  const groupwire = await onFreshService(style, throughSupervisor);
  const ratio = groupwire.perSecond / bare.perSecond;
  rows.push([
    `${style} ids`, Math.round(bare.perSecond), Math.round(groupwire.perSecond), Number(ratio.toFixed(2)),
    Number(bare.cpuMicros.toFixed(1)), Number(groupwire.cpuMicros.toFixed(1)),
    // The goal (#20): the supervisor's CPU per message at most twice the bare client's.
    Number((groupwire.cpuMicros / bare.cpuMicros).toFixed(2)),
    Number(guarded.cpuMicros.toFixed(1)), Number((groupwire.cpuMicros / guarded.cpuMicros).toFixed(2)),
    Number(groupwire.heapMB.toFixed(1)),
  ]);
  figures.push({
    label: `throughput, ${style} ids`, value: Math.round(groupwire.perSecond), unit: 'msg/s',
    baseline: { label: 'bare ws client', value: Math.round(bare.perSecond) }, ratio,
    ratioMeaning: "of the bare client's rate (higher is better)",
    limit: { text: 'at least half the bare client', ok: ratio >= 0.5 },
  });
}
report({
  name: 'throughput',
  title: `Throughput: ${COUNT.toLocaleString('en-US')} chat messages over one socket`,
  table: {
    columns: ['ids', 'bare ws (msg/s)', 'supervisor + chain (msg/s)', 'ratio', 'bare CPU µs/msg', 'supervisor CPU µs/msg', 'CPU ratio', 'bare + guarantees CPU µs/msg', 'CPU ratio to it', 'peak heap growth (MB)'],
    rows,
  },
  figures,
  notes: [
    'chain: responder (no rule matches), logger (jsonl, temp dir), counting plugin; service in its own process',
    'the flood is posted from a thread of the bench process (so the reader\'s own work never holds up the next chunk); CPU per message is the whole process\'s, that thread included, on both sides',
    'groupwire runs from a tsc build of this checkout (dist/bench-build), as the package does',
    'bare + guarantees: the bare client doing only the work the supervisor\'s guarantees need, nothing else: ids parsed without losing a digit, a cursor line written per message before the next (writeSync), the frame\'s text appended to a transcript (a buffered stream); the CPU ratio to it is what the supervisor, the chain and the plugins add beyond that',
  ],
});
