import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, type CliResult } from './cli.js';

/**
 * groupwire as the package runs it: a tsc build (`node <build>/src/cli/main.js`), not the TypeScript
 * sources through tsx. Built into a directory of its own under dist/ (node_modules resolve from the
 * checkout as they do for dist/), removed by `remove()`.
 */
export interface BuiltCli {
  main: string;
  remove(): void;
}

export async function buildCli(name: string): Promise<BuiltCli> {
  const out = join(ROOT, 'dist', `${name}-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const args = [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', out, '--tsBuildInfoFile', join(out, '.tsbuildinfo'), '--sourceMap', 'false', '--declaration', 'false'];
  // Type errors elsewhere in a checkout being edited do not stop tsc from writing the files.
  const result = await collect(spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  const main = join(out, 'src', 'cli', 'main.js');
  if (!existsSync(main)) throw new Error(`the build wrote no ${main}: ${result.stdout}${result.stderr}`);
  return { main, remove: () => rmSync(out, { recursive: true, force: true }) };
}

/** Collects a child's exit code and output. */
export function collect(child: ChildProcess): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => err.push(chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
}

/** A long-running CLI process (`run`): its output so far, and a clean stop. */
export interface Running {
  output(): string;
  stop(): Promise<CliResult>;
}

export function start(command: string[], cwd: string, env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, command, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const done = collect(child);
  return {
    output: () => text,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const result = await done;
      return { ...result, stdout: text };
    },
  };
}
