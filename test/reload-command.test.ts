import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import { cleanEnv, runCli } from './helpers/cli.js';
import { kill, makeEnv, post, probes, type Env, waitFor } from './helpers/supervisor.js';

/**
 * `groupwire reload`: finds the running process in <state_dir>/ops.json and asks its operations endpoint
 * (POST /reload, the outcome printed), or sends it SIGHUP when it has no endpoint.
 */

let env: Env | undefined;
let operations: Operations | undefined;
afterEach(async () => {
  await operations?.close();
  operations = undefined;
  await env?.close();
  env = undefined;
});

describe('groupwire reload', () => {
  test('asks the endpoint named in ops.json: the outcome printed, exit 0 applied, 1 refused with where', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: recorder, with: { key: 'cli' } }] }]);
    const supervisor = await env.start();
    const current = env;
    // What groupwire run sets up (src/cli/run-command.ts), with the token a reload must carry.
    operations = new Operations({
      supervisor, config: { listen: '127.0.0.1:0', token: 'a-reload-token-of-16+', lag_probe_seconds: 0 }, log: env.log.logger,
      errors: new RecentErrors(), stateDir: env.stateDir, reload: () => supervisor.reload(current.configFile),
    });
    await operations.start();

    env.writeConfig([{ chats: [{ chat: 'general' }, { chat: 'random' }], plugins: [{ use: recorder, with: { key: 'cli' } }] }]);
    const refusedWithoutToken = await runCli(['reload', env.configFile], cleanEnv());
    expect(refusedWithoutToken.code).toBe(1);
    expect(refusedWithoutToken.stderr).toMatch(/wants a token/);
    expect(supervisor.bots[0]!.runners).toHaveLength(1);

    const applied = await runCli(['reload', env.configFile], cleanEnv({ GROUPWIRE_OPS_TOKEN: 'a-reload-token-of-16+' }));
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/^reload applied \(.+\)\n {2}bot bot0: chat random added\n$/);
    await waitFor('random open', () => supervisor.bots[0]!.runners.find((r) => r.info.subject === 'random')?.connection.state === 'open');
    const said = await post(env.svc, 'random', 'alice', 'after groupwire reload');
    await waitFor('the message in the added chat', () => probes().seen.cli?.some((s) => s.chat === 'random' && s.msgNum === said.msg_num));

    appendFileSync(env.configFile, 'bots: [\n');
    const refused = await runCli(['reload', env.configFile, '--token', 'a-reload-token-of-16+'], cleanEnv());
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^reload refused .*the running config goes on unchanged\n {2}.*bots\.yaml:\d+:\d+: /);
    expect(`${applied.stdout}${refused.stdout}${refused.stderr}`).not.toContain('a-reload-token-of-16+');
  });

  test('without an endpoint it sends SIGHUP to the pid in ops.json; with no process running it says so', { timeout: 30_000 }, async () => {
    env = await makeEnv([]);
    const missing = await runCli(['reload', env.configFile], cleanEnv());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no groupwire run of ${env.configFile} is running: there is no ${join(env.stateDir, 'ops.json')}`);

    // A stand-in for groupwire run with ops: false: it says when SIGHUP came.
    const child = spawn(process.execPath, ['-e', "process.on('SIGHUP', () => { process.stdout.write('hup\\n'); process.exit(0); }); process.stdout.write('ready\\n'); setInterval(() => {}, 1000);"], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    try {
      await waitFor('the stand-in ready', () => out.includes('ready'));
      mkdirSync(env.stateDir, { recursive: true });
      writeFileSync(join(env.stateDir, 'ops.json'), `${JSON.stringify({ pid: child.pid })}\n`);
      const sent = await runCli(['reload', env.configFile], cleanEnv());
      expect(sent.code).toBe(0);
      expect(sent.stdout).toContain(`sent SIGHUP to groupwire run (pid ${child.pid})`);
      await waitFor('SIGHUP received', () => out.includes('hup'));

      await waitFor('the stand-in gone', () => child.exitCode !== null);
      const gone = await runCli(['reload', env.configFile], cleanEnv());
      expect(gone.code).toBe(1);
      expect(gone.stderr).toContain(`no process ${child.pid}`);
    } finally {
      await kill(child);
    }
  });
});
