import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from './helpers/cli.js';
import { startCli, type RunningCli } from './helpers/long-running-cli.js';
import { freePort } from './helpers/ports.js';

/**
 * `groupwire status` when the endpoint's address cannot be had (#36 items 6 and 7): a second `groupwire
 * run` whose ops port another one holds, and an ops.listen naming a variable this shell lacks.
 */

const dirs: string[] = [];
const running: RunningCli[] = [];
afterAll(async () => {
  for (const run of running) await run.stop();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A directory holding a bots.yaml of one bot on an embedded service, with `ops` as its ops: section. */
async function botsDir(ops: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gw-ops-port-'));
  dirs.push(dir);
  await writeFile(join(dir, 'bots.yaml'), [
    'service: { base_url: embedded, embedded: { port: 0 } }',
    'state_dir: ./state',
    ops,
    'bots:',
    '  - name: b',
    '    login: { email: bot@example.com, password: bot-demo }',
    '    chats: [{ group: demo, chat: general }]',
    '',
  ].join('\n'));
  return dir;
}

describe('groupwire status says why there is no endpoint', () => {
  it('a second groupwire run whose ops port the first holds: its log and status name the port and the first one\'s pid (#36 item 6)', { timeout: 90_000 }, async () => {
    const port = await freePort();
    const ops = `ops: { listen: "127.0.0.1:${port}" }`;
    const first = startCli(['run', 'bots.yaml'], cleanEnv(), await botsDir(ops));
    running.push(first);
    await first.waitFor('stderr', /operations endpoint listening/, 60_000);
    const secondDir = await botsDir(ops);
    const second = startCli(['run', 'bots.yaml'], cleanEnv(), secondDir);
    running.push(second);
    // Its own log says the port is taken, and by whom.
    await second.waitFor('stderr', new RegExp(`port 127\\.0\\.0\\.1:${port} is taken by groupwire run pid ${first.child.pid}`), 60_000);
    const status = await runCli(['status'], cleanEnv(), secondDir);
    expect(status.code).toBe(3);
    expect(status.stderr).toBe(`groupwire: groupwire run (pid ${second.child.pid}) has no operations endpoint: its port 127.0.0.1:${port} ` +
      `(ops.listen of bots.yaml) is taken by groupwire run pid ${first.child.pid} (its status: http://127.0.0.1:${port}/status); ` +
      'it tries again every 10 s. Give this one another ops.listen (port 0 takes a free one), or stop the other.\n');
    expect(status.stderr).not.toContain('ops: false');
  });

  it('an ops.listen whose variable is not set in this shell: names the variable and where, not a broken address (#36 item 7)', async () => {
    const dir = await botsDir('ops:\n  listen: "127.0.0.1:${OPS_PORT}"');
    const status = await runCli(['status'], cleanEnv(), dir);
    expect(status.code).toBe(3);
    expect(status.stderr).toBe('groupwire: ops.listen of bots.yaml (bots.yaml:4:11) is "127.0.0.1:${OPS_PORT}", and OPS_PORT is not set here: ' +
      'set it as groupwire run has it, or give --url.\n');
    expect(status.stderr).not.toContain('http://127.0.0.1:');
  });
});
