import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import relayDiscord from '../plugins/relay-discord/index.js';
import type { PluginInstance } from '../src/index.js';
import { FakeDiscord, type FakeUser } from './helpers/fake-discord.js';
import { lineWithFiles, readAll, relayFilesEnv, type RelayFilesEnv } from './helpers/relay-files-env.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-discord's files, the relay alone against the fake Discord (a real MediaStore as env.media; the
 * gateway port keeps what the relay hands on): an attachment said on Discord is read from its signed
 * CDN URL, streamed; an attachment object naming another host is not fetched; a gateway line's files
 * go up with its post (multipart `files[n]` + `payload_json`), as the bot and through the channel's
 * webhook; over `max_file_size` a link; a lost answer leaves one copy (the nonce; the webhook's look-up).
 */

const GENERAL = '700000000000000001';
const ALICE: FakeUser = { id: '600000000000000001', username: 'alice', global_name: 'Alice D' };
const PICTURE = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(48 * 1024)]);

let discord: FakeDiscord | undefined;
let files: RelayFilesEnv | undefined;
let plugins: PluginInstance[] = [];
let bystander: Server | undefined;
afterEach(async () => {
  for (const plugin of plugins) await plugin.stop?.();
  plugins = [];
  await discord?.close();
  files?.close();
  await new Promise<void>((resolve) => (bystander ? bystander.close(() => resolve()) : resolve()));
  discord = undefined;
  files = undefined;
  bystander = undefined;
});

async function openRelay(extra: Record<string, unknown> = {}): Promise<PluginInstance> {
  discord ??= await FakeDiscord.start();
  discord.addChannel(GENERAL);
  files ??= relayFilesEnv([GENERAL]);
  const options = relayDiscord.options.parse({ token: discord.token, api_url: discord.apiUrl, post_as: 'bot', request_timeout_ms: 5_000, ...extra });
  const plugin = await relayDiscord.create(options, files.env);
  plugins.push(plugin);
  await plugin.start?.();
  await waitFor('the gateway session', () => ((plugin.stats!() as Record<string, number>).sessions ?? 0) >= 1);
  return plugin;
}

const posts = () => discord!.inChannel(GENERAL).filter((m) => m.author.bot);
const bytesOf = (attachmentId: string) => discord!.files.stored.get(attachmentId)!.bytes;

describe('relay-discord: files from Discord', () => {
  test('an attachment said on Discord is read from its CDN URL, streamed, its bytes whole; a file alone is a message', async () => {
    await openRelay();
    discord!.sayWithFiles(GENERAL, ALICE, 'look *here*', [{ filename: 'photo.png', contentType: 'image/png', bytes: PICTURE }]);
    const { message } = await waitFor('the message handed on', () => files!.received[0]);
    expect(message).toMatchObject({ kind: 'message', text: 'look *here*', chatText: '<Alice D> look *here*', speaker: { platform: 'discord', id: ALICE.id } });
    expect(message.files).toHaveLength(1);
    expect(message.files![0]).toMatchObject({ name: 'photo.png', contentType: 'image/png', size: PICTURE.length });
    expect(discord!.files.downloads).toBe(0);
    expect((await readAll(await message.files![0]!.open(new AbortController().signal))).equals(PICTURE)).toBe(true);
    expect(discord!.files.downloads).toBe(1);

    discord!.sayWithFiles(GENERAL, ALICE, '', [{ filename: 'notes.txt', contentType: 'text/plain', bytes: Buffer.from('minutes\n') }]);
    const second = await waitFor('the file alone handed on', () => files!.received[1]);
    expect(second.message).toMatchObject({ kind: 'message', text: '' });
    expect(second.message.chatText).toBeUndefined();
    expect((await readAll(await second.message.files![0]!.open(new AbortController().signal))).toString()).toBe('minutes\n');
  });

  test('the fake\'s CDN refuses a URL whose signature does not hold', async () => {
    discord = await FakeDiscord.start();
    const attachment = discord.files.add(GENERAL, { filename: 'photo.png', contentType: 'image/png', bytes: PICTURE });
    const forged = await request(attachment.url.replace(/hm=[0-9a-f]+/, `hm=${'0'.repeat(64)}`));
    await forged.body.dump();
    expect(forged.statusCode).toBe(404);
    const bare = await request(attachment.url.split('?')[0]!);
    await bare.body.dump();
    expect(bare.statusCode).toBe(404);
    expect(discord.files).toMatchObject({ downloads: 0, refusedDownloads: 2 });
  });

  test('an attachment object naming another host is not fetched', async () => {
    let asked = 0;
    bystander = createServer((_, response) => {
      asked += 1;
      response.end('secret intranet page');
    });
    await new Promise<void>((resolve) => bystander!.listen(0, '127.0.0.1', resolve));
    const elsewhere = `http://127.0.0.1:${(bystander.address() as AddressInfo).port}/attachments/1/2/photo.png`;
    await openRelay();
    discord!.sayWithFiles(GENERAL, ALICE, 'a trap', [{ filename: 'photo.png', contentType: 'image/png', bytes: PICTURE }], { url: elsewhere, proxy_url: elsewhere });
    const { message } = await waitFor('the message handed on', () => files!.received[0]);
    await expect(message.files![0]!.open(new AbortController().signal)).rejects.toThrow(/not fetched: the attachment's URL is not on Discord's CDN/);
    expect(asked).toBe(0);
    expect(discord!.files.downloads + discord!.files.refusedDownloads).toBe(0);
  });
});

describe('relay-discord: files to Discord', () => {
  test('as the bot: the picture goes up with the post (multipart), under **name**: text with its nonce; the message id goes to the map', async () => {
    const plugin = await openRelay();
    const picture = await files!.stored('photo.png', 'image/png', PICTURE);
    plugin.endpoint!.send(GENERAL, lineWithFiles('k1', 'see @everyone', [picture]));
    const [post] = await waitFor('the post', () => (posts().length === 1 ? posts() : undefined));
    expect(post!.content).toBe('**alice**: see @\u200beveryone');
    expect(post!.nonce).toEqual(expect.any(String));
    expect(post!.attachments.map((a) => [a.filename, a.content_type, a.size])).toEqual([['photo.png', 'image/png', PICTURE.length]]);
    expect(bytesOf(post!.attachments[0]!.id).equals(PICTURE)).toBe(true);
    expect(discord!.files.uploads).toBe(1);
    await waitFor('the id told', () => files!.posted.length === 1);
    expect(files!.posted).toEqual([{ key: 'k1', channel: GENERAL, nativeId: post!.id }]);
  });

  test('through the webhook: the picture under the speaker\'s name; over max_file_size or gone from the store: its link', async () => {
    const plugin = await openRelay({ post_as: 'webhook', max_file_size: 60_000 });
    const picture = await files!.stored('photo.png', 'image/png', PICTURE);
    const big = await files!.stored('big_one.bin', 'application/octet-stream', randomBytes(30_000));
    plugin.endpoint!.send(GENERAL, lineWithFiles('k1', 'two files', [picture, big], { refusedFiles: [{ name: 'tool.exe', reason: 'not allowed' }] }));
    const [post] = await waitFor('the webhook post', () => (posts().length === 1 ? posts() : undefined));
    expect(post!.webhook_id).toEqual(expect.any(String));
    expect(post!.author.username).toBe('alice');
    // Together within 60,000 bytes: the picture goes up, the second file shows as its link.
    expect(post!.content).toBe(`two files\n[file: big\\_one.bin <${big.url}>]\n\\[a file was not relayed: tool.exe: not allowed\\]`);
    expect(post!.attachments.map((a) => a.filename)).toEqual(['photo.png']);
    expect(bytesOf(post!.attachments[0]!.id).equals(PICTURE)).toBe(true);

    // A server that takes less than max_file_size (413, code 40005): the link instead.
    discord!.maxUpload = 1_000;
    plugin.endpoint!.send(GENERAL, lineWithFiles('k3', 'too big here', [picture]));
    const third = await waitFor('the post with the link', () => posts()[1]);
    expect(third.content).toBe(`too big here\n[image: photo.png <${picture.url}>]`);
    expect(third.attachments).toEqual([]);
    expect(files!.log.lines.filter((line) => String(line.msg).includes('too large for this server'))).toHaveLength(1);

    const gone = await files!.stored('old.png', 'image/png', PICTURE.subarray(0, 100));
    await rm(files!.media.pathOf(gone.id));
    plugin.endpoint!.send(GENERAL, lineWithFiles('k2', 'an old one', [gone]));
    const second = await waitFor('the post with the link', () => posts()[2]);
    expect(second.content).toBe(`an old one\n[image: old.png <${gone.url}>]`);
    expect(second.attachments).toEqual([]);
    expect(discord!.files.uploads).toBe(1);
  });

  test('a lost answer: the post with its file is made once, as the bot (nonce) and through the webhook (the look-up)', async () => {
    const plugin = await openRelay();
    const picture = await files!.stored('photo.png', 'image/png', PICTURE);
    discord!.loseAnswer(1);
    plugin.endpoint!.send(GENERAL, lineWithFiles('k1', 'as the bot', [picture]));
    await waitFor('the id told', () => files!.posted.length === 1, 30_000);
    expect(posts().map((m) => [m.content, m.attachments.length])).toEqual([['**alice**: as the bot', 1]]);
    expect(files!.posted[0]!.nativeId).toBe(posts()[0]!.id);
    await plugin.stop!();

    const hooked = await openRelay({ post_as: 'webhook' });
    discord!.loseAnswer(1);
    hooked.endpoint!.send(GENERAL, lineWithFiles('k2', 'through the webhook', [picture]));
    await waitFor('the id told', () => files!.posted.length === 2, 30_000);
    expect(posts().map((m) => [m.content, m.attachments.length])).toEqual([['**alice**: as the bot', 1], ['through the webhook', 1]]);
    expect(files!.posted[1]!.nativeId).toBe(posts()[1]!.id);
  });
});
