import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, test } from 'vitest';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { Worker } from '../src/coordination/worker.js';
import { captureLog } from './helpers/client.js';
import { RedisServer } from './helpers/redis-server.js';
import { DEMO } from './helpers/service.js';
import { makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * A worker of several (docs/scale-out.md) runs one supervisor per unit: the media store, its intake
 * and its listener are the process's, one for all of them (two units would otherwise both listen on
 * media.listen, and the second fail).
 */

let env: Env | undefined;
let redis: RedisServer | undefined;
let worker: Worker | undefined;
afterEach(async () => {
  await worker?.stop();
  await env?.close();
  await redis?.stop();
  worker = undefined;
  env = undefined;
  redis = undefined;
});

describe('workers: media', () => {
  test('two units in one worker share one media listener and store', { timeout: 30_000 }, async () => {
    redis = await RedisServer.start();
    env = await makeEnv([]);
    env.writeConfig([
      { name: 'one', chats: [{ chat: 'general' }] },
      { name: 'two', login: { email: DEMO.alice[0], password: DEMO.alice[1] }, chats: [{ chat: 'general' }] },
    ]);
    const config = parse(readFileSync(env.configFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(env.configFile, stringify({ ...config, coordination: { redis: redis.url, prefix: 'gwmedia', lease_seconds: 2 }, media: { listen: '127.0.0.1:0' } }));
    const log = captureLog();
    worker = await Worker.start(await loadBotsConfig(env.configFile), { log: log.logger });
    await waitFor('both units running', () => worker!.bots.length === 2);
    expect(worker.mediaUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(log.withMessage('media listener listening')).toHaveLength(1);
    expect(log.lines.filter((line) => String(line.msg).startsWith('the media listener could not listen'))).toEqual([]);
    expect(worker.fileCounts).toMatchObject({ stored: 0, bytesStored: 0 });
  });
});
