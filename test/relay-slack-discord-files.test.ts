import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, test } from 'vitest';
import { FakeSlack, TOKENS } from './fakes/slack/index.js';
import { FakeDiscord, type FakeUser } from './helpers/fake-discord.js';
import { chatOf, history, kill, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Files between Slack and Discord through a bots.yaml gateway with a chat, end to end (the supervisor,
 * the gateway's media store and its listener, both relays against their fakes): a picture said on
 * Slack is read through Slack's file API once, arrives natively on Discord (bytes compared) and in the
 * chat as a link that serves the same bytes; a picture said on Discord goes up into Slack; the bot
 * killed (SIGKILL) while Slack shares it leaves exactly one share after the restart.
 */

const SLACK_PLUGIN = fileURLToPath(new URL('../plugins/relay-slack/index.ts', import.meta.url));
const SLACK = 'C0GENERAL1';
const DISCORD = '700000000000000001';
const ALICE: FakeUser = { id: '600000000000000001', username: 'alice', global_name: 'Alice D' };
const PICTURE = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]), randomBytes(40 * 1024)]);

let env: Env | undefined;
let slack: FakeSlack | undefined;
let discord: FakeDiscord | undefined;
afterEach(async () => {
  await env?.close();
  await slack?.close();
  await discord?.close();
  env = slack = discord = undefined;
});

async function setUp(): Promise<{ env: Env; slack: FakeSlack; discord: FakeDiscord; chatLines(): Promise<string[]> }> {
  slack = await FakeSlack.start();
  discord = await FakeDiscord.start();
  discord.addChannel(DISCORD);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [
      { use: SLACK_PLUGIN, with: { token: TOKENS.bot, app_token: TOKENS.app, api_url: slack.apiUrl, channels: {}, request_timeout_ms: 5_000 } },
      { use: 'relay-discord', with: { token: discord.token, api_url: discord.apiUrl, channels: {}, post_as: 'bot' } },
    ],
  }], [{ name: 'lobby', endpoints: [{ chat: 'general' }, { slack: SLACK }, { discord: DISCORD }] }]);
  // The media store's listener (the helper writes bots and service; this adds the top-level key).
  const config = parse(readFileSync(env.configFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(env.configFile, stringify({ ...config, media: { listen: '127.0.0.1:0' } }));
  const e = env;
  return {
    env: e, slack, discord,
    chatLines: async () => {
      const bot = e.client('bot');
      const general = (await chatOf(bot, 'general'))!;
      return (await history(bot, general.id)).flatMap((m) => m.message.split('\n'));
    },
  };
}

async function download(url: string): Promise<Buffer> {
  const answer = await request(url);
  expect(answer.statusCode).toBe(200);
  return Buffer.from(await answer.body.arrayBuffer());
}

describe('files between Slack and Discord through a gateway', () => {
  test('a picture said on Slack arrives natively on Discord and as a working link in the chat; one said on Discord goes up into Slack', { timeout: 60_000 }, async () => {
    const { env: e, slack: s, discord: d, chatLines } = await setUp();
    await e.start();
    await waitFor('the Slack link', () => s.socket.opened >= 1);
    await waitFor('the Discord session', () => d.connections >= 1);

    s.shareFile(SLACK, 'U0ALICE001', 'our cat', { name: 'cat.png', mimetype: 'image/png', bytes: PICTURE });
    const [post] = await waitFor('the post on Discord', () => {
      const found = d.inChannel(DISCORD).filter((m) => m.author.id === d.bot.id);
      return found.length === 1 ? found : undefined;
    });
    expect(post!.content).toBe('**alice.l**: our cat');
    expect(post!.attachments.map((a) => a.filename)).toEqual(['cat.png']);
    expect(d.files.stored.get(post!.attachments[0]!.id)!.bytes.equals(PICTURE)).toBe(true);
    // Read once, through Slack's file API with the token.
    expect(s.files).toMatchObject({ downloads: 1, refusedDownloads: 0 });

    const lines = await waitFor('the link in the chat', async () => {
      const all = await chatLines();
      return all.some((line) => line.includes('[image: cat.png ')) ? all : undefined;
    });
    expect(lines).toContain('<alice.l> our cat');
    const link = lines.find((line) => line.includes('[image: cat.png '))!;
    expect(link).toMatch(/^<alice\.l> \[image: cat\.png http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/cat\.png\]$/);
    expect((await download(/(http:\/\/\S+)\]$/.exec(link)![1]!)).equals(PICTURE)).toBe(true);

    // The other way: Discord → Slack, uploaded natively (and read once from Discord's CDN).
    d.sayWithFiles(DISCORD, ALICE, 'and the dog', [{ filename: 'dog.png', contentType: 'image/png', bytes: PICTURE.subarray(0, 5_000) }]);
    const share = await waitFor('the share in Slack', () => s.files.shares[0]);
    expect(share).toMatchObject({ channel: SLACK, text: '*Alice D*: and the dog' });
    expect(share.files.map((f) => f.name)).toEqual(['dog.png']);
    expect(share.files[0]!.bytes.equals(PICTURE.subarray(0, 5_000))).toBe(true);
    expect(d.files.downloads).toBe(1);
  });

  test('the bot killed (SIGKILL) while Slack shares a file: after the restart the share is found, not made again', { timeout: 60_000 }, async () => {
    const { env: e, slack: s, discord: d } = await setUp();
    // Slack shares the file and the bot waits for an answer that never comes; it is killed meanwhile.
    s.loseAnswer('files.completeUploadExternal', 'hang');
    const child = await e.spawn();
    await waitFor('the Discord session', () => d.connections >= 1);
    d.sayWithFiles(DISCORD, ALICE, 'in flight at the kill', [{ filename: 'photo.png', contentType: 'image/png', bytes: PICTURE }]);
    await waitFor('the share made in Slack', () => s.files.shares.length === 1, 30_000);
    await kill(child);

    await e.start();
    const relay = () => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-slack']!;
    await waitFor('the share found', () => relay().recovered === 1 && relay().queued === 0, 30_000);
    d.sayWithFiles(DISCORD, ALICE, 'after the restart', [{ filename: 'next.png', contentType: 'image/png', bytes: PICTURE.subarray(0, 3_000) }]);
    await waitFor('the next share', () => s.files.shares.length === 2, 30_000);
    expect(s.files.shares.map((share) => [share.text, share.files.map((f) => f.name)])).toEqual([
      ['*Alice D*: in flight at the kill', ['photo.png']], ['*Alice D*: after the restart', ['next.png']],
    ]);
    expect(s.files.uploads).toBe(2);
  });
});
