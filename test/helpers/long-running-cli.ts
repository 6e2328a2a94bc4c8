import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { ROOT } from './cli.js';

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** A `groupwire` command left running as a child process (run, serve), its output collected as it comes. */
export interface RunningCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout or stderr (the one named) matches `pattern`; fails if the process ends first or after `timeoutMs`. */
  waitFor(stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends a signal and resolves with how the process ended. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with how the process ended (at once when it has). */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startCli(args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): RunningCli {
  const child = spawn(process.execPath, ['--import', TSX, `${ROOT}src/cli/main.ts`, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const text = { stdout: '', stderr: '' };
  const waiters = new Set<() => void>();
  const wake = () => { for (const waiter of [...waiters]) waiter(); };
  child.stdout!.on('data', (chunk: Buffer) => { text.stdout += chunk.toString('utf8'); wake(); });
  child.stderr!.on('data', (chunk: Buffer) => { text.stderr += chunk.toString('utf8'); wake(); });
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
      wake();
    });
  });
  const isRunning = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    waitFor(stream, pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`timed out waiting for ${pattern} on ${stream}\nstderr: ${text.stderr.slice(-2000)}`)), timeoutMs);
        const check = () => {
          const match = pattern.exec(text[stream]);
          if (match) finish(undefined, match);
          else if (!isRunning()) finish(new Error(`the process ended (${child.exitCode ?? child.signalCode}) before ${pattern} on ${stream}\nstderr: ${text.stderr.slice(-2000)}`));
        };
        function finish(error: Error | undefined, match?: RegExpMatchArray) {
          clearTimeout(timer);
          waiters.delete(check);
          if (error) reject(error);
          else resolve(match!);
        }
        waiters.add(check);
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (isRunning()) child.kill(signal);
      return ended;
    },
    exited: () => ended,
  };
}
