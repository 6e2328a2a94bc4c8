import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { ROOT } from './paths.js';
import { rssBytes } from './memory.js';

/**
 * The local service in a process of its own (`groupwire serve`), so that what a bench measures in its
 * own process (a client, the supervisor) does not share an event loop or a heap with the service.
 */
export interface ServiceProcess {
  baseUrl: string;
  ca: string;
  caFile: string;
  adminToken: string;
  pid: number;
  /** POST /_admin/<path> with a JSON body; the answer's JSON, or an error naming the status. */
  admin(path: string, body?: unknown): Promise<any>;
  /** GET /_admin/stats. */
  stats(): Promise<any>;
  rss(): number;
  stop(): Promise<void>;
}

export interface ServiceProcessOptions {
  /** Extra `groupwire serve` flags, e.g. ['--ids', 'big', '--rate-limit', 'off']. */
  args?: string[];
}

export async function startServiceProcess(options: ServiceProcessOptions = {}): Promise<ServiceProcess> {
  const adminToken = randomBytes(16).toString('hex');
  // BENCH_SERVICE_NODE_ARGS: extra node flags for the service (e.g. --cpu-prof), when profiling a bench.
  const nodeArgs = process.env.BENCH_SERVICE_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [
    ...nodeArgs, '--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'serve', '--port', '0', '--admin-token', adminToken,
    '--log-level', 'warn', ...(options.args ?? []),
  ], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = await readyLine(child);
  const caFile = String(ready.ca_file);
  const ca = readFileSync(caFile, 'utf8');
  const baseUrl = String(ready.base_url);
  const adminApi = adminClient({ baseUrl, ca, adminToken });
  return {
    baseUrl, ca, caFile, adminToken, pid: child.pid!,
    admin: adminApi.admin,
    stats: adminApi.stats,
    rss: () => rssBytes(child.pid!),
    async stop() {
      await adminApi.close();
      if (child.exitCode !== null || child.signalCode !== null) return;
      await new Promise<void>((done) => {
        child.once('exit', () => done());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
      });
    },
  };
}

export interface AdminClient {
  /** POST /_admin/<path> with a JSON body; the answer's JSON, or an error naming the status. */
  admin(path: string, body?: unknown): Promise<any>;
  /** GET /_admin/stats. */
  stats(): Promise<any>;
  close(): Promise<void>;
}

/** The admin API of a running service, for a bench's child process that got the address and token. */
export function adminClient(target: { baseUrl: string; ca: string; adminToken: string }): AdminClient {
  const dispatcher = new Agent({ connect: { ca: target.ca }, connections: 4 });
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const answer = await request(`${target.baseUrl}/_admin/${path}`, {
      method, dispatcher,
      headers: { authorization: `Bearer ${target.adminToken}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
      body: method === 'POST' ? JSON.stringify(body ?? {}) : undefined,
    });
    const text = await answer.body.text();
    if (answer.statusCode !== 200) throw new Error(`admin ${path}: ${answer.statusCode} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  return { admin: (path, body) => call('POST', path, body), stats: () => call('GET', 'stats'), close: () => dispatcher.close() };
}

function readyLine(child: ChildProcess): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const newline = out.indexOf('\n');
      if (newline < 0) return;
      child.stdout!.off('data', onData);
      try {
        resolve(JSON.parse(out.slice(0, newline)) as Record<string, unknown>);
      } catch (error) {
        reject(new Error(`groupwire serve printed ${out.slice(0, newline)}: ${(error as Error).message}`));
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code, signal) => reject(new Error(`groupwire serve ended (${code ?? signal}) before it was ready`)));
  });
}
