import { join } from 'node:path';
import { request } from 'undici';
import { OPS_FILE } from '../ops/operations.js';
import type { ReloadOutcome } from '../supervisor/reload-plan.js';
import { parseFlags } from './command.js';
import { describeUnset, endpointError, nonEmpty, readOpsFile, readOpsSettings } from './running-process.js';
import { EXIT, registerSecret, writeErr, writeOut } from './output.js';
import { UsageError } from './usage-error.js';

export const RELOAD_HELP = `Usage: groupwire reload [bots.yaml] [--url URL] [--token TOKEN]

Asks a running groupwire run to read its bots.yaml again and apply what changed, without a restart
(docs/bots.md "Reload"): added bots, chats and plugins start, removed ones stop, a plugin whose options
changed restarts alone, and the chats that did not change keep their sockets. A file with a mistake is
refused with where it is, and the running config goes on.

The process is found in <state_dir>/ops.json of bots.yaml (groupwire run writes it while it runs). With
an operations endpoint (ops: on, the default) the reload is asked of it (POST /reload) and what changed
is printed; with ops: false the process is sent SIGHUP and its log says what changed. The token is
--token, else GROUPWIRE_OPS_TOKEN, else bots.yaml's ops.token. bots.yaml defaults to ./bots.yaml.

Exit codes: 0 applied (or SIGHUP sent), 1 refused or no running process found, 2 a usage mistake.

Options:
  --url URL       the operations endpoint, like http://127.0.0.1:9464 (instead of ops.json's)
  --token TOKEN   ops.token of the running process
  -h, --help      this text
`;

export async function reloadCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args, allowPositionals: true,
    options: { url: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    writeOut(RELOAD_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 1) throw new UsageError('give one bots.yaml at most');
  const file = positionals[0] ?? 'bots.yaml';
  const settings = await readOpsSettings(file);
  const token = values.token ?? nonEmpty(process.env.GROUPWIRE_OPS_TOKEN) ?? settings.token;
  registerSecret(token);
  const opsFile = join(settings.stateDir, OPS_FILE);
  const running = values.url === undefined ? readOpsFile(opsFile) : undefined;
  const url = values.url ?? running?.url;
  if (url !== undefined) return askEndpoint(url.replace(/\/+$/, ''), token);
  if (!running && settings.unset?.key === 'state_dir') return fail(`${describeUnset(settings.unset, file)}: set it as groupwire run has it, or give --url`);
  if (!running) return fail(`no groupwire run of ${file} is running: there is no ${opsFile}`);
  try {
    process.kill(running.pid, 'SIGHUP');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return fail(code === 'ESRCH'
      ? `no process ${running.pid} (named in ${opsFile}): groupwire run is not running`
      : `could not signal process ${running.pid} (${code}): run this as the user that runs groupwire run`);
  }
  writeOut(`sent SIGHUP to groupwire run (pid ${running.pid}): it reads ${file} again; its log says what changed\n`);
  return EXIT.ok;
}

async function askEndpoint(url: string, token: string | undefined): Promise<number> {
  let answer;
  try {
    answer = await request(`${url}/reload`, {
      method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {}, headersTimeout: 120_000, bodyTimeout: 120_000,
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return fail(`cannot reach the operations endpoint at ${url} (${code}): is groupwire run running?`);
  }
  const text = await answer.body.text();
  if (answer.statusCode === 401) return fail(`the operations endpoint at ${url} wants ${token ? 'another' : 'a'} token: give --token, GROUPWIRE_OPS_TOKEN, or ops.token in bots.yaml`);
  let outcome: ReloadOutcome;
  try {
    if (answer.statusCode !== 200) throw new Error(`answered ${answer.statusCode}${endpointError(text)}`);
    outcome = JSON.parse(text) as ReloadOutcome;
    if (typeof outcome.applied !== 'boolean' || !Array.isArray(outcome.changes)) throw new Error('answered something that is not a reload outcome');
  } catch (error) {
    return fail(`the operations endpoint at ${url} ${(error as Error).message.replace(/^Unexpected token.*/, 'answered something that is not JSON')}`);
  }
  writeOut(describeOutcome(outcome));
  return outcome.applied ? EXIT.ok : EXIT.error;
}

/** The outcome in lines: applied or refused, then each change or problem. */
export function describeOutcome(outcome: ReloadOutcome): string {
  const lines = [outcome.applied ? `reload applied (${outcome.at})` : `reload refused (${outcome.at}); the running config goes on unchanged`];
  if (outcome.applied && outcome.changes.length === 0) lines.push('  nothing changed');
  for (const change of outcome.changes) lines.push(`  ${change}`);
  for (const problem of outcome.problems) lines.push(`  ${problem}`);
  if (outcome.opsChanged) lines.push('  the operations endpoint starts again with the new ops: settings');
  return `${lines.join('\n')}\n`;
}

function fail(message: string): number {
  writeErr(`groupwire: ${message}\n`);
  return EXIT.error;
}
