import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type WebSocket from 'ws';
import { stringify } from 'yaml';
import { IrcServer } from '../test/helpers/irc-server.js';
import { BUILD, buildOnce } from './lib/build.js';
import { stopChild, type Running } from './lib/child.js';
import { member } from './lib/member.js';
import { ROOT } from './lib/paths.js';
import { RawIrc } from './lib/raw-irc.js';
import { report } from './lib/report.js';
import { startServiceProcess, type ServiceProcess } from './lib/service-process.js';

/**
 * IRC pacing: a burst of 200 chat lines relayed to ngircd WITH its default flood penalties (it reads
 * a client's commands at about 3 a second after a short burst, PING included), timed from the first
 * line an IRC client in the channel sees to the 200th.
 *
 * - groupwire, default pace (`rate` 1 a second, bursts of 4): the bucket is the limit;
 * - groupwire, `rate: off`: ngircd's throttle is the limit; what confirmations cost shows here;
 * - baseline: a bare raw-socket client writing the same 200 PRIVMSGs at once, confirming nothing.
 *
 * groupwire runs as `groupwire run bots.yaml` from a tsc build, in a process of its own; the lines are
 * posted by bob over his chat socket, all at once. IRC_PACING_ROUNDS (default 1) repeats the three.
 */

const LINES = 200;
const CHANNEL = '#pacing';
const ROUNDS = Number(process.env.IRC_PACING_ROUNDS ?? 1);
/** Long enough for ngircd's penalty of a fresh connection (registration, JOIN) to have run out. */
const SETTLE_MS = 8_000;
/** Matterbridge's rate in the side-by-side run of issue #20 (same ngircd, default penalties). */
const MATTERBRIDGE_LINES_PER_SECOND = 3.1;

type PathName = 'default pace' | 'rate: off' | 'bare';

interface Drain { seen: number; seconds: number; perSecond: number }

/** Per tag, when the observer saw each line number (first sighting only: a doubled line counts once, and is counted). */
const sightings = new Map<string, { at: Map<number, number>; doubled: number }>();

function observe(observer: RawIrc): void {
  observer.onLine = (line, at) => {
    const seen = /^:\S+ PRIVMSG \S+ :.*\bpace (\S+) (\d+)$/.exec(line);
    const tagged = seen ? sightings.get(seen[1]!) : undefined;
    if (!tagged) return;
    if (tagged.at.has(Number(seen![2]))) tagged.doubled += 1;
    else tagged.at.set(Number(seen![2]), at);
  };
}

/** Waits until the observer saw `count` lines of `tag` (or `timeoutMs` passed): first → last, in seconds. */
async function drained(tag: string, timeoutMs: number): Promise<Drain & { doubled: number }> {
  const tagged = sightings.get(tag)!;
  const deadline = performance.now() + timeoutMs;
  while (tagged.at.size < LINES && performance.now() < deadline) await sleep(50);
  await sleep(1000); // anything doubled would come right after
  const times = [...tagged.at.values()].sort((a, b) => a - b);
  const seconds = times.length > 1 ? (times.at(-1)! - times[0]!) / 1000 : 0;
  return { seen: tagged.at.size, seconds, perSecond: seconds > 0 ? (times.length - 1) / seconds : 0, doubled: tagged.doubled };
}

/** Posts a probe every second until the observer sees one: the relay is up and in the channel. */
async function untilRelaying(poster: WebSocket, tag: string): Promise<void> {
  sightings.set(tag, { at: new Map(), doubled: 0 });
  const deadline = performance.now() + 60_000;
  for (let i = 0; sightings.get(tag)!.at.size === 0; i += 1) {
    if (performance.now() > deadline) throw new Error(`nothing posted reached IRC through ${tag} within 60 s`);
    poster.send(JSON.stringify({ object: 'chat_post', message: `pace ${tag} ${i}` }));
    await sleep(1000);
  }
}

function startGroupwire(service: ServiceProcess, irc: IrcServer, dir: string, name: string, rate: unknown): Running {
  const file = join(dir, `bots-${name}.yaml`);
  writeFileSync(file, stringify({
    service: { base_url: service.baseUrl, ca_file: service.caFile },
    state_dir: join(dir, `state-${name}`),
    log: { level: 'warn', pretty: false },
    bots: [{
      name: 'relay',
      login: { email: 'bot@example.com', password: 'bot-demo' },
      chats: [{ group: 'demo', chat: 'general' }],
      plugins: [{ use: 'relay-irc', with: { server: '127.0.0.1', port: irc.port, tls: false, nick: 'gwbot', channels: { general: CHANNEL }, ...(rate === undefined ? {} : { rate }) } }],
    }],
  }));
  const child = spawn(process.execPath, [join(BUILD, 'src/cli/main.js'), 'run', file], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  return { stop: () => stopChild(child) };
}

/** One path: set up, let ngircd's penalty of the new connection run out, then the burst of LINES. */
async function runPath(path: PathName, round: number, service: ServiceProcess, irc: IrcServer, poster: WebSocket, dir: string): Promise<Drain & { doubled: number }> {
  const tag = `r${round}${path.replace(/\W/g, '')}`;
  if (path === 'bare') {
    const bare = await RawIrc.connect(irc.port, 'bare', CHANNEL);
    try {
      await sleep(SETTLE_MS);
      sightings.set(tag, { at: new Map(), doubled: 0 });
      for (let i = 0; i < LINES; i += 1) bare.send(`PRIVMSG ${CHANNEL} :<bob> pace ${tag} ${i}`);
      return await drained(tag, 200_000);
    } finally {
      bare.close();
    }
  }
  const running = startGroupwire(service, irc, dir, `${round}-${tag}`, path === 'rate: off' ? 'off' : undefined);
  try {
    await untilRelaying(poster, `${tag}probe`);
    await sleep(SETTLE_MS);
    sightings.set(tag, { at: new Map(), doubled: 0 });
    for (let i = 0; i < LINES; i += 1) poster.send(JSON.stringify({ object: 'chat_post', message: `pace ${tag} ${i}` }));
    return await drained(tag, path === 'default pace' ? 400_000 : 200_000);
  } finally {
    await running.stop();
  }
}

async function main(): Promise<void> {
  const service = await startServiceProcess();
  // ngircd with its default flood penalties: the throttle this bench is about.
  const irc = await IrcServer.start({ penalties: true });
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-irc-pacing-'));
  const observer = await RawIrc.connect(irc.port, 'observer', CHANNEL);
  observe(observer);
  const bob = await member(service, 'bob@example.com', 'bob-demo');
  const poster = await bob.client.openChatSocket({ chatsubId: bob.chatsubId, noHistory: true });
  const results: Record<PathName, Array<Drain & { doubled: number }>> = { 'default pace': [], 'rate: off': [], bare: [] };
  const rows: Array<Array<string | number>> = [];
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      const order: PathName[] = round % 2 === 0 ? ['rate: off', 'bare', 'default pace'] : ['bare', 'rate: off', 'default pace'];
      for (const path of order) {
        const result = await runPath(path, round, service, irc, poster, dir);
        results[path].push(result);
        rows.push([`round ${round + 1}: ${path}`, result.seen, result.doubled, result.seconds, result.perSecond]);
        process.stderr.write(`round ${round + 1} ${path}: ${result.seen} lines in ${result.seconds.toFixed(1)} s, ${result.perSecond.toFixed(2)} lines/s\n`);
      }
    }
  } finally {
    poster.close();
    observer.close();
    await bob.client.close();
    await irc.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const mean = (path: PathName) => results[path].reduce((sum, r) => sum + r.perSecond, 0) / results[path].length;
  const seen = (path: PathName) => results[path].reduce((sum, r) => sum + r.seen, 0);
  const seconds = (path: PathName) => results[path].reduce((sum, r) => sum + r.seconds, 0) / results[path].length;
  const doubled = (path: PathName) => results[path].reduce((sum, r) => sum + r.doubled, 0);
  const [def, off, bare] = [mean('default pace'), mean('rate: off'), mean('bare')];
  const meaning = "of the bare client's lines a second (higher is better)";
  const expected = LINES * ROUNDS;
  report({
    name: 'irc-pacing',
    title: `IRC pacing: a burst of ${LINES} chat lines to ngircd with its default flood penalties (lines a second, first → last seen)`,
    table: {
      columns: ['path', 'lines seen', 'doubled', 'first → last s', 'lines/s'],
      rows: [
        ['groupwire, default pace (1/s, burst 4)', seen('default pace'), doubled('default pace'), seconds('default pace'), def],
        ['groupwire, rate: off', seen('rate: off'), doubled('rate: off'), seconds('rate: off'), off],
        ['bare raw client, no confirmation', seen('bare'), doubled('bare'), seconds('bare'), bare],
        ...rows,
      ],
    },
    figures: [
      {
        label: 'groupwire rate: off', value: off, unit: 'lines/s', baseline: { label: 'bare client', value: bare }, ratio: off / bare, ratioMeaning: meaning,
        limit: { text: `≥ ${MATTERBRIDGE_LINES_PER_SECOND} lines/s (Matterbridge, issue #20), all ${expected} seen`, ok: off >= MATTERBRIDGE_LINES_PER_SECOND && seen('rate: off') === expected },
      },
      {
        label: 'groupwire default pace', value: def, unit: 'lines/s', baseline: { label: 'bare client', value: bare }, ratio: def / bare, ratioMeaning: meaning,
        limit: { text: `≥ 0.95 lines/s (the bucket's 1/s spent on lines), all ${expected} seen`, ok: def >= 0.95 && seen('default pace') === expected },
      },
    ],
    notes: [
      `${ROUNDS} round(s); each path on a connection of its own, ${SETTLE_MS / 1000} s after joining (ngircd's penalty of registration and JOIN run out), the ${LINES} lines posted at once.`,
      'ngircd counts every command a client sends, PING included: groupwire confirms lines with one PING per window of in_flight (20) lines on a server without labeled-response, and keeps its queue in a file; the bare client does neither.',
      'The default-pace figure is bounded by the bucket (1 command a second after a burst of 4), not by ngircd.',
      'lines/s = (lines seen − 1) / (last seen − first seen), on the observer\'s clock; a doubled line is counted, not measured.',
    ],
  });
  if (seen('rate: off') + seen('default pace') < 2 * expected || doubled('rate: off') + doubled('default pace') > 0) process.exitCode = 1;
}

buildOnce();
await main();
