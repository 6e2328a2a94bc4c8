import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type WebSocket from 'ws';
import { stringify } from 'yaml';
import type { GroupsClient } from '../src/api/index.js';
import { IrcServer } from '../test/helpers/irc-server.js';
import { BUILD, buildOnce } from './lib/build.js';
import { stopChild, type Running } from './lib/child.js';
import { member } from './lib/member.js';
import { ROOT } from './lib/paths.js';
import { RawIrc } from './lib/raw-irc.js';
import { report } from './lib/report.js';
import { startServiceProcess, type ServiceProcess } from './lib/service-process.js';
import { spread, type Spread } from './lib/stats.js';

/**
 * Relay latency: chat messages posted at a steady rate by a member over his own chat socket, relayed
 * to a real local IRC server (ngircd), timed from the post to an IRC client seeing the PRIVMSG.
 *
 * - groupwire: the supervisor with the relay-irc plugin (`rate: off`, durable queue, delivery
 *   confirmation by PING barriers on ngircd), `groupwire run bots.yaml` in a process of its own;
 * - baseline: a bare `ws` client in a process of its own that writes each chat_message straight to
 *   its own raw IRC connection (bench/lib/bare-irc-relay.ts).
 *
 * The poster (bob's chat socket) and the observer (a raw IRC client in the channel) live in this
 * process, so both ends of each sample are read from one clock. The two paths take turns in rounds
 * (the order flips each round), each warmed up before it is measured.
 *
 * RELAY_LATENCY_CPU_PROF=<dir> runs groupwire's process with `--cpu-prof` into that dir.
 */

const PER_SECOND = 100;
const MEASURED = 1000;
const ROUNDS = 2;
const WARMUP = 200;
const CHANNEL = '#latency';
const LIMIT_P99_MS = 10;

type PathName = 'groupwire' | 'bare';

/** Arrival times per tag: what the observer saw of each sequence number. */
const arrivals = new Map<string, Map<number, number>>();

function observe(observer: RawIrc): void {
  observer.onLine = (line, at) => {
    const seen = /^:\S+ PRIVMSG \S+ :.*\blat (\S+) (\d+)$/.exec(line);
    if (!seen) return;
    const byNumber = arrivals.get(seen[1]!);
    if (byNumber && !byNumber.has(Number(seen[2]))) byNumber.set(Number(seen[2]), at);
  };
}

/** Posts `count` messages tagged `tag` at PER_SECOND, then waits (up to 10 s) for the observer to see them all. */
async function postSteadily(poster: WebSocket, tag: string, count: number): Promise<{ latencies: number[]; lost: number }> {
  const seen = new Map<number, number>();
  arrivals.set(tag, seen);
  const sent: number[] = [];
  const interval = 1000 / PER_SECOND;
  const start = performance.now() + 20;
  for (let i = 0; i < count; i += 1) {
    // A fixed schedule: a late wake-up does not push the later posts back.
    const wait = start + i * interval - performance.now();
    if (wait >= 1) await sleep(Math.floor(wait));
    sent[i] = performance.now();
    poster.send(JSON.stringify({ object: 'chat_post', message: `lat ${tag} ${i}` }));
  }
  const deadline = performance.now() + 10_000;
  while (seen.size < count && performance.now() < deadline) await sleep(20);
  arrivals.delete(tag);
  const latencies = [...seen].map(([i, at]) => at - sent[i]!);
  return { latencies, lost: count - seen.size };
}

/** Posts a probe every 250 ms until the observer sees one: the path is up end to end. */
async function untilRelaying(poster: WebSocket, tag: string): Promise<void> {
  const seen = new Map<number, number>();
  arrivals.set(tag, seen);
  const deadline = performance.now() + 60_000;
  for (let i = 0; seen.size === 0; i += 1) {
    if (performance.now() > deadline) throw new Error(`nothing posted reached IRC through ${tag} within 60 s`);
    poster.send(JSON.stringify({ object: 'chat_post', message: `lat ${tag} ${i}` }));
    await sleep(250);
  }
  arrivals.delete(tag);
}

/** groupwire's supervisor with the relay, from a bots.yaml of its own and a fresh state dir. */
function startGroupwire(service: ServiceProcess, irc: IrcServer, dir: string, round: number): Running {
  const file = join(dir, `bots-${round}.yaml`);
  writeFileSync(file, stringify({
    service: { base_url: service.baseUrl, ca_file: service.caFile },
    state_dir: join(dir, `state-${round}`),
    log: { level: 'warn', pretty: false },
    bots: [{
      name: 'relay',
      login: { email: 'bot@example.com', password: 'bot-demo' },
      chats: [{ group: 'demo', chat: 'general' }],
      plugins: [{
        use: 'relay-irc',
        with: { server: '127.0.0.1', port: irc.port, tls: false, nick: 'gwbot', channels: { general: CHANNEL }, rate: 'off' },
      }],
    }],
  }));
  const profileDir = process.env.RELAY_LATENCY_CPU_PROF;
  const child = spawn(process.execPath, [
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
    join(BUILD, 'src/cli/main.js'), 'run', file,
  ], { cwd: ROOT, stdio: ['ignore', 2, 2] }); // its log (warnings and errors only) to our stderr
  return { stop: () => stopChild(child) };
}

/** The baseline: a bare ws client writing to raw IRC, in a process of its own. */
async function startBare(service: ServiceProcess, irc: IrcServer, bot: GroupsClient, chatsubId: string): Promise<Running> {
  const query = new URLSearchParams({ chatsub_id: chatsubId, csrf: await bot.csrf(), no_history: 'true' });
  const settings = {
    url: `${service.baseUrl.replace(/^https:/, 'wss:')}/api/v1/chatdata?${query}`,
    headers: bot.authHeaders(), caFile: service.caFile, ircPort: irc.port, nick: 'bare', channel: CHANNEL,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/lib/bare-irc-relay.ts'), JSON.stringify(settings)], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((ready, fail) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) ready();
    });
    child.once('exit', (code) => fail(new Error(`the bare relay ended (${code}) before it was ready`)));
  });
  return { stop: () => stopChild(child) };
}

function row(label: string, s: Spread, lost: number): Array<string | number> {
  return [label, s.count, s.p50, s.p99, s.max, s.mean, lost];
}

async function main(): Promise<void> {
  const service = await startServiceProcess();
  const irc = await IrcServer.start();
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-relay-latency-'));
  const observer = await RawIrc.connect(irc.port, 'observer', CHANNEL);
  observe(observer);
  const bob = await member(service, 'bob@example.com', 'bob-demo');
  const bot = await member(service, 'bot@example.com', 'bot-demo');
  const poster = await bob.client.openChatSocket({ chatsubId: bob.chatsubId, noHistory: true });

  const latencies: Record<PathName, number[]> = { groupwire: [], bare: [] };
  const lost: Record<PathName, number> = { groupwire: 0, bare: 0 };
  const rounds: Array<Array<string | number>> = [];
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      const order: PathName[] = round % 2 === 0 ? ['groupwire', 'bare'] : ['bare', 'groupwire'];
      for (const path of order) {
        const running = path === 'groupwire' ? startGroupwire(service, irc, dir, round) : await startBare(service, irc, bot.client, bot.chatsubId);
        try {
          await untilRelaying(poster, `p${round}${path}`);
          await postSteadily(poster, `w${round}${path}`, WARMUP);
          const measured = await postSteadily(poster, `m${round}${path}`, MEASURED / ROUNDS);
          latencies[path].push(...measured.latencies);
          lost[path] += measured.lost;
          rounds.push(row(`round ${round + 1}: ${path}`, spread(measured.latencies), measured.lost));
          process.stderr.write(`round ${round + 1} ${path}: p50 ${spread(measured.latencies).p50.toFixed(2)} ms, p99 ${spread(measured.latencies).p99.toFixed(2)} ms\n`);
        } finally {
          await running.stop();
        }
      }
    }
  } finally {
    poster.close();
    observer.close();
    await bob.client.close();
    await bot.client.close();
    await irc.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const gw = spread(latencies.groupwire);
  const bare = spread(latencies.bare);
  const meaning = "of the bare ws → raw IRC client's (lower is better)";
  report({
    name: 'relay-latency',
    title: `Relay latency: ${MEASURED} chat messages at ${PER_SECOND}/s to ngircd on loopback (ms, post → IRC client)`,
    table: {
      columns: ['path', 'messages', 'p50 ms', 'p99 ms', 'max ms', 'mean ms', 'lost'],
      rows: [
        row('groupwire (relay-irc, rate: off)', gw, lost.groupwire),
        row('bare ws → raw IRC', bare, lost.bare),
        ...rounds,
      ],
    },
    figures: [
      { label: 'groupwire p50', value: gw.p50, unit: 'ms', baseline: { label: 'bare p50', value: bare.p50 }, ratio: gw.p50 / bare.p50, ratioMeaning: meaning },
      {
        label: 'groupwire p99', value: gw.p99, unit: 'ms', baseline: { label: 'bare p99', value: bare.p99 }, ratio: gw.p99 / bare.p99, ratioMeaning: meaning,
        limit: { text: `≤ ${LIMIT_P99_MS} ms on loopback`, ok: gw.p99 <= LIMIT_P99_MS },
      },
    ],
    notes: [
      `Each path in a process of its own; ${ROUNDS} rounds of ${MEASURED / ROUNDS} measured messages each, after ${WARMUP} warm-up messages, the order flipped each round.`,
      'The post is sent by bob over his chat socket; t0 is just before the frame is written, t1 when the observer\'s socket read the PRIVMSG (one clock, this process).',
      'groupwire runs as the package does, from a tsc build of this checkout (dist/bench-build).',
      'groupwire confirms each line with a PING barrier on ngircd (no labeled-response) and keeps its queue in a file; the baseline does neither.',
      'p99 and max move with whatever else runs on this shared 2-core machine; the baseline\'s own p99 shows how much.',
      ...(lost.groupwire + lost.bare > 0 ? [`LOST: ${lost.groupwire} through groupwire, ${lost.bare} through the baseline (not seen within 10 s)`] : []),
    ],
  });
  // A message that never arrived is a bug, not a slow figure.
  if (lost.groupwire > 0) process.exitCode = 1;
}

buildOnce();
await main();
