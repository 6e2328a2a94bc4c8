import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accepts, freePort } from './ports.js';
import { requireTool } from './require-tool.js';

/**
 * A real redis-server from Debian for the coordination tests, in the foreground on a free loopback
 * port, with its data in a temp dir. AOF is on with `appendfsync always` (what docs/scale-out.md asks of a
 * deployment that must lose nothing), so `restart()` (SIGTERM or SIGKILL, then start again on the same
 * port and dir) keeps everything written; `pause()`/`resume()` stop and continue it (SIGSTOP/SIGCONT) to
 * make it unreachable without closing its sockets.
 */
export const REDIS_SERVER = '/usr/bin/redis-server';

export class RedisServer {
  readonly dir = mkdtempSync(join(tmpdir(), 'groupwire-redis-'));
  port = 0;
  private child: ChildProcess | undefined;
  private output = '';

  private constructor(private readonly appendfsync: 'always' | 'everysec' | 'off') {}

  static async start(options: { appendfsync?: 'always' | 'everysec' | 'off' } = {}): Promise<RedisServer> {
    const server = new RedisServer(options.appendfsync ?? 'always');
    server.port = await freePort();
    await server.run();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  private async run(): Promise<void> {
    const aof = this.appendfsync === 'off' ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', this.appendfsync];
    this.output = '';
    const child = spawn(requireTool(REDIS_SERVER, 'redis-server'), [
      '--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', ...aof,
      '--daemonize', 'no', '--protected-mode', 'yes', '--loglevel', 'warning',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child = child;
    const deadline = Date.now() + 10_000;
    while (!(await accepts(this.port))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server did not start on port ${this.port}:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Stops it (SIGTERM: a clean shutdown; SIGKILL: a crash) and starts it again on the same port and data. */
  async restart(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM', downMs = 0): Promise<void> {
    await this.halt(signal);
    if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.run();
  }

  /** Stops the server process and waits for it to exit. */
  async halt(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }

  /** Starts it again after halt(). */
  async resumeAfterHalt(): Promise<void> {
    await this.run();
  }

  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    this.resume();
    await this.halt('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
