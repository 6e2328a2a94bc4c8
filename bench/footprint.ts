import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { IrcServer } from '../test/helpers/irc-server.js';
import { BUILD, buildOnce } from './lib/build.js';
import { stopChild } from './lib/child.js';
import { rssBytes } from './lib/memory.js';
import { ROOT } from './lib/paths.js';
import { report } from './lib/report.js';
import { startServiceProcess, type ServiceProcess } from './lib/service-process.js';

/**
 * Resident memory of `groupwire run` (#20), 60 s after start, with one bot and one chat against a
 * service in another process: (a) no plugins, (b) logger + responder, (c) relay-irc to a real ngircd;
 * and of a script that imports the public entry point alone. The floor is a Node process that has only
 * imported ws, undici and pino (the design's packages every client needs); a bare Node process is shown
 * too, and a script doing only what (c) cannot do without (a verified TLS request to the service, zod
 * imported as bots.yaml's and the plugins' schemas need it, irc-framework connected and in the
 * channel), so what groupwire itself adds can be told from what its parts cost. Every process runs at
 * the same time, each alone in its own heap, and is read at the same age.
 *
 * The same process reads up to 10 MB apart from one start to the next (when V8 and malloc give back
 * what a start grew varies), so each subject runs as COPIES processes and the median counts.
 */
const SECONDS = Number(process.env.FOOTPRINT_SECONDS ?? 60);
const COPIES = Number(process.env.FOOTPRINT_COPIES ?? 3);
const STAGGER_MS = 1000;
const LIMIT = 1.1;

interface Subject {
  label: string;
  start(): ChildProcess;
}

function nodeScript(source: string): ChildProcess {
  return spawn(process.execPath, ['--input-type=module', '-e', source], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** Keeps a script alive after its imports, as a bot stays up. */
const STAY = 'setInterval(() => {}, 1 << 30);';

/** Each copy of a subject gets a bots.yaml and a state folder of its own (a state folder takes one process). */
let copies = 0;

function botsFile(dir: string, name: string, service: ServiceProcess, plugins: unknown[]): string {
  copies += 1;
  name = `${name}-${copies}`;
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, stringify({
    service: { base_url: service.baseUrl, ca_file: service.caFile },
    state_dir: join(dir, `state-${name}`),
    log: { level: 'warn', pretty: false },
    // The operations endpoint stays on, as by default; each process on a port of its own.
    ops: { listen: '127.0.0.1:0' },
    bots: [{ name: 'bot', login: { email: 'bot@example.com', password: 'bot-demo' }, chats: [{ group: 'demo', chat: 'general' }], plugins }],
  }));
  return file;
}

function groupwireRun(file: string): ChildProcess {
  return spawn(process.execPath, [join(BUILD, 'src/cli/main.js'), 'run', file], { cwd: ROOT, stdio: ['ignore', 2, 2] });
}

async function main(): Promise<void> {
  const service = await startServiceProcess();
  const irc = await IrcServer.start();
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-footprint-'));
  const entry = JSON.stringify(join(BUILD, 'src/index.js'));
  const floorImports = "await import('ws'); await import('undici'); await import('pino');";
  const subjects: Subject[] = [
    { label: 'bare node', start: () => nodeScript(STAY) },
    { label: 'floor: node + ws, undici, pino', start: () => nodeScript(`${floorImports} ${STAY}`) },
    { label: "the floor + what (c) cannot do without: a TLS request to the service, zod, irc-framework in the channel", start: () => nodeScript(`${floorImports} ${partsOfRelayIrc(service, irc.port)} ${STAY}`) },
    { label: "import 'groupwire' (the public entry point)", start: () => nodeScript(`await import(${entry}); ${STAY}`) },
    { label: '(a) groupwire run, no plugins', start: () => groupwireRun(botsFile(dir, 'none', service, [])) },
    {
      label: '(b) groupwire run, logger + responder',
      start: () => groupwireRun(botsFile(dir, 'chain', service, [
        { use: 'logger', with: { dir: mkdtempSync(join(dir, 'logs-')) } },
        { use: 'responder', with: { rules: [{ command: 'ping', reply: 'pong' }] } },
      ])),
    },
    {
      label: '(c) groupwire run, relay-irc to ngircd',
      start: () => groupwireRun(botsFile(dir, 'irc', service, [{
        // A nick for each copy: a taken nick would keep the relay asking for it back, work the others do not do.
        use: 'relay-irc', with: { server: '127.0.0.1', port: irc.port, tls: false, nick: `gwbot${copies + 1}`, channels: { general: '#general' } },
      }])),
    },
  ];
  const children: Array<{ subject: Subject; copy: number; child: ChildProcess; startedAt: number }> = [];
  const lowest = new Map<string, number[]>();
  try {
    // Started one at a time, STAGGER_MS apart, copy by copy across the subjects: 20 starts at once on
    // two cores slow each other down, and a start that took longer leaves a bigger heap behind.
    for (let copy = 0; copy < COPIES; copy += 1) {
      for (const subject of subjects) {
        children.push({ subject, copy, child: subject.start(), startedAt: performance.now() });
        await sleep(STAGGER_MS);
      }
    }
    // Three readings of each process, 10 and 5 s before its age and at it; the lowest counts. V8 gives
    // back the heap a start grew only once the process has been idle a while, at a moment that varies
    // from process to process; one reading would catch some before and some after.
    const readings = children.flatMap((entry) => [SECONDS - 10, SECONDS - 5, SECONDS].map((age) => ({ entry, at: entry.startedAt + age * 1000 })));
    readings.sort((x, y) => x.at - y.at);
    for (const { entry: { subject, copy, child }, at } of readings) {
      await sleep(Math.max(0, at - performance.now()));
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${subject.label} ended early (${child.exitCode ?? child.signalCode})`);
      const mb = rssBytes(child.pid!) / 1048576;
      const lows = lowest.get(subject.label) ?? [];
      lows[copy] = Math.min(lows[copy] ?? Infinity, mb);
      lowest.set(subject.label, lows);
    }
  } finally {
    await Promise.all(children.map(({ child }) => stopChild(child)));
    await irc.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const rss = new Map([...lowest].map(([label, readings]) => [label, median(readings)]));
  const floorLabel = subjects[1]!.label;
  const floor = rss.get(floorLabel)!;
  const figure = (label: string, short: string, limited: boolean) => {
    const value = rss.get(label)!;
    const ratio = value / floor;
    return {
      label: short, value, unit: 'MB', baseline: { label: 'the floor (ws, undici, pino)', value: floor }, ratio,
      ratioMeaning: 'of the floor (lower is better)',
      ...(limited ? { limit: { text: `within ${LIMIT}x the floor`, ok: ratio <= LIMIT } } : {}),
    };
  };
  report({
    name: 'footprint',
    title: `Footprint: resident memory ${SECONDS} s after start, one bot and one chat (MB)`,
    table: {
      columns: ['process', 'RSS MB (median)', 'of the floor', `each copy's MB`],
      rows: subjects.map((s) => [s.label, rss.get(s.label)!, `${(rss.get(s.label)! / floor).toFixed(2)}x`, lowest.get(s.label)!.map((mb) => mb.toFixed(1)).join(' / ')]),
    },
    figures: [
      figure(subjects[2]!.label, "what (c) cannot do without", false),
      figure(subjects[3]!.label, "import 'groupwire'", false),
      figure(subjects[4]!.label, '(a) no plugins', false),
      figure(subjects[5]!.label, '(b) logger + responder', false),
      figure(subjects[6]!.label, '(c) relay-irc', true),
      {
        label: '(c) relay-irc over what it cannot do without', value: rss.get(subjects[6]!.label)!, unit: 'MB',
        baseline: { label: 'the floor + TLS, zod, irc-framework', value: rss.get(subjects[2]!.label)! },
        ratio: rss.get(subjects[6]!.label)! / rss.get(subjects[2]!.label)!, ratioMeaning: 'of those parts alone (lower is better)',
      },
    ],
    notes: [
      `Each subject is ${COPIES} processes of its own, started ${STAGGER_MS / 1000} s apart and each read at the same age (VmRSS at ${SECONDS - 10}, ${SECONDS - 5} and ${SECONDS} s after its start, the lowest of each process kept, the median of the copies shown); groupwire runs from a tsc build of this checkout, against the local service in another process (so no part of the service is in it).`,
      'What (c) cannot do without: a verified TLS request to the service (the CA file loaded), zod imported (bots.yaml and every plugin option are zod schemas, and the plugin API exposes z), irc-framework connected and in the channel. Each part alone costs a few MB of the floor; loading many modules leaves parser memory malloc keeps.',
      'Matterbridge\'s figure for (c) on this kind of machine was 16.5 MB (#20); a Go binary is not the bar here, Node\'s own floor is.',
    ],
  });
}

/** Source for a script that does what a bot with relay-irc cannot do without, nothing of groupwire. */
function partsOfRelayIrc(service: ServiceProcess, ircPort: number): string {
  return `const { readFileSync } = await import('node:fs');
    const { Agent, request } = await import('undici');
    const agent = new Agent({ connect: { ca: readFileSync(${JSON.stringify(service.caFile)}) } });
    await (await request(${JSON.stringify(`${service.baseUrl}/api/v1/getchats`)}, { dispatcher: agent })).body.text();
    await import('zod');
    const { Client } = (await import('irc-framework')).default;
    const irc = new Client();
    irc.on('registered', () => irc.join('#general'));
    irc.connect({ host: '127.0.0.1', port: ${ircPort}, nick: 'parts' + process.pid % 10000 });`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

buildOnce();
await main();
