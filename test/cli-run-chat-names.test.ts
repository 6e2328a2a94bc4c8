import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv } from './helpers/cli.js';
import { startCli, type RunningCli } from './helpers/long-running-cli.js';

/**
 * A chat name the group has no chat of, as a user meets it (#36 item 9): `groupwire run` (a child
 * process, its embedded service's demo group) logs at start the nearest of the group's chats
 * ("did you mean general?"), else lists them, and the bot's other chats go on.
 */

const dirs: string[] = [];
const running: RunningCli[] = [];
afterAll(async () => {
  for (const run of running) await run.stop('SIGKILL');
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The `reason` of each "chat skipped" line of a pino log. */
function skipped(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.includes('"msg":"chat skipped"'))
    .map((line) => (JSON.parse(line) as { reason: string }).reason);
}

describe('groupwire run: a chat name the group has no chat of', () => {
  it('says the nearest of the group\'s chats (genral: did you mean general?), else lists them; its other chat is joined', { timeout: 90_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-run-chat-names-'));
    dirs.push(dir);
    await writeFile(join(dir, 'bots.yaml'), [
      'service: { base_url: embedded, embedded: { port: 0 } }',
      'state_dir: ./state',
      // No operations endpoint: the default port may be another run's.
      'ops: false',
      'bots:',
      '  - name: b',
      '    login: { email: bot@example.com, password: bot-demo }',
      '    chats:',
      '      - { group: demo, chat: genral }',
      '      - { group: demo, chat: random }',
      '      - { group: demo, chat: nothing-like-it }',
      '',
    ].join('\n'));
    const run = startCli(['run', '--log-level', 'info', 'bots.yaml'], cleanEnv(), dir);
    running.push(run);
    await run.waitFor('stderr', /"msg":"chat socket open"[^\n]*"chat":"random"|"chat":"random"[^\n]*"msg":"chat socket open"/, 60_000);
    await run.waitFor('stderr', /nothing-like-it \(its chats/, 30_000);
    expect(skipped(run.stderr())).toEqual([
      'group demo has no chat genral: did you mean general? (or set create: true to make it)',
      'group demo has no chat nothing-like-it (its chats: general, random, archive (closed); set create: true to make it)',
    ]);
    expect(await run.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});
