import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import relaySlack from '../plugins/relay-slack/index.js';
import type { PluginInstance } from '../src/index.js';
import { FakeSlack, TOKENS } from './fakes/slack/index.js';
import { lineWithFiles, readAll, relayFilesEnv, type RelayFilesEnv } from './helpers/relay-files-env.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-slack's files, the relay alone against the fake Slack (a real MediaStore as env.media; the
 * gateway port keeps what the relay hands on): a file said in Slack is read through Slack's file API
 * with the bot token (url_private_download), streamed; a file object naming another host is not
 * fetched; a gateway line's files go up with the external upload flow (getUploadURLExternal, the bytes,
 * completeUploadExternal) under the speaker's name and text; over `max_file_size` a link; once across
 * a crash between the share and the queue's confirmation.
 */

const GENERAL = 'C0GENERAL1';
const ZWJ = '\u200D';
/** A PNG's signature and some bytes: what the fake keeps and serves. */
const PICTURE = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(48 * 1024)]);

let slack: FakeSlack | undefined;
let files: RelayFilesEnv | undefined;
let plugins: PluginInstance[] = [];
let bystander: Server | undefined;
afterEach(async () => {
  for (const plugin of plugins) await plugin.stop?.();
  plugins = [];
  await slack?.close();
  files?.close();
  await new Promise<void>((resolve) => (bystander ? bystander.close(() => resolve()) : resolve()));
  slack = undefined;
  files = undefined;
  bystander = undefined;
});

/** The relay on `files.env`, started, with its Socket Mode link open. */
async function openRelay(extra: Record<string, unknown> = {}): Promise<PluginInstance> {
  const options = relaySlack.options.parse({ token: TOKENS.bot, app_token: TOKENS.app, api_url: slack!.apiUrl, request_timeout_ms: 5_000, ...extra });
  const plugin = await relaySlack.create(options, files!.env);
  plugins.push(plugin);
  const opened = slack!.socket.opened;
  await plugin.start?.();
  await waitFor('the Socket Mode link', () => slack!.socket.opened > opened);
  return plugin;
}

describe('relay-slack: files from Slack', () => {
  test('a picture said in Slack is read through url_private_download with the bot token, streamed, its bytes whole', async () => {
    slack = await FakeSlack.start();
    files = relayFilesEnv([GENERAL]);
    await openRelay();
    slack.shareFile(GENERAL, 'U0ALICE001', 'look at <https://example.com|this>', { name: 'photo.png', mimetype: 'image/png', bytes: PICTURE });
    const { message } = await waitFor('the message handed on', () => files!.received[0]);
    expect(message).toMatchObject({ kind: 'message', text: 'look at this (https://example.com)', speaker: { platform: 'slack', id: 'U0ALICE001' } });
    // The text's line alone: the gateway shows the file's link after it.
    expect(message.chatText).toBe('<alice.l> look at this (https://example.com)');
    expect(message.files).toHaveLength(1);
    const [file] = message.files!;
    expect(file).toMatchObject({ name: 'photo.png', contentType: 'image/png', size: PICTURE.length });
    expect(slack.files.downloads).toBe(0);
    const bytes = await readAll(await file!.open(new AbortController().signal));
    expect(bytes.equals(PICTURE)).toBe(true);
    expect(slack.files.downloads).toBe(1);
    expect(slack.files.refusedDownloads).toBe(0);

    // A file alone (no text) is still a message.
    slack.shareFile(GENERAL, 'U0BOB00001', '', { name: 'notes.txt', mimetype: 'text/plain', bytes: Buffer.from('just a file\n') });
    const second = await waitFor('the file alone handed on', () => files!.received[1]);
    expect(second.message).toMatchObject({ kind: 'message', text: '' });
    expect(second.message.chatText).toBeUndefined();
    expect(second.message.files!.map((f) => f.name)).toEqual(['notes.txt']);
    expect((await readAll(await second.message.files![0]!.open(new AbortController().signal))).toString()).toBe('just a file\n');
  });

  test('the fake refuses a download without the bot token (Slack redirects to its sign-in page)', async () => {
    slack = await FakeSlack.start();
    const file = slack.files.add('U0ALICE001', { name: 'photo.png', mimetype: 'image/png', bytes: PICTURE });
    const url = slack.files.object(file).url_private_download as string;
    const bare = await request(url);
    await bare.body.dump();
    expect(bare.statusCode).toBe(302);
    const wrong = await request(url, { headers: { authorization: 'Bearer xoxb-not-the-token' } });
    await wrong.body.dump();
    expect(wrong.statusCode).toBe(302);
    expect(slack.files).toMatchObject({ downloads: 0, refusedDownloads: 2 });
  });

  test('a file object naming another host is not fetched: the read is refused and the other host never asked', async () => {
    slack = await FakeSlack.start();
    files = relayFilesEnv([GENERAL]);
    let asked = 0;
    bystander = createServer((_, response) => {
      asked += 1;
      response.end('secret intranet page');
    });
    await new Promise<void>((resolve) => bystander!.listen(0, '127.0.0.1', resolve));
    const elsewhere = `http://127.0.0.1:${(bystander.address() as AddressInfo).port}/admin/photo.png`;
    await openRelay();
    slack.shareFile(GENERAL, 'U0ALICE001', 'a trap', { name: 'photo.png', mimetype: 'image/png', bytes: PICTURE }, { url_private_download: elsewhere, url_private: elsewhere });
    const { message } = await waitFor('the message handed on', () => files!.received[0]);
    await expect(message.files![0]!.open(new AbortController().signal)).rejects.toThrow(/not fetched: the file's URL is not on Slack's files host/);
    expect(asked).toBe(0);
    expect(slack.files.downloads + slack.files.refusedDownloads).toBe(0);
  });
});

describe('relay-slack: files to Slack', () => {
  test('a gateway line\'s picture goes up natively (getUploadURLExternal, the bytes, completeUploadExternal) with the speaker and the text, escaped; its ts goes to the map', async () => {
    slack = await FakeSlack.start();
    files = relayFilesEnv([GENERAL]);
    const plugin = await openRelay();
    const picture = await files.stored('photo.png', 'image/png', PICTURE);
    plugin.endpoint!.send(GENERAL, lineWithFiles('k1', 'see <this> @channel', [picture]));
    const share = await waitFor('the share', () => slack!.files.shares[0]);
    expect(share).toMatchObject({ channel: GENERAL, text: `*alice*: see &lt;this&gt; @${ZWJ}channel` });
    expect(share.files.map((f) => f.name)).toEqual(['photo.png']);
    expect(share.files[0]!.bytes.equals(PICTURE)).toBe(true);
    expect(slack.files.uploads).toBe(1);
    // No text post besides: the comment is the line.
    expect(slack.posts).toEqual([]);
    await waitFor('the share\'s ts told', () => files!.posted.length === 1);
    expect(files.posted).toEqual([{ key: 'k1', channel: GENERAL, nativeId: share.ts }]);

    // A reply goes into the share's thread, with its file.
    const notes = await files.stored('notes.txt', 'text/plain', Buffer.from('minutes\n'));
    plugin.endpoint!.send(GENERAL, lineWithFiles('k2', '', [notes], { replyTo: share.ts, speaker: { platform: 'irc', id: 'bob!b@example.org', name: 'bob' } }));
    const reply = await waitFor('the reply\'s share', () => slack!.files.shares[1]);
    expect(reply).toMatchObject({ channel: GENERAL, thread_ts: share.ts, text: '*bob*' });
    expect(reply.files[0]!.bytes.toString()).toBe('minutes\n');
    expect(slack.api.calls.filter((c) => c.method === 'files.completeUploadExternal').map((c) => c.args.channel_id)).toEqual([GENERAL, GENERAL]);
  });

  test('over max_file_size, or gone from the store: the line with the file\'s link instead; a refused file says so', async () => {
    slack = await FakeSlack.start();
    files = relayFilesEnv([GENERAL]);
    const plugin = await openRelay({ max_file_size: 1_000 });
    const big = await files.stored('photo.png', 'image/png', PICTURE);
    const small = await files.stored('a<b>.txt', 'text/plain', Buffer.from('small'));
    plugin.endpoint!.send(GENERAL, lineWithFiles('k1', 'two files', [big, small], { refusedFiles: [{ name: 'tool.exe', reason: 'not allowed (application/x-msdownload)' }] }));
    const share = await waitFor('the small file shared', () => slack!.files.shares[0]);
    expect(share.files.map((f) => f.name)).toEqual(['a<b>.txt']);
    expect(share.text).toBe(`*alice*: two files\n[image: photo.png ${big.url}]\n[a file was not relayed: tool.exe: not allowed (application/x-msdownload)]`);

    // The store's retention removed it before it went out: a text post with its link.
    const gone = await files.stored('old.png', 'image/png', PICTURE.subarray(0, 100));
    await rm(files.media.pathOf(gone.id));
    plugin.endpoint!.send(GENERAL, lineWithFiles('k2', 'an old one', [gone]));
    const post = await waitFor('the post with the link', () => slack!.posts[0]);
    expect(post).toMatchObject({ channel: GENERAL, text: `an old one\n[image: old.png ${gone.url}]`, username: 'alice' });
    expect(slack.files.uploads).toBe(1);
    await waitFor('both told', () => files!.posted.length === 2);
  });

  test('a token without files:write: the files go as links, said once, and the relay goes on', async () => {
    slack = await FakeSlack.start();
    files = relayFilesEnv([GENERAL]);
    const plugin = await openRelay();
    slack.fault('files.getUploadURLExternal', { times: 2, error: 'missing_scope', needed: 'files:write' });
    for (const key of ['k1', 'k2']) {
      const picture = await files.stored(`${key}.png`, 'image/png', PICTURE.subarray(0, 500));
      plugin.endpoint!.send(GENERAL, lineWithFiles(key, `picture ${key}`, [picture]));
    }
    await waitFor('both posts', () => slack!.posts.length === 2);
    expect(slack.posts.map((p) => p.text)).toEqual([
      expect.stringMatching(/^picture k1\n\[image: k1\.png https:\/\/media\.example\/files\/[0-9a-f]{32}\/k1\.png\]$/),
      expect.stringMatching(/^picture k2\n\[image: k2\.png https:\/\/media\.example\/files\/[0-9a-f]{32}\/k2\.png\]$/),
    ]);
    expect(slack.files.shares).toEqual([]);
    expect(files.log.lines.filter((line) => String(line.msg).includes('lacks files:write'))).toHaveLength(1);
    expect(plugin.stats!()).toMatchObject({ disabled: 0, failed: 0, relayed_out: 2 });
  });

  test('the answer of completeUploadExternal lost, and the relay stopped before it was taken: after the restart the share is found in the channel, not uploaded again', async () => {
    slack = await FakeSlack.start();
    files = relayFilesEnv([GENERAL]);
    const first = await openRelay({ request_timeout_ms: 1_000 });
    const picture = await files.stored('photo.png', 'image/png', PICTURE);
    slack.loseAnswer('files.completeUploadExternal', 'hang');
    first.endpoint!.send(GENERAL, lineWithFiles('k1', 'in flight', [picture]));
    await waitFor('the share made', () => slack!.files.shares.length === 1);
    await first.stop!();
    expect(files.posted).toEqual([]);

    await openRelay();
    await waitFor('the share found and told', () => files!.posted.length === 1);
    expect(files.posted).toEqual([{ key: 'k1', channel: GENERAL, nativeId: slack.files.shares[0]!.ts }]);
    expect(slack.files.shares).toHaveLength(1);
    expect(slack.files.uploads).toBe(1);
    // One look in the channel (the catch-up's reads of it ask for no metadata).
    expect(slack.api.calls.filter((c) => c.method === 'conversations.history' && c.args.include_all_metadata === 'true')).toHaveLength(1);
    // The queue goes on.
    const next = await files.stored('next.png', 'image/png', PICTURE.subarray(0, 200));
    plugins[1]!.endpoint!.send(GENERAL, lineWithFiles('k2', 'after the restart', [next]));
    await waitFor('the next share', () => slack!.files.shares.length === 2);
    expect(slack.files.shares.map((s) => s.text)).toEqual(['*alice*: in flight', '*alice*: after the restart']);
  });
});
