import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { Agent, request } from 'undici';
import { GroupsClient } from '../src/api/client.js';
import { cleanEnv, ROOT } from './helpers/cli.js';
import { startCli, type RunningCli } from './helpers/long-running-cli.js';
import { chatOf, history, makeEnv, post, type Env, waitFor } from './helpers/supervisor.js';

/**
 * Issue 13 item 11: SIGHUP never ends `run`, `serve` or `demo`; SIGTERM still stops them cleanly.
 * Issue 16: for `run` it is a reload of bots.yaml; `serve` and `demo` say they ignore it.
 */

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
  test('groupwire run: SIGHUP reloads bots.yaml (a chat added joins; the open socket stays), then SIGTERM exits 0', async () => {
    env = await makeEnv([{ name: 'helper', chats: [{ chat: 'general' }], plugins: [{ use: 'responder' }] }]);
    running = startCli(['run', '--log-level', 'info', env.configFile], cleanEnv());
    await running.waitFor('stderr', /chat socket open/);

    // Nothing changed yet: said, and nothing happens.
    running.child.kill('SIGHUP');
    await running.waitFor('stderr', /reload: .*bots\.yaml has no change to apply/);
    env.writeConfig([{ name: 'helper', chats: [{ chat: 'general' }, { chat: 'random' }], plugins: [{ use: 'responder' }] }]);
    running.child.kill('SIGHUP');
    await running.waitFor('stderr', /reload: bot helper: chat random added/);

    const bot = env.client('bot');
    const botId = String((await bot.login()).id);
    for (const subject of ['general', 'random']) {
      const chat = (await chatOf(bot, subject))!;
      const asked = await post(env.svc, subject, 'bob', '!ping');
      const answer = await waitFor(`the pong in ${subject} after SIGHUP`, async () =>
        (await history(bot, chat.id)).find((m) => m.msg_num > asked.msg_num && m.user_id === botId), 30_000);
      expect(answer.message).toBe('pong');
    }
    // #general's socket was opened once: the reload left it alone.
    const opens = running.stderr().split('\n').filter((line) => line.includes('"msg":"chat socket open"'));
    expect(opens.filter((line) => line.includes('"chat":"general"'))).toHaveLength(1);
    expect(opens.filter((line) => line.includes('"chat":"random"'))).toHaveLength(1);

    expect(await running.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(running.stderr()).toContain('"msg":"stopped"');
  }, 90_000);

  test('groupwire run whose stderr went away (its terminal closed) and got SIGHUP: goes on, and SIGTERM still exits 0', async () => {
    env = await makeEnv([{ name: 'helper', chats: [{ chat: 'general' }], plugins: [{ use: 'responder' }] }]);
    running = startCli(['run', '--log-level', 'info', env.configFile], cleanEnv());
    await running.waitFor('stderr', /chat socket open/);
    // What a closed terminal does to the process's stderr (EIO there, EPIPE here): every later log line fails.
    running.child.stderr!.destroy();
    running.child.kill('SIGHUP');

    const bot = env.client('bot');
    const botId = String((await bot.login()).id);
    const general = (await chatOf(bot, 'general'))!;
    const asked = await post(env.svc, 'general', 'bob', '!ping');
    const answer = await waitFor('the pong without a stderr', async () =>
      (await history(bot, general.id)).find((m) => m.msg_num > asked.msg_num && m.user_id === botId), 30_000);
    expect(answer.message).toBe('pong');
    expect(await running.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  }, 90_000);

  test('groupwire serve: logged and ignored, still serves, then SIGTERM exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-signals-'));
    dirs.push(dir);
    running = startCli(['serve', '--port', '0'], cleanEnv(), dir);
    const [line] = await running.waitFor('stdout', /^\{.*\}\n/m);
    const ready = JSON.parse(line) as { base_url: string; ca_file: string };

    running.child.kill('SIGHUP');
    await running.waitFor('stderr', /SIGHUP ignored: this command does not reload/);

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

  test('groupwire demo: logged and ignored, the bot still answers, then SIGTERM exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-signals-demo-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'bots.yaml'), readFileSync(join(ROOT, 'bots.yaml'), 'utf8').replace('port: 8443', 'port: 0'));
    running = startCli(['demo', '--config', 'bots.yaml'], cleanEnv({ TZ: 'UTC' }), dir);
    const pongs = () => running!.stdout().match(/<Demo Bot> pong/g)?.length ?? 0;
    await waitFor('the scripted !ping answered', () => pongs() >= 1, 90_000);

    running.child.kill('SIGHUP');
    await running.waitFor('stderr', /SIGHUP ignored: this command does not reload/);

    const demo = JSON.parse(readFileSync(join(dir, '.groupwire', 'demo.json'), 'utf8')) as { base_url: string; ca_file: string };
    const bob = new GroupsClient({ baseUrl: demo.base_url, ca: readFileSync(demo.ca_file), credentials: { email: 'bob@example.com', password: 'bob-demo' } });
    try {
      // A member says !ping in #general as a chat client does: over the chat socket.
      const general = (await chatOf(bob, 'general'))!;
      const socket = await bob.openChatSocket({ chatsubId: general.chat_sub!.id, noHistory: true });
      socket.send(JSON.stringify({ object: 'chat_post', message: '!ping' }));
      await waitFor('the bot answered after SIGHUP', () => pongs() >= 2, 30_000);
      socket.close(1000, 'done');
    } finally {
      await bob.close();
    }
    expect(await running.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  }, 150_000);
});
