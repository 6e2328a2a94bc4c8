import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Everything groupwire writes under the state dir and the transcript dir is owner-only: files 0600,
 * the directories it makes 0700; a directory the user made keeps its mode (issue #31 item 12).
 */

let env: Env | undefined;
let ops: Operations | undefined;
afterEach(async () => {
  await ops?.close();
  ops = undefined;
  await env?.close();
  env = undefined;
});

const TOKEN = 'files-token-0123456789abcdef';

/** Every file and directory under `root` (not root itself), with its permission bits. */
function walk(root: string): { path: string; dir: boolean; mode: number }[] {
  const found: { path: string; dir: boolean; mode: number }[] = [];
  for (const name of readdirSync(root)) {
    const path = join(root, name);
    const stat = lstatSync(path);
    found.push({ path, dir: stat.isDirectory(), mode: stat.mode & 0o777 });
    if (stat.isDirectory()) found.push(...walk(path));
  }
  return found;
}

const octal = (mode: number) => mode.toString(8).padStart(4, '0');

describe('files under the state dir and the transcript dir', () => {
  test('a bot with the logger, a gateway to the HTTP API and its queues: files 0600, directories it made 0700, the user\'s own directory kept',
    { timeout: 60_000 }, async () => {
      const previous = process.umask(0o022);
      try {
        env = await makeEnv([]);
        // The user made the transcript directory, open to their group: groupwire leaves its mode alone.
        const transcripts = join(env.dir, 'transcripts');
        mkdirSync(transcripts);
        chmodSync(transcripts, 0o750);
        env.writeConfig([{
          chats: [{ chat: 'general' }],
          plugins: [
            { use: 'logger', with: { dir: './transcripts', format: ['jsonl', 'text', 'html', 'markdown'], include_own: true, flush_interval_ms: 50 } },
            { use: 'responder' },
            {
              use: 'http-api',
              with: { listen: { host: '127.0.0.1', port: 0 }, channels: { general: 'ops' }, clients: [{ name: 'ci', token: TOKEN }] },
            },
          ],
        }]);
        const supervisor = await env.start();
        ops = new Operations({
          supervisor, config: { listen: '127.0.0.1:0', lag_probe_seconds: 5 }, log: env.log.logger, errors: new RecentErrors(), stateDir: env.stateDir,
        });
        await ops.start();
        const stats = () => (supervisor.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['http-api']!;
        const port = await waitFor('the HTTP API listening', () => stats().port);

        await post(env.svc, 'general', 'bob', 'hello, files');
        await post(env.svc, 'general', 'carol', '!ping');
        const answer = await request(`http://127.0.0.1:${port}/gateways/ops/messages`, {
          method: 'POST', body: JSON.stringify({ text: 'from the API', username: 'ci' }),
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, 'idempotency-key': 'files-1' },
        });
        expect(answer.statusCode).toBe(202);
        await answer.body.text();
        const general = join(transcripts, 'demo', 'general');
        const holds = (text: string) => walk(general).some((entry) => entry.path.endsWith('.jsonl') && readFileSync(entry.path, 'utf8').includes(text));
        await waitFor('the API\'s line and the pong in the transcript, and the message map written', () =>
          holds('from the API') && holds('pong') && walk(env!.stateDir).some((entry) => entry.path.endsWith('gateway-map.jsonl')), 30_000);
        await supervisor.stop();
        env.supervisor = undefined;

        const entries = [...walk(env.stateDir), ...walk(transcripts)];
        const shown = (list: typeof entries) => list.map((entry) => `${octal(entry.mode)} ${relative(env!.dir, entry.path)}`);
        console.info(shown(entries).join('\n'));
        // What was written: the bot's cursors and outbox, the message map, the plugins' queues and stores, ops.json, transcripts.
        const names = entries.map((entry) => relative(env!.dir, entry.path));
        expect(names).toEqual(expect.arrayContaining([
          'state/gateway-map.jsonl', 'state/ops.json', 'state/bots/bot0/cursors.jsonl', 'state/bots/bot0/outbox.jsonl',
        ]));
        expect(names.some((name) => name.startsWith('state/bots/bot0/plugins/http-api/'))).toBe(true);
        expect(names.some((name) => name.startsWith('transcripts/demo/general/') && name.endsWith('.jsonl'))).toBe(true);
        expect(names.some((name) => name.startsWith('transcripts/demo/general/') && name.endsWith('.idx'))).toBe(true);

        expect(shown(entries.filter((entry) => !entry.dir && entry.mode !== 0o600))).toEqual([]);
        expect(shown(entries.filter((entry) => entry.dir && entry.mode !== 0o700))).toEqual([]);
        expect(octal(lstatSync(env.stateDir).mode & 0o777)).toBe('0700');
        expect(octal(lstatSync(transcripts).mode & 0o777)).toBe('0750');
      } finally {
        process.umask(previous);
      }
    });
});
