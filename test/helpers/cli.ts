import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEMO, type DemoUser, type TestService } from './service.js';

/** The repository root: the CLI runs from here (`node --import tsx src/cli/main.ts`). */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// tsx as a file URL, so the CLI also runs from another working directory.
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Every output of this test file's CLI runs, to check no password or token ever shows. */
export const outputs: string[] = [];

/** The environment without any GROUPWIRE_* setting or extra CA of the test runner, plus `vars`. */
export function cleanEnv(vars: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('GROUPWIRE_') && key !== 'NODE_EXTRA_CA_CERTS') env[key] = value;
  }
  return { ...env, ...vars };
}

/** The environment for a demo account (e-mail and password) or an API token against `svc`. */
export function envFor(svc: TestService, who: DemoUser | { token: string }, vars: Record<string, string> = {}): NodeJS.ProcessEnv {
  const place = { GROUPWIRE_URL: svc.baseUrl, GROUPWIRE_CA_FILE: svc.service.caFile! };
  if (typeof who === 'object') return cleanEnv({ ...place, GROUPWIRE_TOKEN: who.token, ...vars });
  const [email, password] = DEMO[who];
  return cleanEnv({ ...place, GROUPWIRE_EMAIL: email, GROUPWIRE_PASSWORD: password, ...vars });
}

/**
 * Runs `groupwire ARGS` as a child process (from the sources) and collects its exit code and output;
 * `input`, when given, is written to its stdin, which is then closed.
 */
export function runCli(args: string[], env: NodeJS.ProcessEnv, cwd = ROOT, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, `${ROOT}src/cli/main.ts`, ...args], {
      cwd, env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (input !== undefined) child.stdin!.end(input);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => err.push(chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      const result = { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
      outputs.push(result.stdout, result.stderr);
      resolve(result);
    });
  });
}

/** The passwords of the demo accounts: none may appear in any output. */
export const PASSWORDS = Object.values(DEMO).map(([, password]) => password);

/** Expects exit code 0, showing stderr when it is not. */
export function succeeded(result: CliResult): string {
  if (result.code !== 0) throw new Error(`expected exit 0, got ${result.code}\nstderr: ${result.stderr}\nstdout: ${result.stdout.slice(0, 500)}`);
  return result.stdout;
}
