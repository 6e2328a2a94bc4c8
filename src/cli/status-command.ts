import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { DEFAULT_OPS_LISTEN } from '../config/bots-config.js';
import { OPS_FILE, type OpsListenError } from '../ops/operations.js';
import type { StatusSnapshot } from '../ops/status-snapshot.js';
import { parseFlags } from './command.js';
import { describeUnset, endpointError, nonEmpty, readOpsFile, readOpsSettings } from './running-process.js';
import { EXIT, registerSecret, writeErr, writeOut } from './output.js';
import { terminalJson } from './terminal-text.js';
import { statusTable } from './status-table.js';
import { UsageError } from './usage-error.js';

export const STATUS_HELP = `Usage: groupwire status [bots.yaml] [--url URL] [--token TOKEN] [--json]

Shows what a running groupwire run is doing, read from its operations endpoint (/status.json): each
bot, each chat's state, lag, last message, outbox and reconnects, each plugin (a relay's connection
and queues), the last reload and the last 5 warnings and errors, the version and uptime.

The endpoint is --url, else the one <state_dir>/ops.json of bots.yaml names (groupwire run writes it
while it runs), else bots.yaml's ops.listen (default ${DEFAULT_OPS_LISTEN}). The token is --token, else
GROUPWIRE_OPS_TOKEN, else bots.yaml's ops.token. bots.yaml defaults to ./bots.yaml; an environment
variable it names that is not set here is read as empty (only state_dir and ops: are used), and one
that state_dir or ops.listen needs is named, with where it is written, rather than a broken address
tried. A groupwire run whose port is taken says so in its ops.json: status says by whom (exit 3).

Exit codes: 0 ready, 1 not ready (a bot not logged in, a chat not open), 2 a usage mistake,
3 the endpoint cannot be reached or refused the request.

Options:
  --url URL       the endpoint, like http://127.0.0.1:9464
  --token TOKEN   ops.token of the running process
  --json          the whole snapshot as JSON (the exit code still says ready or not)
  -h, --help      this text
`;

/** `groupwire status`'s exit code when it cannot read the endpoint (not reachable, refused, not groupwire). */
export const EXIT_UNREACHABLE = 3;

/** Where the endpoint is, and how it was found (said when it cannot be reached). */
interface Target {
  url: string;
  token?: string;
  from: string;
  /** Why there is nothing to ask (ops: false), said instead of trying. */
  none?: string;
}

export async function statusCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args, allowPositionals: true,
    options: { url: { type: 'string' }, token: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    writeOut(STATUS_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 1) throw new UsageError('give one bots.yaml at most');
  const target = await findTarget(positionals[0], values.url, values.token ?? nonEmpty(process.env.GROUPWIRE_OPS_TOKEN));
  registerSecret(target.token);
  if (target.none) return unreachable(`${target.none}.`);
  let answer;
  try {
    answer = await request(`${target.url}/status.json`, {
      headers: target.token ? { authorization: `Bearer ${target.token}` } : {}, headersTimeout: 10_000, bodyTimeout: 10_000,
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return unreachable(`cannot reach the operations endpoint at ${target.url} (${code}; ${target.from}).\n` +
      'Check that groupwire run is running, with the ops: endpoint on in its bots.yaml, and that this is its address ' +
      '(give --url, or the bots.yaml it runs).');
  }
  const text = await answer.body.text();
  if (answer.statusCode === 401) {
    return unreachable(`the operations endpoint at ${target.url} wants ${target.token ? 'another' : 'a'} token: ` +
      'give --token, GROUPWIRE_OPS_TOKEN, or ops.token in bots.yaml (with its environment variables set).');
  }
  let snapshot: StatusSnapshot;
  try {
    if (answer.statusCode !== 200) throw new Error(`answered ${answer.statusCode}${endpointError(text)}`);
    snapshot = JSON.parse(text) as StatusSnapshot;
    if (typeof snapshot.ready !== 'boolean' || !Array.isArray(snapshot.bots)) throw new Error('answered something that is not a groupwire status');
  } catch (error) {
    return unreachable(`the operations endpoint at ${target.url} ${(error as Error).message.replace(/^Unexpected token.*/, 'answered something that is not JSON')} (${target.from}).`);
  }
  writeOut(values.json ? `${terminalJson(JSON.stringify(snapshot, null, 2))}\n` : statusTable(snapshot, target.url));
  return snapshot.ready ? EXIT.ok : EXIT.error;
}

function unreachable(message: string): number {
  writeErr(`groupwire: ${message}\n`);
  return EXIT_UNREACHABLE;
}

async function findTarget(file: string | undefined, url: string | undefined, token: string | undefined): Promise<Target> {
  const path = file ?? 'bots.yaml';
  // bots.yaml is read only for what the flags and the environment did not say; a default one may be absent.
  const needed = url === undefined || token === undefined;
  const config = needed && (file !== undefined || existsSync(path)) ? await readOpsSettings(path) : undefined;
  const withToken = token ?? config?.token;
  if (url !== undefined) return { url: endpointUrl(url), token: withToken, from: 'from --url' };
  // No bots.yaml here and none named: the default address (a groupwire run from elsewhere, default ops:).
  if (!config) return { url: listenUrl(DEFAULT_OPS_LISTEN), token: withToken, from: `the default address; no ${path} here` };
  const opsFile = join(config.stateDir, OPS_FILE);
  const found = readOpsFile(opsFile);
  const running = found?.alive ? found : undefined;
  if (running?.url) return { url: running.url, token: withToken, from: `from ${opsFile}` };
  if (running?.listenError) return { url: '', from: '', none: listenFailure(running.pid, running.listenError, path) };
  if (running && config.listen === undefined) return { url: '', from: '', none: `groupwire run (pid ${running.pid}) has no operations endpoint: ops: false in ${path}` };
  if (running) return { url: '', from: '', none: `groupwire run (pid ${running.pid}) has not opened its operations endpoint yet (${opsFile} names no address): try again in a moment` };
  // Nothing found: a state_dir or ops.listen that lacks a variable here is why, not a broken address to try.
  if (config.unset) return { url: '', from: '', none: `${describeUnset(config.unset, path)}: set it as groupwire run has it, or give --url` };
  if (config.listen === undefined) return { url: '', from: '', none: `the operations endpoint is off in ${path} (ops: false)` };
  if (config.listen.endsWith(':0')) {
    return { url: '', from: '', none: `no groupwire run of ${path} is running: there is no ${opsFile} (ops.listen's port 0 is chosen when it starts)` };
  }
  return { url: listenUrl(config.listen), token: withToken, from: `from ops.listen of ${path}; there is no ${opsFile}, so groupwire run may not be running` };
}

/** Why a running groupwire run has no endpoint: its port is taken (by what), or another listen error. */
function listenFailure(pid: number, failure: OpsListenError, path: string): string {
  const retry = failure.retry_seconds > 0 ? `; it tries again every ${failure.retry_seconds} s` : '';
  if (failure.code === 'EADDRINUSE') {
    return `groupwire run (pid ${pid}) has no operations endpoint: its port ${failure.listen} (ops.listen of ${path}) is taken by ` +
      `${failure.holder ?? 'another program'}${retry}. Give this one another ops.listen (port 0 takes a free one), or stop the other`;
  }
  return `groupwire run (pid ${pid}) has no operations endpoint: it cannot listen on ${failure.listen} (ops.listen of ${path}): ${failure.code}${retry}`;
}

/** `host:port` as a URL to connect to (a wildcard listen address is reached on loopback). */
function listenUrl(listen: string): string {
  const colon = listen.lastIndexOf(':');
  let host = listen.slice(0, colon);
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '[::]') host = '[::1]';
  return `http://${host}:${listen.slice(colon + 1)}`;
}

/** --url as given, without a trailing `/`, `/status` or `/status.json` (the page's address works too). */
function endpointUrl(given: string): string {
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new UsageError(`--url must be an address like http://127.0.0.1:9464, got ${given}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--url must start with http:// or https://, got ${given}`);
  return `${url.origin}${url.pathname.replace(/\/(status(\.json)?)?\/?$/, '')}`;
}
