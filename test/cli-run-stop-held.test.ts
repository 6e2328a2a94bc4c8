import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv } from './helpers/cli.js';
import { startCli, type RunningCli } from './helpers/long-running-cli.js';

/**
 * A stop takes seconds whatever a library does (#32 item 3): `groupwire run` (a child process) with a
 * plugin that leaves a 10-minute timer running at stop, as a platform library may leave one of its own,
 * exits after SIGTERM, code 0, saying what still held it. Before, it waited for the timer.
 */

const dirs: string[] = [];
const running: RunningCli[] = [];
afterAll(async () => {
  for (const run of running) await run.stop('SIGKILL');
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

const FIXTURE = join(process.cwd(), 'test/fixtures/plugins/holds-the-process.ts');

/** Resolves with how the child ended, or rejects after `withinMs` (a bound to fail rather than hang, far from the grace). */
function endedWithin(run: RunningCli, withinMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return Promise.race([
    run.exited(),
    new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`still running ${withinMs} ms after SIGTERM`)), withinMs).unref()),
  ]);
}

describe('groupwire run: a stop is not held by a timer it does not own', () => {
  it('exits after SIGTERM though a plugin left a 10-minute timer, and names what held it', { timeout: 120_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-run-stop-held-'));
    dirs.push(dir);
    await writeFile(join(dir, 'bots.yaml'), [
      'service: { base_url: embedded, embedded: { port: 0 } }',
      'state_dir: ./state',
      'ops: false',
      'bots:',
      '  - name: b',
      '    login: { email: bot@example.com, password: bot-demo }',
      '    chats: [{ group: demo, chat: general }]',
      '    plugins:',
      `      - use: ${JSON.stringify(FIXTURE)}`,
      '',
    ].join('\n'));
    const run = startCli(['run', '--log-level', 'info', 'bots.yaml'], cleanEnv(), dir);
    running.push(run);
    await run.waitFor('stderr', /"msg":"chat socket open"/, 60_000);
    await run.waitFor('stderr', /holding the process/, 10_000);
    const ended = run.stop('SIGTERM');
    expect(await endedWithin(run, 60_000)).toEqual({ code: 0, signal: null });
    await ended;
    const said = run.stderr().split('\n').filter((line) => line.includes('still held the process'));
    expect(said).toHaveLength(1);
    expect((JSON.parse(said[0]!) as { held: string[] }).held).toContain('Timeout');
  });
});
