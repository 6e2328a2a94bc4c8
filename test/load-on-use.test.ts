import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanEnv, ROOT } from './helpers/cli.js';
import { FakeTelegram } from './helpers/fake-telegram.js';
import { FakeMattermost } from './helpers/fake-mattermost.js';
import { FakeZulip } from './helpers/fake-zulip.js';
import { FakeRocketchat } from './helpers/fake-rocketchat.js';
import { IrcServer, relayPlugin } from './helpers/irc-server.js';
import { startCli, type RunningCli } from './helpers/long-running-cli.js';
import { makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * #20: a process loads only what it uses. A module hook records every package the process imports;
 * `groupwire run` against a remote service, and a script importing the public entry point, must not
 * reach the local service's packages, Redis, or a platform SDK its bots.yaml does not use.
 */

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/**
 * Packages only the local service, Redis scale-out, or one platform's relay needs. (esbuild, which
 * loads TypeScript plugins, is not checked: tsx, which runs these tests from the sources, uses it.)
 */
const HEAVY = [
  'fastify', '@fastify/busboy', 'sanitize-html', 'yazl', 'yauzl', 'ioredis',
  '@slack/web-api', '@slack/socket-mode', 'irc-framework', 'matrix-js-sdk', '@discordjs/core', '@discordjs/rest',
  '@discordjs/ws', '@xmpp/client', 'grammy', '@mattermost/client',
];

let env: Env | undefined;
let running: RunningCli | undefined;
let irc: IrcServer | undefined;
let telegram: FakeTelegram | undefined;
let mattermost: FakeMattermost | undefined;
let zulip: FakeZulip | undefined;
let rocketchat: FakeRocketchat | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await running?.stop('SIGKILL');
  running = undefined;
  await env?.close();
  env = undefined;
  await irc?.close();
  irc = undefined;
  await telegram?.close();
  telegram = undefined;
  await mattermost?.close();
  mattermost = undefined;
  await zulip?.close();
  zulip = undefined;
  await rocketchat?.close();
  rocketchat = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** NODE_OPTIONS that make the process write each package it imports, a line each, to the file returned. */
function recordingImports(): { nodeOptions: string; loaded: () => Set<string> } {
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-load-'));
  dirs.push(dir);
  const file = join(dir, 'packages.txt');
  writeFileSync(file, '');
  writeFileSync(join(dir, 'hooks.mjs'), `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  const match = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(found.url);
  if (match) appendFileSync(${JSON.stringify(file)}, match[1] + '\\n');
  return found;
}
`);
  writeFileSync(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`);
  return {
    nodeOptions: `--import=${pathToFileURL(join(dir, 'register.mjs')).href}`,
    loaded: () => new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean)),
  };
}

async function runUntilOpen(env: Env, nodeOptions: string): Promise<void> {
  running = startCli(['run', '--log-level', 'info', env.configFile], cleanEnv({ NODE_OPTIONS: nodeOptions }));
  await running.waitFor('stderr', /chat socket open/);
}

describe('load on use', () => {
  test('groupwire run with a responder against a remote service loads none of the heavy packages', { timeout: 60_000 }, async () => {
    env = await makeEnv([{ name: 'helper', chats: [{ chat: 'general' }], plugins: [{ use: 'responder' }, { use: 'logger' }] }]);
    const record = recordingImports();
    await runUntilOpen(env, record.nodeOptions);
    const loaded = record.loaded();
    // The hook sees the design's packages, so an empty record cannot pass for a light one.
    expect(loaded).toContain('ws');
    expect(loaded).toContain('zod');
    expect(HEAVY.filter((name) => loaded.has(name))).toEqual([]);
  });

  test('with relay-irc it loads irc-framework and still no other platform', { timeout: 60_000 }, async () => {
    irc = await IrcServer.start();
    env = await makeEnv([{ name: 'relay', chats: [{ chat: 'general' }], plugins: [relayPlugin(irc)] }]);
    const record = recordingImports();
    await runUntilOpen(env, record.nodeOptions);
    const loaded = record.loaded();
    expect(loaded).toContain('irc-framework');
    expect(HEAVY.filter((name) => name !== 'irc-framework' && loaded.has(name))).toEqual([]);
  });

  test('with relay-telegram it loads grammy and still no other platform', { timeout: 60_000 }, async () => {
    telegram = await FakeTelegram.start();
    telegram.addChat({ id: -1001000000001, type: 'supergroup', title: 'General' });
    env = await makeEnv([{
      name: 'relay', chats: [{ chat: 'general' }],
      plugins: [{ use: 'relay-telegram', with: { token: telegram.token, api_url: telegram.url, chats: { general: '-1001000000001' } } }],
    }]);
    const record = recordingImports();
    await runUntilOpen(env, record.nodeOptions);
    const loaded = record.loaded();
    expect(loaded).toContain('grammy');
    expect(HEAVY.filter((name) => name !== 'grammy' && loaded.has(name))).toEqual([]);
  });

  test('with relay-mattermost it loads @mattermost/client and still no other platform', { timeout: 60_000 }, async () => {
    mattermost = await FakeMattermost.start();
    const channel = mattermost.addChannel('town-square');
    env = await makeEnv([{ name: 'relay', chats: [{ chat: 'general' }], plugins: [{ use: 'relay-mattermost', with: { server_url: mattermost.url, token: mattermost.botToken, channels: { general: channel } } }] }]);
    const record = recordingImports();
    await runUntilOpen(env, record.nodeOptions);
    const loaded = record.loaded();
    expect(loaded).toContain('@mattermost/client');
    expect(HEAVY.filter((name) => name !== '@mattermost/client' && loaded.has(name))).toEqual([]);
  });

  test('with relay-zulip it loads no platform library at all (its client is undici, which the core loads anyway)', { timeout: 60_000 }, async () => {
    zulip = await FakeZulip.start();
    zulip.addStream('general');
    env = await makeEnv([{ name: 'relay', chats: [{ chat: 'general' }], plugins: [{ use: 'relay-zulip', with: { server_url: zulip.url, email: zulip.bot.email, api_key: zulip.botKey, streams: { general: 'general/lobby' } } }] }]);
    const record = recordingImports();
    await runUntilOpen(env, record.nodeOptions);
    // The relay ran (its client reached the fake), so what it imports is in the record.
    await running!.waitFor('stderr', /Zulip connected/);
    const loaded = record.loaded();
    expect(loaded).toContain('undici');
    expect(HEAVY.filter((name) => loaded.has(name))).toEqual([]);
  });

  test('with relay-rocketchat (a thin client over undici and ws, no SDK) it loads no platform package at all', { timeout: 60_000 }, async () => {
    rocketchat = await FakeRocketchat.start();
    const room = rocketchat.addRoom('general');
    env = await makeEnv([{ name: 'relay', chats: [{ chat: 'general' }], plugins: [{ use: 'relay-rocketchat', with: { server_url: rocketchat.url, user_id: rocketchat.bot._id, token: rocketchat.botToken, rooms: { general: room } } }] }]);
    const record = recordingImports();
    await runUntilOpen(env, record.nodeOptions);
    await waitFor('the relay\'s realtime login', () => rocketchat!.logins > 0, 30_000);
    const loaded = record.loaded();
    expect(loaded).toContain('undici');
    expect(HEAVY.filter((name) => loaded.has(name))).toEqual([]);
  });

  test("importing the public entry point ('groupwire') loads none of them either", { timeout: 60_000 }, async () => {
    const record = recordingImports();
    const script = `const api = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'src/index.ts')).href)}); if (typeof api.LocalService.start !== 'function') process.exit(1);`;
    const child = spawn(process.execPath, ['--import', TSX, '--input-type=module', '-e', script], {
      cwd: ROOT, env: cleanEnv({ NODE_OPTIONS: record.nodeOptions }), stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
    const code = await new Promise<number | null>((done) => child.once('exit', done));
    expect(code, stderr).toBe(0);
    const loaded = record.loaded();
    expect(loaded).toContain('undici');
    expect(HEAVY.filter((name) => loaded.has(name))).toEqual([]);
  });
});
