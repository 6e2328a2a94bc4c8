import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { cleanEnv } from './cli.js';
import { startCli, type RunningCli } from './long-running-cli.js';
import { freePort } from './ports.js';
import type { RedisServer } from './redis-server.js';
import { DEMO, type TestService } from './service.js';
import type { BotSpec } from './supervisor.js';

/**
 * Several `groupwire run` workers of one bots.yaml with `coordination:` (docs/scale-out.md), each a
 * child process with its own state_dir and operations port, against one local service and one Redis.
 * Every worker logs at info in JSON: `unit started` / `unit stopped` lines (with their time) say which
 * worker ran which unit when, and are checked afterwards for overlaps.
 */
export interface UnitInterval {
  unit: string;
  worker: string;
  from: number;
  /** Undefined while it runs (or when the worker was killed: then `killedAt`). */
  to?: number;
}

export interface ClusterWorker {
  id: string;
  cli: RunningCli;
  opsPort: number;
  /** Set when the test killed it (SIGKILL): its units ended then. */
  killedAt?: number;
  /** Times it was stopped with SIGSTOP, and continued. */
  paused: Array<{ from: number; to?: number }>;
}

export class WorkerCluster {
  readonly dir = mkdtempSync(join(tmpdir(), 'groupwire-workers-'));
  readonly configFile = join(this.dir, 'bots.yaml');
  /** Every worker started, in order (the dead ones too: their logs are evidence). */
  readonly workers: ClusterWorker[] = [];

  constructor(
    private readonly svc: TestService,
    private readonly redis: RedisServer,
    private readonly settings: { leaseSeconds?: number; prefix?: string } = {},
  ) {
    writeFileSync(join(this.dir, 'ca.pem'), svc.service.ca);
  }

  /** Writes bots.yaml: the bots (logged in as the demo bot unless they say), coordination on Redis. */
  writeConfig(bots: BotSpec[], extra: Record<string, unknown> = {}): void {
    const config = {
      service: { base_url: this.svc.baseUrl, ca_file: './ca.pem' },
      coordination: { redis: '${REDIS_URL}', lease_seconds: this.settings.leaseSeconds ?? 3, worker_id: '${WORKER_ID}', prefix: this.settings.prefix ?? 'gwtest' },
      // Each worker its own state_dir (ops.json); the state that moves with a unit is in Redis.
      state_dir: './state-${WORKER_ID}',
      ops: { listen: '${OPS_LISTEN}' },
      log: { level: 'info', pretty: false },
      ...extra,
      bots: bots.map((bot, index) => ({
        ...bot,
        name: bot.name ?? `bot${index}`,
        login: bot.login ?? { email: DEMO.bot[0], password: DEMO.bot[1] },
        chats: bot.chats.map((chat) => ({ group: 'demo', ...chat })),
      })),
    };
    writeFileSync(this.configFile, stringify(config));
  }

  /** Starts worker `id`; resolves once it has joined the workers. */
  async start(id: string): Promise<ClusterWorker> {
    const opsPort = await freePort();
    const cli = startCli(['run', this.configFile], cleanEnv({ REDIS_URL: this.redis.url, WORKER_ID: id, OPS_LISTEN: `127.0.0.1:${opsPort}` }), this.dir);
    const worker: ClusterWorker = { id, cli, opsPort, paused: [] };
    this.workers.push(worker);
    await cli.waitFor('stderr', /joining the workers/, 60_000);
    return worker;
  }

  live(): ClusterWorker[] {
    return this.workers.filter((worker) => worker.killedAt === undefined && worker.cli.child.exitCode === null && worker.cli.child.signalCode === null);
  }

  byId(id: string): ClusterWorker {
    const worker = this.live().find((candidate) => candidate.id === id);
    if (!worker) throw new Error(`no live worker ${id}`);
    return worker;
  }

  async kill(id: string): Promise<void> {
    const worker = this.byId(id);
    worker.killedAt = Date.now();
    await worker.cli.stop('SIGKILL');
  }

  /** SIGTERM: the worker hands its units over and exits. */
  async terminate(id: string): Promise<{ code: number | null }> {
    return this.byId(id).cli.stop('SIGTERM');
  }

  pause(id: string): void {
    const worker = this.byId(id);
    worker.paused.push({ from: Date.now() });
    worker.cli.child.kill('SIGSTOP');
  }

  resume(id: string): void {
    const worker = this.byId(id);
    worker.cli.child.kill('SIGCONT');
    worker.paused.at(-1)!.to = Date.now();
  }

  /** A live, unpaused worker's /status.json (undefined when it does not answer within 2 s). */
  async status(worker: ClusterWorker): Promise<any> {
    try {
      const response = await request(`http://127.0.0.1:${worker.opsPort}/status.json`, { headersTimeout: 2_000, bodyTimeout: 2_000 });
      if (response.statusCode !== 200) return undefined;
      return await response.body.json();
    } catch {
      return undefined;
    }
  }

  /** Which worker runs which unit now, from every answering worker's status: unit → workers. */
  async running(): Promise<Map<string, string[]>> {
    const held = new Map<string, string[]>();
    const workers = this.live().filter((worker) => worker.paused.every((pause) => pause.to !== undefined));
    const statuses = await Promise.all(workers.map((worker) => this.status(worker)));
    statuses.forEach((status, index) => {
      for (const lease of status?.coordination?.held ?? []) held.set(lease.unit, [...(held.get(lease.unit) ?? []), workers[index]!.id]);
    });
    return held;
  }

  /** Every unit's runs, from the workers' logs: started and stopped lines; a killed worker's runs end at its kill. */
  intervals(): UnitInterval[] {
    const intervals: UnitInterval[] = [];
    for (const worker of this.workers) {
      const open = new Map<string, UnitInterval>();
      for (const line of worker.cli.stderr().split('\n')) {
        if (!line.startsWith('{')) continue;
        let entry: { msg?: string; unit?: string; time?: number };
        try {
          entry = JSON.parse(line) as typeof entry;
        } catch {
          continue;
        }
        if (!entry.unit || typeof entry.time !== 'number') continue;
        if (entry.msg === 'unit started') {
          const interval = { unit: entry.unit, worker: worker.id, from: entry.time };
          open.set(entry.unit, interval);
          intervals.push(interval);
        } else if (entry.msg === 'unit stopped') {
          const interval = open.get(entry.unit);
          if (interval) interval.to = entry.time;
          open.delete(entry.unit);
        }
      }
      if (worker.killedAt !== undefined) for (const interval of open.values()) interval.to = worker.killedAt;
    }
    return intervals;
  }

  /** Pairs of runs of one unit on two workers that overlap in time (none may). */
  overlaps(): Array<[UnitInterval, UnitInterval]> {
    const found: Array<[UnitInterval, UnitInterval]> = [];
    const all = this.intervals();
    for (const a of all) {
      for (const b of all) {
        if (a === b || a.unit !== b.unit || a.worker >= b.worker) continue;
        const aEnd = a.to ?? Infinity;
        const bEnd = b.to ?? Infinity;
        if (a.from < bEnd && b.from < aEnd) found.push([a, b]);
      }
    }
    return found;
  }

  /** Stops every worker still running (SIGKILL: the test is over) and removes the temp dir. */
  async close(): Promise<void> {
    for (const worker of this.live()) {
      worker.cli.child.kill('SIGCONT');
      await worker.cli.stop('SIGKILL');
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
