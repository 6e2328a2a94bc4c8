import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { BUILD, buildOnce } from './lib/build.js';
import { rssBytes } from './lib/memory.js';
import { report, type Figure } from './lib/report.js';
import { startServiceProcess, type ServiceProcess } from './lib/service-process.js';
import { freePort } from '../test/helpers/ports.js';
import { RedisServer } from '../test/helpers/redis-server.js';

/**
 * Workers on Redis (docs/scale-out.md), as `groupwire run` processes of the build:
 * - Failover: three workers share a bot of 3,000 chats in three shards; the worker holding one shard
 *   (1,000 chats) is killed with SIGKILL while members post into its chats. The time until all 3,000
 *   are open again, against the lease (the floor: its units cannot start elsewhere before the lease
 *   expires), and whether every message posted meanwhile was handed on.
 * - Spread: 9,000 chats held by three workers (3 × 3,000) against one process holding all 9,000: time
 *   until all are open, and resident memory per socket (all processes' RSS over the chats).
 */
const LEASE_SECONDS = Number(process.env.WORKERS_LEASE_S ?? 10);
const FAILOVER_CHATS = Number(process.env.WORKERS_FAILOVER_CHATS ?? 3_000);
const SPREAD_CHATS = Number(process.env.WORKERS_SPREAD_CHATS ?? 9_000);
const GROUP = 'many';
const BOT = { email: 'bot@many.example', password: 'bot-many-pass' };
const OWNER = 'owner@many.example';
const MAIN = join(BUILD, 'src', 'cli', 'main.js');

interface Worker { child: ChildProcess; port: number; id: string }

function seed(chats: number): unknown {
  return {
    users: [{ email: OWNER, password: 'owner-many-pass', full_name: 'Chat Owner' }, { email: BOT.email, password: BOT.password, full_name: 'Many Chats Bot' }],
    groups: [{
      name: GROUP, members: [{ email: OWNER, role: 'owner' }, { email: BOT.email, role: 'member' }],
      chats: Array.from({ length: chats }, (_, i) => ({ subject: `chat-${i}`, owner: OWNER, members: [BOT.email], history: [] })),
    }],
  };
}

async function service(dir: string, chats: number): Promise<ServiceProcess> {
  writeFileSync(join(dir, 'seed.yaml'), stringify(seed(chats)));
  return startServiceProcess({ args: ['--seed', join(dir, 'seed.yaml'), '--rate-limit', '2000/4000', '--upgrade-rate-limit', '600/1200'] });
}

function writeConfig(dir: string, svc: ServiceProcess, chats: number, shards: number, redis?: RedisServer): string {
  writeFileSync(join(dir, 'ca.pem'), svc.ca);
  const file = join(dir, `bots-${shards}-${redis ? 'workers' : 'one'}.yaml`);
  writeFileSync(file, stringify({
    service: { base_url: svc.baseUrl, ca_file: './ca.pem', upgrade_rate: { per_second: 600, burst: 1200 } },
    ...(redis ? { coordination: { redis: redis.url, lease_seconds: LEASE_SECONDS, worker_id: '${WORKER_ID}', prefix: `bench${shards}` } } : {}),
    state_dir: './state-${WORKER_ID}',
    ops: { listen: '${OPS_LISTEN}' },
    log: { level: 'warn', pretty: false },
    bots: [{ name: 'many', login: BOT, shards, chats: Array.from({ length: chats }, (_, i) => ({ group: GROUP, chat: `chat-${i}` })) }],
  }));
  return file;
}

async function startWorker(file: string, dir: string, id: string): Promise<Worker> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN, 'run', file], {
    cwd: dir, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, WORKER_ID: id, OPS_LISTEN: `127.0.0.1:${port}` },
  });
  return { child, port, id };
}

async function status(worker: Worker): Promise<any> {
  try {
    const response = await request(`http://127.0.0.1:${worker.port}/status.json`, { headersTimeout: 5_000, bodyTimeout: 5_000 });
    return response.statusCode === 200 ? await response.body.json() : undefined;
  } catch {
    return undefined;
  }
}

/** Open chats per worker, and every chat's cursor by subject. */
async function survey(workers: Worker[]): Promise<{ open: number[]; cursors: Map<string, number> }> {
  const cursors = new Map<string, number>();
  const open = await Promise.all(workers.map(async (worker) => {
    const answer = await status(worker);
    let count = 0;
    for (const bot of answer?.bots ?? []) {
      for (const chat of bot.chats) {
        if (chat.state === 'open') count += 1;
        if (chat.cursor !== null) cursors.set(chat.subject, chat.cursor);
      }
    }
    return count;
  }));
  return { open, cursors };
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<number | undefined> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    if (await check()) return performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

async function stopAll(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map((worker) => new Promise<void>((done) => {
    if (worker.child.exitCode !== null || worker.child.signalCode !== null) return done();
    worker.child.once('exit', () => done());
    worker.child.kill('SIGTERM');
    setTimeout(() => worker.child.kill('SIGKILL'), 20_000).unref();
  })));
}

async function failover(): Promise<{ ms?: number; posted: number; handedOn: number; chats: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bench-failover-'));
  const redis = await RedisServer.start({ appendfsync: 'everysec' });
  const svc = await service(dir, FAILOVER_CHATS);
  const file = writeConfig(dir, svc, FAILOVER_CHATS, 3, redis);
  const workers = [await startWorker(file, dir, 'w1'), await startWorker(file, dir, 'w2'), await startWorker(file, dir, 'w3')];
  try {
    const opened = await until(async () => (await survey(workers)).open.every((count) => count > 0) && (await survey(workers)).open.reduce((a, b) => a + b) === FAILOVER_CHATS, 180_000);
    if (opened === undefined) throw new Error('the workers did not open every chat');
    const { open } = await survey(workers);
    const victim = workers[open.indexOf(Math.max(...open))]!;
    const victimChats = ((await status(victim))?.bots ?? []).flatMap((bot: any) => bot.chats.map((chat: any) => chat.subject as string));
    victim.child.kill('SIGKILL');
    const killedAt = performance.now();
    const survivors = workers.filter((worker) => worker !== victim);
    // Members post into the dead worker's chats while its units wait for their leases to expire.
    const posted = new Map<string, number>();
    for (const subject of victimChats.slice(0, 100)) {
      const message = await svc.admin('chats/messages', { group: GROUP, chat: subject, user: OWNER, message: `while the worker was dead: ${subject}`, count: 1 });
      posted.set(subject, message.msg_num);
    }
    const back = await until(async () => (await survey(survivors)).open.reduce((a, b) => a + b) === FAILOVER_CHATS, 120_000);
    const ms = back === undefined ? undefined : performance.now() - killedAt;
    let handedOn = 0;
    await until(async () => {
      const { cursors } = await survey(survivors);
      handedOn = [...posted].filter(([subject, msgNum]) => (cursors.get(subject) ?? 0) >= msgNum).length;
      return handedOn === posted.size;
    }, 60_000);
    return { ms, posted: posted.size, handedOn, chats: victimChats.length };
  } finally {
    await stopAll(workers);
    await svc.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function spread(shards: number): Promise<{ ms?: number; rssPerSocket: number; rssMB: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bench-spread-'));
  const redis = shards > 1 ? await RedisServer.start({ appendfsync: 'everysec' }) : undefined;
  const svc = await service(dir, SPREAD_CHATS);
  const file = writeConfig(dir, svc, SPREAD_CHATS, shards, redis);
  const started = performance.now();
  const workers: Worker[] = [];
  for (let index = 0; index < shards; index += 1) workers.push(await startWorker(file, dir, `w${index + 1}`));
  try {
    const opened = await until(async () => (await survey(workers)).open.reduce((a, b) => a + b) === SPREAD_CHATS, 300_000);
    const ms = opened === undefined ? undefined : performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const rss = workers.reduce((sum, worker) => sum + rssBytes(worker.child.pid!), 0);
    return { ms, rssPerSocket: rss / SPREAD_CHATS, rssMB: rss / 2 ** 20 };
  } finally {
    await stopAll(workers);
    await svc.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

buildOnce();
const down = await failover();
const one = await spread(1);
const three = await spread(3);
const seconds = (ms?: number) => (ms === undefined ? NaN : Math.round(ms / 100) / 10);
const figures: Figure[] = [
  {
    label: `failover of ${down.chats} chats (SIGKILL of their worker) until all open on the others`, value: seconds(down.ms), unit: 's',
    baseline: { label: `the lease (${LEASE_SECONDS} s), the floor`, value: LEASE_SECONDS }, ratio: seconds(down.ms) / LEASE_SECONDS,
    ratioMeaning: 'of the lease (1 is the floor; lower is impossible)',
    limit: { text: 'every message posted meanwhile handed on, and within lease + 10 s', ok: down.handedOn === down.posted && seconds(down.ms) <= LEASE_SECONDS + 10 },
  },
  {
    label: `${SPREAD_CHATS} chats on 3 workers: time until all open`, value: seconds(three.ms), unit: 's',
    baseline: { label: 'one process', value: seconds(one.ms) }, ratio: seconds(three.ms) / seconds(one.ms), ratioMeaning: 'of one process\'s time (lower is better)',
  },
  {
    label: `${SPREAD_CHATS} chats on 3 workers: RSS per socket (all three processes)`, value: Math.round(three.rssPerSocket / 102.4) / 10, unit: 'KB',
    baseline: { label: 'one process', value: Math.round(one.rssPerSocket / 102.4) / 10 }, ratio: three.rssPerSocket / one.rssPerSocket,
    ratioMeaning: 'of one process\'s memory per socket (three Node heaps cost their fixed part thrice)',
  },
];
report({
  name: 'workers', title: 'Workers on Redis: failover and spread',
  table: {
    columns: ['case', 'chats', 'time (s)', 'RSS (MB)', 'RSS/socket (KB)', 'messages posted meanwhile', 'handed on'],
    rows: [
      ['failover (kill -9 one of 3)', down.chats, seconds(down.ms), '', '', down.posted, down.handedOn],
      ['one process', SPREAD_CHATS, seconds(one.ms), Math.round(one.rssMB), Math.round(one.rssPerSocket / 102.4) / 10, '', ''],
      ['three workers', SPREAD_CHATS, seconds(three.ms), Math.round(three.rssMB), Math.round(three.rssPerSocket / 102.4) / 10, '', ''],
    ],
  },
  figures,
  notes: [
    `Leases of ${LEASE_SECONDS} s (renewed every ${LEASE_SECONDS / 5} s); Redis with appendfsync everysec; the service in its own process with its limits raised (REST 2,000/s, upgrades 600/s). Each worker is a \`groupwire run\` of the build.`,
    'The failover time runs from the SIGKILL to the last of the dead worker\'s chats open on a survivor: the lease must expire first (the floor), then the taker loads the unit\'s state from Redis, logs in and opens the sockets.',
  ],
});
