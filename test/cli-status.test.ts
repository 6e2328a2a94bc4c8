import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import type { OpsConfig } from '../src/config/bots-config.js';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import type { StatusSnapshot } from '../src/ops/status-snapshot.js';
import { cleanEnv, runCli } from './helpers/cli.js';
import { freePort } from './helpers/ports.js';
import { DEMO } from './helpers/service.js';
import { adminOk, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/** `groupwire status` against a real `Operations` endpoint (in this process) over a real supervisor and service. */

let env: Env | undefined;
let ops: Operations | undefined;
afterEach(async () => {
  await ops?.close();
  ops = undefined;
  await env?.close();
  env = undefined;
});

/** A supervisor with two chats and its endpoint; `opsYaml` is appended to bots.yaml as its `ops:` section. */
async function start(opsConfig: Partial<OpsConfig> = {}, opsYaml?: string) {
  env = await makeEnv([]);
  env.writeConfig([{ chats: [{ chat: 'general' }, { chat: 'random' }], plugins: [{ use: env.probe('recorder') }] }]);
  if (opsYaml) appendFileSync(env.configFile, opsYaml);
  const supervisor = await env.start();
  ops = new Operations({
    supervisor, config: { listen: '127.0.0.1:0', lag_probe_seconds: 1, ...opsConfig }, log: env.log.logger, errors: new RecentErrors(), stateDir: env.stateDir,
  });
  await ops.start();
  return supervisor;
}

async function snapshot(token?: string): Promise<StatusSnapshot> {
  const answer = await request(`${ops!.url}/status.json`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return JSON.parse(await answer.body.text()) as StatusSnapshot;
}

describe('groupwire status', () => {
  test('finds the running endpoint through ops.json: a table of the chats, exit 0 when ready; --json is the snapshot', { timeout: 60_000 }, async () => {
    await start();
    const table = await runCli(['status'], cleanEnv(), env!.dir);
    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/ · ready\n/);
    expect(table.stdout).toContain(String(process.pid));
    expect(table.stdout).toMatch(/general\s+demo\s+open/);
    expect(table.stdout).toMatch(/random\s+demo\s+open/);
    expect(table.stdout).toMatch(/recorder/);

    const json = await runCli(['status', join(env!.dir, 'bots.yaml'), '--json'], cleanEnv());
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as StatusSnapshot;
    expect(parsed.ready).toBe(true);
    expect(parsed.bots[0]!.chats.map((chat) => chat.subject).sort()).toEqual(['general', 'random']);
    for (const output of [table.stdout, json.stdout]) expect(output).not.toContain(DEMO.bot[1]);

    // A bots.yaml naming a variable this shell does not have (a secret given to groupwire run only) still finds it.
    const lenient = join(env!.dir, 'lenient.yaml');
    writeFileSync(lenient, readFileSync(env!.configFile, 'utf8').replace(`password: ${DEMO.bot[1]}`, 'password: ${GROUPWIRE_TEST_UNSET_SECRET}'));
    expect(readFileSync(lenient, 'utf8')).toContain('GROUPWIRE_TEST_UNSET_SECRET');
    const fromLenient = await runCli(['status', lenient], cleanEnv());
    expect(fromLenient.stderr).toBe('');
    expect(fromLenient.code).toBe(0);
  });

  test('exit 1 while a chat is held down (reconnecting), and the table says which and why', { timeout: 60_000 }, async () => {
    await start();
    await adminOk(env!.svc, 'faults/refuse-upgrades', { seconds: 30 });
    await adminOk(env!.svc, 'faults/drop-sockets', { chat: 'general' });
    await waitFor('the chat to be down', async () => !(await snapshot()).ready);
    const result = await runCli(['status', '--url', ops!.url!], cleanEnv());
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/NOT READY/);
    expect(result.stdout).toMatch(/general\s+demo\s+(reconnecting|connecting)/);
    const json = await runCli(['status', '--url', ops!.url!, '--json'], cleanEnv());
    expect(json.code).toBe(1);
    expect((JSON.parse(json.stdout) as StatusSnapshot).ready).toBe(false);
    await adminOk(env!.svc, 'faults/clear');
  });

  test('the token from --token, GROUPWIRE_OPS_TOKEN or bots.yaml; without it, refused (exit 3, saying what to give)', { timeout: 60_000 }, async () => {
    const token = 'cli-status-token-0123456789';
    await start({ token }, `ops:\n  listen: 127.0.0.1:0\n  token: "\${OPS_TOKEN_FOR_TEST:-${token}}"\n`);
    // bots.yaml's ops.token (ops.json names the URL).
    expect((await runCli(['status'], cleanEnv(), env!.dir)).code).toBe(0);
    const url = ops!.url!;
    expect((await runCli(['status', '--url', url, '--token', token], cleanEnv())).code).toBe(0);
    expect((await runCli(['status', '--url', url], cleanEnv({ GROUPWIRE_OPS_TOKEN: token }))).code).toBe(0);
    const refused = await runCli(['status', '--url', url], cleanEnv());
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(url);
    expect(refused.stderr).toMatch(/token/);
    const wrong = await runCli(['status', '--url', url, '--token', 'not-the-token-at-all-0000'], cleanEnv());
    expect(wrong.code).toBe(3);
    for (const output of [refused.stdout, refused.stderr, wrong.stderr]) expect(output).not.toContain(token);
  });

  test('exit 3 when nothing listens, naming the address and what to check; exit 2 for a usage mistake', { timeout: 30_000 }, async () => {
    const port = await freePort();
    const nobody = await runCli(['status', '--url', `http://127.0.0.1:${port}`], cleanEnv());
    expect(nobody.code).toBe(3);
    expect(nobody.stderr).toContain(`http://127.0.0.1:${port}`);
    expect(nobody.stderr).toMatch(/groupwire run/);

    // No ops.json (nothing running from this bots.yaml): bots.yaml's ops.listen is tried.
    env = await makeEnv([]);
    env.writeConfig([{ chats: [{ chat: 'general' }] }]);
    appendFileSync(env.configFile, `ops:\n  listen: 127.0.0.1:${port}\n`);
    rmSync(join(env.stateDir, 'ops.json'), { force: true });
    const fromYaml = await runCli(['status', env.configFile], cleanEnv());
    expect(fromYaml.code).toBe(3);
    expect(fromYaml.stderr).toContain(`http://127.0.0.1:${port}`);

    const usage = await runCli(['status', '--bogus'], cleanEnv());
    expect(usage.code).toBe(2);
    const missing = await runCli(['status', join(env.dir, 'nope.yaml')], cleanEnv());
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.yaml');
  });
});
