import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { DurableQueue } from '../src/store/durable-queue.js';
import { OutboxFile } from '../src/store/outbox-file.js';
import { cleanEnv } from './helpers/cli.js';
import { startCli, type RunningCli } from './helpers/long-running-cli.js';
import { chatOf, makeEnv, type Env } from './helpers/supervisor.js';

/**
 * #32 part 3: a stop takes seconds whatever the backlog, and what is queued stays on disk for the next
 * start. `groupwire run` starts with 20,000 posts waiting in its outbox (reply_rate 2/s: hours of them)
 * and 20,000 lines in relay-irc's queue for a server that is not there; SIGTERM ends it (exit 0) without
 * waiting for either to drain, and both are still on disk.
 */

let env: Env | undefined;
let running: RunningCli | undefined;
afterEach(async () => {
  await running?.stop('SIGKILL');
  running = undefined;
  await env?.close();
  env = undefined;
});

const BACKLOG = 20_000;

describe('a stop under a backlog', () => {
  test('SIGTERM with 20,000 posts and 20,000 IRC lines waiting: exit 0 within the stop\'s bound, everything still on disk', async () => {
    const bots = [{
      name: 'helper', chats: [{ chat: 'general' }], reply_rate: { per_second: 2, burst: 1 },
      // Port 1: nothing listens; the relay keeps trying, its lines wait.
      plugins: [{ use: 'relay-irc', with: { server: '127.0.0.1', port: 1, tls: false, nick: 'helper', channels: { general: '#general' } } }],
    }];
    env = await makeEnv(bots);
    const chat = (await chatOf(env.client('bot'), 'general'))!;
    const botDir = join(env.stateDir, 'bots', 'helper');
    mkdirSync(botDir, { recursive: true });
    const now = Date.now();
    writeFileSync(join(botDir, 'outbox.jsonl'), Array.from({ length: BACKLOG }, (_, n) =>
      `${JSON.stringify({ put: [{ id: `backlog-${n}`, chatId: String(chat.id), text: `waiting ${n}`, state: 'queued', queuedAt: now }] })}\n`).join(''));
    const queuePath = join(botDir, 'plugins', 'relay-irc', 'queue-%23general.json');
    mkdirSync(join(botDir, 'plugins', 'relay-irc'), { recursive: true });
    writeFileSync(queuePath, `${JSON.stringify({ push: Array.from({ length: BACKLOG }, (_, n) => ({ src: `${chat.id}:${n}`, key: `k${n}`, text: `<carol> line ${n}` })), at: now })}\n`);

    running = startCli(['run', '--log-level', 'info', env.configFile], cleanEnv());
    await running.waitFor('stderr', /chat socket open/, 60_000);
    const stopped = running.stop('SIGTERM');
    // The bound of a stop (the outbox's flush of 5 s and the plugins' stops), not the backlog's drain (hours).
    const ended = await Promise.race([stopped, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 20_000))]);
    expect(ended).toEqual({ code: 0, signal: null });
    expect(running.stderr()).toContain('"msg":"stopped"');
    expect(running.stderr()).toMatch(/posts still queued at stop; they go out on the next start/);

    // Still on disk, for the next start.
    const left = OutboxFile.read(join(botDir, 'outbox.jsonl')).items.filter((item) => item.state !== 'done');
    expect(left.length).toBeGreaterThan(BACKLOG - 100);
    expect(left.length).toBeLessThanOrEqual(BACKLOG);
    expect(DurableQueue.read(queuePath)).toHaveLength(BACKLOG);
  }, 120_000);
});
