import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { Agent, request } from 'undici';
import { cleanEnv } from './helpers/cli.js';
import { startCli, type RunningCli } from './helpers/long-running-cli.js';
import { chatOf, history, makeEnv, post, type Env, waitFor } from './helpers/supervisor.js';

/** Issue 13 item 11: SIGHUP is logged and ignored by `run` and `serve`; SIGTERM still stops them cleanly. */

let env: Env | undefined;
let running: RunningCli | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await running?.stop('SIGKILL');
  running = undefined;
  await env?.close();
  env = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('SIGHUP', () => {
  test('groupwire run: logged and ignored, the bot keeps answering, then SIGTERM exits 0', async () => {
    env = await makeEnv([{ name: 'helper', chats: [{ chat: 'general' }], plugins: [{ use: 'responder' }] }]);
    running = startCli(['run', '--log-level', 'info', env.configFile], cleanEnv());
    await running.waitFor('stderr', /chat socket open/);

    running.child.kill('SIGHUP');
    await running.waitFor('stderr', /SIGHUP ignored: reload is not supported yet; restart to apply bots\.yaml changes/);

    const bot = env.client('bot');
    const botId = String((await bot.login()).id);
    const general = (await chatOf(bot, 'general'))!;
    const asked = await post(env.svc, 'general', 'bob', '!ping');
    const answer = await waitFor('the pong after SIGHUP', async () =>
      (await history(bot, general.id)).find((m) => m.msg_num > asked.msg_num && m.user_id === botId), 30_000);
    expect(answer.message).toBe('pong');

    expect(await running.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(running.stderr()).toContain('"msg":"stopped"');
  }, 90_000);

  test('groupwire serve: logged and ignored, still serves, then SIGTERM exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-signals-'));
    dirs.push(dir);
    running = startCli(['serve', '--port', '0'], cleanEnv(), dir);
    const [line] = await running.waitFor('stdout', /^\{.*\}\n/m);
    const ready = JSON.parse(line) as { base_url: string; ca_file: string };

    running.child.kill('SIGHUP');
    await running.waitFor('stderr', /SIGHUP ignored: reload is not supported yet/);

    const dispatcher = new Agent({ connect: { ca: readFileSync(ready.ca_file) } });
    try {
      const answer = await request(`${ready.base_url}/api/v1/login`, {
        method: 'POST', dispatcher, headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'email=bob%40example.com&password=bob-demo',
      });
      await answer.body.text();
      expect(answer.statusCode).toBe(200);
    } finally {
      await dispatcher.close();
    }
    expect(await running.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  }, 60_000);
});
