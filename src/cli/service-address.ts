import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { demoStartCommands } from './demo-start-command.js';
import { UsageError } from './usage-error.js';

/** Where a running demo or `groupwire serve` tells other terminals its address (relative to the working directory). */
export const DEMO_FILE = join('.groupwire', 'demo.json');

export interface ServiceAddress {
  url: string;
  caFile: string | undefined;
  /** Set when the address came from the demo file rather than a flag or the environment. */
  fromDemoFile: boolean;
}

/** The demo file names a demo (or serve) whose process has ended: nothing to connect to. Exit 1, not a usage mistake. */
export class DemoNotRunningError extends Error {
  override name = 'DemoNotRunningError';
}

/**
 * The data of the demo's service, kept after the demo stops (the repo's bots.yaml has state_dir
 * ./.groupwire; demo-state.ts's DEFAULT_SERVICE_STATE inside it): its being here tells a demo that
 * has stopped from a directory where none ever ran.
 */
export const DEMO_SERVICE_DATA = join('.groupwire', 'local-service.json');

/** "The demo is not running", with the command that starts it from `cwd` (npm start in the checkout, else npx groupwire demo). */
export function demoNotRunning(cwd = process.cwd()): string {
  return `the demo is not running: start it with ${demoStartCommands(cwd).start} (or groupwire serve)`;
}

/** Retries for a client of the demo: it is local, so a refused connection means it is gone (not 10 s of retries). */
export const DEMO_RETRY = { retries: 2, baseDelayMs: 200 };

// The address read from the demo file in this run, so a refused connection can be said as "not running".
let demoAddress: string | undefined;

/**
 * The service's address: --url, else GROUPWIRE_URL, else the demo file in `cwd` (written by `npm
 * start` and `groupwire serve` while they run). The CA goes with the address: --ca-file or
 * GROUPWIRE_CA_FILE win, else the demo file's ca_file when the address is the demo's.
 */
export function findService(
  flags: { url?: string; caFile?: string }, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd(),
): ServiceAddress {
  const value = (text: string | undefined) => (text === undefined || text === '' ? undefined : text);
  const caFile = value(flags.caFile) ?? value(env.GROUPWIRE_CA_FILE);
  const url = value(flags.url) ?? value(env.GROUPWIRE_URL);
  if (url) return { url, caFile, fromDemoFile: false };
  const demo = readDemoFile(cwd);
  if (!demo && existsSync(join(cwd, DEMO_SERVICE_DATA))) {
    // A demo ran here and stopped (it removes the demo file as it stops, its conversation stays): say
    // that, as the README promises, rather than ask for an address.
    throw new DemoNotRunningError(`${demoNotRunning(cwd)} (its conversation is kept in ${DEMO_SERVICE_DATA}, but no demo runs from this directory now: ${DEMO_FILE} is not there)`);
  }
  if (!demo) {
    throw new UsageError(`no service address: set GROUPWIRE_URL or pass --url https://host[:port] (or start the demo in this directory with ${demoStartCommands(cwd).start}, which writes ${DEMO_FILE})`);
  }
  if (demo.pid !== undefined && !processIsAlive(demo.pid)) {
    throw new DemoNotRunningError(`${demoNotRunning(cwd)} (${DEMO_FILE} is left from process ${demo.pid}, which has ended)`);
  }
  demoAddress = demo.base_url;
  return { url: demo.base_url, caFile: caFile ?? demo.ca_file, fromDemoFile: true };
}

/**
 * "The demo is not running" for a connection refused at the address the demo file gave (its process
 * may be alive but no longer a demo, or the file was copied), else undefined.
 */
export function demoUnreachable(error: unknown): string | undefined {
  if (demoAddress === undefined || !isConnectionRefused(error)) return undefined;
  return `${demoNotRunning()} (nothing answers at ${demoAddress}, the address in ${DEMO_FILE})`;
}

interface DemoFileContent {
  base_url: string;
  ca_file: string | undefined;
  pid: number | undefined;
}

function readDemoFile(cwd: string): DemoFileContent | undefined {
  const path = join(cwd, DEMO_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsageError(`cannot read ${DEMO_FILE}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  let content: Record<string, unknown>;
  try {
    content = JSON.parse(text) as Record<string, unknown>;
  } catch {
    content = {};
  }
  const { base_url: url, ca_file: caFile, pid } = content ?? {};
  if (typeof url !== 'string' || url === '') {
    throw new UsageError(`${DEMO_FILE} holds no base_url: delete it and start the demo again (${demoStartCommands(cwd).start}), or set GROUPWIRE_URL`);
  }
  return {
    base_url: url,
    ca_file: typeof caFile === 'string' && caFile !== '' ? caFile : undefined,
    pid: typeof pid === 'number' && Number.isSafeInteger(pid) && pid > 0 ? pid : undefined,
  };
}

/** Whether a process with this id exists (signal 0 tests without sending anything). */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isConnectionRefused(error: unknown): boolean {
  // undici wraps the socket's error: look along the cause chain.
  for (let current = error, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth += 1) {
    const code = (current as NodeJS.ErrnoException).code;
    if (code === 'ECONNREFUSED') return true;
    if (current instanceof AggregateError && current.errors.some(isConnectionRefused)) return true;
  }
  return false;
}
