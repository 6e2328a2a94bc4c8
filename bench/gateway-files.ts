import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { buildOnce, BUILD } from './lib/build.js';
import { stopChild } from './lib/child.js';
import { member } from './lib/member.js';
import { ROOT } from './lib/paths.js';
import { report, type Figure } from './lib/report.js';
import { startServiceProcess, type ServiceProcess } from './lib/service-process.js';
import { median } from './lib/stats.js';
import { BareClient } from './gateway-files/bare.js';
import { ChatLinks } from './gateway-files/chat-links.js';
import { PeakRss } from './gateway-files/peak-rss.js';
import { StreamFloor } from './gateway-files/stream-floor-process.js';
import { FILE_SIDES, FileSides, type Arrival, type FileSide } from './gateway-files/sides.js';

/**
 * The files bench (issue #34): a 5 MB picture said on the fake Slack goes through one bot's gateway
 * to Discord, Matrix and Telegram (their fakes, natively) and to the chat as a link. Measured in the
 * same run, rounds alternating:
 * - gateway: from the Slack event to the last of the three fakes keeping the file's message (bytes
 *   compared on each), and the bot's peak RSS over that window against its RSS just before;
 * - bare: one download of the same size from the fake Slack's file URL and the three uploads at once,
 *   plain undici requests (bench/gateway-files/bare.ts), until the last fake keeps its message;
 * - stream floor: a plain Node process moving the same file streamed (bench/gateway-files/stream-floor.ts),
 *   its peak RSS measured as the bot's: what Node itself grows by when bytes stream through it.
 * Then one 25 MB picture (the media store's cap) on each path, for the RSS figure.
 * GATEWAY_FILES_ROUNDS (default 5) and GATEWAY_FILES_BIG=0 (no 25 MB file) make a quick run.
 * GATEWAY_FILES_ONLY=discord (a comma list of discord, matrix, telegram, or `none`) puts only those
 * file-taking sides in the gateway, to see which side's upload costs the memory (profiling only:
 * the bare client still uploads to all three); GATEWAY_FILES_BIG_MB=100 sends a larger big file (the
 * store's cap raised to it); GATEWAY_FILES_NODE_ARGS gives the bot's node flags (--trace-gc).
 */

const SIZE = 5_000_000;
/** The media store's default cap (media.max_size); GATEWAY_FILES_BIG_MB raises the file and the cap with it (profiling). */
const BIG = Number(process.env.GATEWAY_FILES_BIG_MB ?? 25) * 1_000_000;
const ROUNDS = Number(process.env.GATEWAY_FILES_ROUNDS ?? 5);
const WITH_BIG = process.env.GATEWAY_FILES_BIG !== '0';
/** The bot's relays and the fakes take files up to this (a boosted Discord server's 50 MB would do too). */
const MAX_UPLOAD = Math.max(30 * 1024 * 1024, BIG + 1024 * 1024);
const TIMEOUT_MS = 120_000;
/** "Well under the file's size": the bot's peak RSS may grow by at most half of it. */
const GROWTH_LIMIT = 0.5;
/** The file-taking sides in the gateway (GATEWAY_FILES_ONLY, profiling; all three by default). */
const ONLY: readonly FileSide[] = process.env.GATEWAY_FILES_ONLY === undefined ? FILE_SIDES
  : FILE_SIDES.filter((side) => process.env.GATEWAY_FILES_ONLY!.split(',').includes(side));

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);

function picture(size: number): Buffer {
  return Buffer.concat([PNG, randomBytes(size - PNG.length)]);
}

interface Bot {
  child: ChildProcess;
  pid: number;
}

function startBot(service: ServiceProcess, sides: FileSides, dir: string): Bot {
  const file = join(dir, 'bots.yaml');
  writeFileSync(file, stringify({
    service: { base_url: service.baseUrl, ca_file: service.caFile },
    state_dir: join(dir, 'state'),
    log: { level: 'warn', pretty: false },
    media: { listen: '127.0.0.1:0', ...(BIG > 25_000_000 ? { max_size: BIG } : {}) },
    bots: [{
      name: 'bridge',
      login: { email: 'bot@example.com', password: 'bot-demo' },
      chats: [{ group: 'demo', chat: 'general' }],
      plugins: sides.plugins(MAX_UPLOAD, ONLY),
    }],
    gateways: [{ name: 'general', endpoints: [{ chat: 'general' }, ...sides.endpoints(ONLY)] }],
  }));
  // GATEWAY_FILES_NODE_ARGS: node flags for the bot (e.g. --trace-gc, --heapsnapshot-signal=SIGUSR2), when profiling.
  const nodeArgs = process.env.GATEWAY_FILES_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, join(BUILD, 'src/cli/main.js'), 'run', file], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  child.once('exit', (code, signal) => (botExited = String(code ?? signal)));
  return { child, pid: child.pid! };
}

let botExited: string | undefined;

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (botExited) throw new Error(`the bot ended (${botExited}) while waiting for ${what}`);
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Run {
  round: string;
  size: number;
  path: 'gateway' | 'bare' | 'stream floor';
  ms: number;
  perSide: Partial<Record<FileSide, number>>;
  chatMs?: number;
  rss?: { before: number; peak: number; sampledPeak: number; hwm?: number };
}

async function throughGateway(sides: FileSides, links: ChatLinks, bot: Bot, round: string, size: number): Promise<Run> {
  const bytes = picture(size);
  const name = `${round}-${randomBytes(3).toString('hex')}.png`;
  sides.expect(name.replace(/\.png$/, ''), bytes);
  // The bot idle a moment, then its RSS just before the file.
  await new Promise((r) => setTimeout(r, 500));
  const rss = new PeakRss(bot.pid);
  const start = performance.now();
  sides.sayOnSlack(name, bytes);
  const arrivals = await sides.arrived(name.replace(/\.png$/, ''), TIMEOUT_MS, ONLY);
  const link = await links.of(name, TIMEOUT_MS);
  const memory = rss.stop();
  checkBytes(name, arrivals);
  // The link works: its bytes are the file's (read after the window, so the listener's read is not in it).
  const served = await request(link.url);
  const body = Buffer.from(await served.body.arrayBuffer());
  if (served.statusCode !== 200 || !body.equals(bytes)) throw new Error(`${name}: the chat's link answered ${served.statusCode} with other bytes`);
  return { round, size, path: 'gateway', ...times(arrivals, start), chatMs: link.at - start, rss: memory };
}

async function bare(sides: FileSides, client: BareClient, round: string, size: number): Promise<Run> {
  const bytes = picture(size);
  const name = `${round}-${randomBytes(3).toString('hex')}.png`;
  const url = sides.keepOnSlack(name, bytes);
  sides.expect(name.replace(/\.png$/, ''), bytes);
  await new Promise((r) => setTimeout(r, 500));
  const start = performance.now();
  await client.transfer(url, name, 'image/png');
  const arrivals = await sides.arrived(name.replace(/\.png$/, ''), TIMEOUT_MS);
  checkBytes(name, arrivals);
  return { round, size, path: 'bare', ...times(arrivals, start) };
}

async function floorRun(sides: FileSides, floor: StreamFloor, round: string, size: number): Promise<Run> {
  const bytes = picture(size);
  const name = `${round}-${randomBytes(3).toString('hex')}.png`;
  const url = sides.keepOnSlack(name, bytes);
  await new Promise((r) => setTimeout(r, 500));
  const rss = new PeakRss(floor.child.pid!);
  const start = performance.now();
  await floor.move(url, sides.bareTargets().matrix, name);
  const ms = performance.now() - start;
  return { round, size, path: 'stream floor', ms, perSide: {}, rss: rss.stop() };
}

function checkBytes(name: string, arrivals: Partial<Record<FileSide, Arrival>>): void {
  const wrong = FILE_SIDES.filter((side) => arrivals[side] && !arrivals[side].bytesMatch);
  if (wrong.length > 0) throw new Error(`${name}: other bytes arrived on ${wrong.join(', ')}`);
}

function times(arrivals: Partial<Record<FileSide, Arrival>>, start: number): { ms: number; perSide: Partial<Record<FileSide, number>> } {
  const perSide = Object.fromEntries(FILE_SIDES.flatMap((side) => arrivals[side] ? [[side, arrivals[side].at - start]] : [])) as Partial<Record<FileSide, number>>;
  return { ms: Math.max(0, ...Object.values(perSide)), perSide };
}

const MB = 1_000_000;

function row(run: Run): Array<string | number> {
  const growth = run.rss ? run.rss.peak - run.rss.before : undefined;
  return [
    run.round, run.size / MB, run.path, run.ms, run.perSide.discord ?? '–', run.perSide.matrix ?? '–', run.perSide.telegram ?? '–', run.chatMs ?? '–',
    run.rss ? run.rss.before / MB : '–', run.rss ? run.rss.peak / MB : '–', growth !== undefined ? growth / MB : '–', growth !== undefined ? growth / run.size : '–',
  ];
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const service = await startServiceProcess();
  const sides = await FileSides.start(MAX_UPLOAD);
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-gateway-files-'));
  const bob = await member(service, 'bob@example.com', 'bob-demo');
  const watcher = await bob.client.openChatSocket({ chatsubId: bob.chatsubId, noHistory: true });
  const links = new ChatLinks(watcher);
  const client = await BareClient.start(sides);
  const floor = await StreamFloor.start();
  const bot = startBot(service, sides, dir);
  const runs: Run[] = [];
  const take = (run: Run, what: string) => {
    runs.push(run);
    process.stderr.write(`${what} ${run.path}: ${run.ms.toFixed(0)} ms${run.path === 'stream floor' ? '' : ' to the last side'}${run.rss ? `, RSS +${((run.rss.peak - run.rss.before) / MB).toFixed(1)} MB` : ''}\n`);
  };
  let hwmReset = true;
  try {
    await until('the Slack link', () => sides.slack.socket.opened >= 1);
    if (ONLY.includes('discord')) await until('the Discord session', () => sides.discord.connections >= 1);
    // Warm-up, every path: its code loaded and its connections open before a figure is taken.
    await throughGateway(sides, links, bot, 'warm-g', 200_000);
    await bare(sides, client, 'warm-b', 200_000);
    await floorRun(sides, floor, 'warm-f', 200_000);
    for (let round = 1; round <= ROUNDS; round += 1) {
      const order = round % 2 === 1 ? ['gateway', 'bare'] as const : ['bare', 'gateway'] as const;
      for (const path of order) {
        take(path === 'gateway' ? await throughGateway(sides, links, bot, `g${round}`, SIZE) : await bare(sides, client, `b${round}`, SIZE), `round ${round}`);
      }
      take(await floorRun(sides, floor, `f${round}`, SIZE), `round ${round}`);
    }
    if (WITH_BIG) {
      take(await throughGateway(sides, links, bot, 'g-big', BIG), `${BIG / MB} MB`);
      // Past Telegram's 50 MB (a profiling size), no bare run: its sendDocument would be refused.
      if (BIG <= 50_000_000) take(await bare(sides, client, 'b-big', BIG), `${BIG / MB} MB`);
      take(await floorRun(sides, floor, 'f-big', BIG), `${BIG / MB} MB`);
    }
    hwmReset = runs.every((run) => !run.rss || run.rss.hwm !== undefined);
  } finally {
    await stopChild(bot.child);
    await floor.stop();
    watcher.close();
    await bob.client.close();
    await sides.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const of = (path: Run['path'], size: number) => runs.filter((run) => run.path === path && run.size === size);
  const gw = median(of('gateway', SIZE).map((run) => run.ms));
  const bareMs = median(of('bare', SIZE).map((run) => run.ms));
  const growth = (run: Run) => run.rss!.peak - run.rss!.before;
  const worst = (path: Run['path'], size: number) => Math.max(...of(path, size).map(growth));
  const figures: Figure[] = [{
    label: `${SIZE / MB} MB Slack → Discord, Matrix, Telegram: to the last side, median`, value: gw, unit: 'ms',
    baseline: { label: 'bare download + three concurrent uploads, median', value: bareMs }, ratio: gw / bareMs, ratioMeaning: 'of the bare transfer\'s time (lower is better)',
  }];
  for (const size of WITH_BIG ? [SIZE, BIG] : [SIZE]) {
    const bot = worst('gateway', size);
    figures.push({
      label: `bot peak RSS growth streaming ${size / MB} MB${size === BIG ? ' (the store\'s cap)' : ''}, largest of the rounds`, value: bot / MB, unit: 'MB',
      baseline: { label: 'the file', value: size / MB }, ratio: bot / size, ratioMeaning: 'of the file\'s size (lower is better)',
      limit: { text: `under ${GROWTH_LIMIT}× the file's size`, ok: bot < GROWTH_LIMIT * size },
    });
  }
  // Against the floor at 5 MB only: the largest growth of either is its first, cold round; the big file
  // comes once, after them, when one process may have kept the memory of the rounds and the other not.
  figures.push({
    label: `bot peak RSS growth streaming ${SIZE / MB} MB, largest of the rounds`, value: worst('gateway', SIZE) / MB, unit: 'MB',
    baseline: { label: 'a plain Node process streaming it (the floor), largest of the rounds', value: worst('stream floor', SIZE) / MB },
    ratio: worst('gateway', SIZE) / worst('stream floor', SIZE), ratioMeaning: 'of the floor\'s growth (lower is better)',
  });
  report({
    name: 'gateway-files',
    title: `Gateway files: a ${SIZE / MB} MB picture said on Slack to Discord, Matrix and Telegram natively and the chat as a link, against a bare download + uploads (ms), and the bot's peak RSS while it streams (MB)`,
    table: {
      columns: ['round', 'MB', 'path', 'last side ms', 'Discord ms', 'Matrix ms', 'Telegram ms', 'chat link ms', 'RSS before MB', 'RSS peak MB', 'growth MB', 'growth / file'],
      rows: runs.map(row),
    },
    figures,
    notes: [
      `One bot (\`groupwire run\` of the tsc build, a process of its own) with relay-slack, relay-discord (webhook posts), relay-matrix and relay-telegram (rate: off) in one gateway with chat general, and a media store (media.listen on loopback, default cap and checks). The fakes (test/fakes/slack, test/helpers/fake-discord, fake-matrix, fake-telegram) run in the bench's process; relays' and fakes' upload limits raised to ${MAX_UPLOAD / 1048576} MiB so that the 25 MB file goes natively everywhere (Telegram takes it as a document: sendPhoto stops at 10 MB). Files are a PNG header and random bytes, fresh each round.`,
      `gateway: from just before the fake Slack sends the file_share event over Socket Mode to the last of the three fakes keeping the file's message (Discord: the webhook execute's files[0] kept; Matrix: the m.image event after the upload; Telegram: sendPhoto kept); each side's bytes compared with the file's, and the chat's link downloaded and compared after the window. The gateway reads the file once into the media store (Slack's url_private_download with the bot token), then the three relays stream it from the store, each in its own queue, at once.`,
      'bare: plain undici requests from the bench\'s process, to places of the fakes no relay maps: one GET of the file (into memory), then the three uploads at once (Discord webhook multipart; Matrix media upload then the m.image event; Telegram sendPhoto multipart), until the last fake keeps its message. No queue, no durable note, no store, no checks.',
      'stream floor: a plain Node process of its own (bench/gateway-files/stream-floor.ts) moving the same file the gateway\'s way, streamed, with nothing else: an undici download piped into a file on disk, then three streamed reads of it at once, each the body of an undici POST to the fake homeserver\'s media upload. Its RSS is measured as the bot\'s: what Node itself grows by when bytes stream through it at loopback speed (chunks awaiting the garbage collector, socket buffers), held by nothing.',
      `${ROUNDS} rounds after one warm-up of 200 KB on every path, gateway and bare alternating (which goes first swaps each round), the floor after them; then the ${BIG / MB} MB file once on each path. The time is the median. RSS: VmRSS of the process just before the file, against its peak until the last side and the chat's link (${hwmReset ? 'the kernel\'s VmHWM, reset through /proc/<pid>/clear_refs at the start of the window, and VmRSS sampled every 5 ms' : 'VmRSS sampled every 5 ms: the kernel refused to reset VmHWM'}); the largest growth of the rounds is the figure.`,
      `Load average (1 min) ${loadBefore.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end on ${cpus().length} cores.`,
    ],
  });
}

buildOnce();
await main();
