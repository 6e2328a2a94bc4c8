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
 * too. Every process runs at the same time, each alone in its own heap, and is read at the same age.
 */
const SECONDS = Number(process.env.FOOTPRINT_SECONDS ?? 60);
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

function botsFile(dir: string, name: string, service: ServiceProcess, plugins: unknown[]): string {
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
  const subjects: Subject[] = [
    { label: 'bare node', start: () => nodeScript(STAY) },
    { label: 'floor: node + ws, undici, pino', start: () => nodeScript(`await import('ws'); await import('undici'); await import('pino'); ${STAY}`) },
    { label: "import 'groupwire' (the public entry point)", start: () => nodeScript(`await import(${entry}); ${STAY}`) },
    { label: '(a) groupwire run, no plugins', start: () => groupwireRun(botsFile(dir, 'none', service, [])) },
    {
      label: '(b) groupwire run, logger + responder',
      start: () => groupwireRun(botsFile(dir, 'chain', service, [
        { use: 'logger', with: { dir: join(dir, 'logs') } },
        { use: 'responder', with: { rules: [{ command: 'ping', reply: 'pong' }] } },
      ])),
    },
    {
      label: '(c) groupwire run, relay-irc to ngircd',
      start: () => groupwireRun(botsFile(dir, 'irc', service, [{
        use: 'relay-irc', with: { server: '127.0.0.1', port: irc.port, tls: false, nick: 'gwbot', channels: { general: '#general' } },
      }])),
    },
  ];
  const started = performance.now();
  const children = subjects.map((subject) => subject.start());
  const rss = new Map<string, number>();
  try {
    // Three readings, 10 and 5 s before the age and at it; the lowest counts. V8 gives back the heap a
    // start grew only once the process has been idle a while, at a moment that varies from process to
    // process; one reading would catch some before and some after.
    for (const at of [SECONDS - 10, SECONDS - 5, SECONDS]) {
      await sleep(Math.max(0, at * 1000 - (performance.now() - started)));
      subjects.forEach((subject, i) => {
        const child = children[i]!;
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${subject.label} ended early (${child.exitCode ?? child.signalCode})`);
        const mb = rssBytes(child.pid!) / 1048576;
        rss.set(subject.label, Math.min(rss.get(subject.label) ?? Infinity, mb));
      });
    }
  } finally {
    await Promise.all(children.map((child) => stopChild(child)));
    await irc.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }

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
      columns: ['process', 'RSS MB', 'of the floor'],
      rows: subjects.map((s) => [s.label, rss.get(s.label)!, `${(rss.get(s.label)! / floor).toFixed(2)}x`]),
    },
    figures: [
      figure(subjects[2]!.label, "import 'groupwire'", false),
      figure(subjects[3]!.label, '(a) no plugins', false),
      figure(subjects[4]!.label, '(b) logger + responder', false),
      figure(subjects[5]!.label, '(c) relay-irc', true),
    ],
    notes: [
      `Each subject is a process of its own, all started together and read together (VmRSS at ${SECONDS - 10}, ${SECONDS - 5} and ${SECONDS} s, the lowest kept); groupwire runs from a tsc build of this checkout, against the local service in another process (so no part of the service is in it).`,
      'Matterbridge\'s figure for (c) on this kind of machine was 16.5 MB (#20); a Go binary is not the bar here, Node\'s own floor is.',
    ],
  });
}

buildOnce();
await main();
