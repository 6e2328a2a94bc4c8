import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import { DurableQueue, FILE_STORAGE, type Attachment, type FileBytes, type GatewayPort, type IncomingMessage } from '../src/index.js';
import { MediaStore } from '../src/media/media-store.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { MattermostInbound, type MattermostPost } from '../plugins/relay-mattermost/inbound.js';
import { MattermostOutbound, type OutboundCounters, type OutboundItem } from '../plugins/relay-mattermost/outbound.js';
import { escapeForMattermost, renderLine } from '../plugins/relay-mattermost/render.js';
import { MattermostRest } from '../plugins/relay-mattermost/session.js';
import { fileSettingsOf, markdownFileLines, type FileSettings } from '../plugins/relay-mattermost/files-out.js';
import { relayMattermostOptions } from '../plugins/relay-mattermost/options.js';
import { FakeMattermost, type FakePost } from './helpers/fake-mattermost.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-mattermost's files against the local Mattermost (test/helpers/fake-mattermost.ts) through
 * Client4: a post's file_ids read through GET /api/v4/files/{id} with the token, nothing else of the
 * post fetched; files from the media store uploaded with POST /api/v4/files and attached by file_ids,
 * once across a stop mid-send; the server's MaxFileSize.
 */

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(200_000)]);

let fake: FakeMattermost | undefined;
let dir: string | undefined;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  fake = dir = undefined;
});

async function bytesOf(source: FileBytes): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of source as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

async function setup(): Promise<{ f: FakeMattermost; channel: string; media: MediaStore }> {
  fake = await FakeMattermost.start();
  const channel = fake.addChannel('town-square');
  dir = mkdtempSync(join(tmpdir(), 'groupwire-mm-files-'));
  return { f: fake, channel, media: new MediaStore(join(dir, 'media'), 'https://media.example.org') };
}

function restOf(f: FakeMattermost, token = f.botToken): MattermostRest {
  return new MattermostRest(f.url, token, 5_000, new AbortController().signal);
}

/** The relay's intake with a gateway that keeps what it is handed. */
function inboundOf(f: FakeMattermost, channel: string, received: IncomingMessage[], token?: string): MattermostInbound {
  const gateway = { receive: async (_channel: string, message: IncomingMessage) => void received.push(message) } as unknown as GatewayPort;
  const rest = restOf(f, token);
  return new MattermostInbound({
    gateway, store: KeyValueStore.memory(), log: pino({ level: 'silent' }), counters: { received: 0, caught_up: 0, receive_retries: 0 }, incoming: '<{name}> {text}',
    rest: () => rest, self: () => f.bot.id, channelsOf: (id) => (id === channel ? ['general'] : []), showName: 'username', ignoreBots: false,
    refused: () => undefined, stopping: new AbortController().signal,
  });
}

/** The relay's sending side over a queue file and a media store in a temp dir (the core's store, before the gateway's intake fills it). */
function outboundOf(f: FakeMattermost, channel: string, media: MediaStore, settings: FileSettings = { enabled: true, maxFileSize: 104_857_600 }) {
  const counters: OutboundCounters = { posted: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, rate_limited: 0, found_after_retry: 0, files_sent: 0, files_linked: 0 };
  const rest = restOf(f);
  const queue = DurableQueue.open<OutboundItem>(join(dir!, 'to-mattermost.json'), { storage: FILE_STORAGE, maxItems: 100 });
  const outbound = new MattermostOutbound(queue, {
    rest: () => rest, idOf: (name) => (name === 'town-square' ? channel : undefined), self: () => f.bot.id, log: pino({ level: 'silent' }), counters,
    durable: () => Promise.resolve(), posted: () => undefined, newest: () => undefined, nativeOf: () => undefined,
    render: (line) => ({ message: renderLine({ template: '**{name}**: {text}', name: line.speaker.name, text: line.text, action: line.action }) }),
    fatal: () => undefined, media, files: () => settings, fileTimeoutMs: 5_000,
  });
  return { outbound, counters };
}

const line = (text: string) => ({ speaker: { name: 'Bob', id: 'bob', platform: 'chat' }, text, action: false });
const botPosts = (f: FakeMattermost, channel: string): FakePost[] => f.inChannel(channel).filter((p) => p.user_id === f.bot.id);

describe('relay-mattermost: files in', () => {
  test('a post\'s files are read through GET /api/v4/files/{id} with the token (bytes equal); its metadata\'s embeds and images, and files it does not list, are not fetched', async () => {
    const { f, channel } = await setup();
    const alice = f.addUser('alice').user;
    let hostileHits = 0;
    const hostile: Server = createServer((_req, res) => void (hostileHits += 1, res.end('gotcha')));
    await new Promise<void>((ready) => hostile.listen(0, '127.0.0.1', ready));
    cleanups.push(() => new Promise((done) => hostile.close(() => done())));
    const elsewhere = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/steal.png`;
    const post = f.sayFiles(channel, alice, 'the cat', [{ name: 'cat.png', mime_type: 'image/png', bytes: PNG }, { name: 'notes.txt', mime_type: 'text/plain', bytes: Buffer.from('milk\n') }], {
      embeds: [{ type: 'image', url: elsewhere }], images: { [elsewhere]: { width: 1, height: 1 } },
    });
    // A file of the metadata that the post does not list (and its link elsewhere): not read.
    (post.metadata.files as Array<Record<string, unknown>>).push({ id: 'z'.repeat(26), name: 'evil.png', link: elsewhere });
    const received: IncomingMessage[] = [];
    const inbound = inboundOf(f, channel, received);
    inbound.live(JSON.parse(JSON.stringify(post)) as MattermostPost);
    // A file alone, its post without metadata: the name is asked of GET /files/{id}/info.
    const bare = f.sayFiles(channel, alice, '', [{ name: 'alone.bin', mime_type: 'application/octet-stream', bytes: Buffer.from([1, 2, 3]) }]);
    inbound.live({ ...JSON.parse(JSON.stringify(bare)) as MattermostPost, metadata: {} });
    await inbound.idle();
    expect(received.map((m) => [m.text, m.chatText, m.files?.map((file) => [file.name, file.contentType, file.size])])).toEqual([
      ['the cat', '<alice> the cat', [['cat.png', 'image/png', PNG.length], ['notes.txt', 'text/plain', 5]]],
      ['', undefined, [['alone.bin', 'application/octet-stream', 3]]],
    ]);
    expect(f.downloads).toBe(0);
    const signal = new AbortController().signal;
    expect((await bytesOf(await received[0]!.files![0]!.open(signal))).equals(PNG)).toBe(true);
    expect((await bytesOf(await received[0]!.files![1]!.open(signal))).toString()).toBe('milk\n');
    expect([...await bytesOf(await received[1]!.files![0]!.open(signal))]).toEqual([1, 2, 3]);
    expect(f.downloads).toBe(3);
    expect(f.calls.filter((c) => c.startsWith('GET /files/'))).toEqual([
      `GET /files/${bare.file_ids![0]}/info`, `GET /files/${post.file_ids![0]}`, `GET /files/${post.file_ids![1]}`, `GET /files/${bare.file_ids![0]}`,
    ]);
    expect(hostileHits).toBe(0);
    // Without a token the server refuses the bytes.
    const anonymous = await fetch(`${f.url}/api/v4/files/${post.file_ids![0]}`);
    expect([anonymous.status, f.refused]).toEqual([401, 1]);
  });
});

describe('relay-mattermost: files out', () => {
  test('uploaded with POST /api/v4/files and attached by file_ids, bytes equal, the line as the message; over MaxFileSize, refused or gone from the store: link lines', async () => {
    const { f, channel, media } = await setup();
    const photo = await media.put(Readable.from([PNG]), { name: 'cat.png', contentType: 'image/png', image: true });
    const notes = await media.put(Readable.from([Buffer.from('a,b\n')]), { name: 'data.csv', contentType: 'text/csv', image: false });
    const gone = await media.put(Readable.from([Buffer.from('soon gone')]), { name: 'gone.txt', contentType: 'text/plain', image: false });
    const big: Attachment = { ...notes, id: 'c'.repeat(32), name: 'big.iso', size: 300_000, url: 'https://media.example.org/cccc/big.iso' };
    const { outbound, counters } = outboundOf(f, channel, media, { enabled: true, maxFileSize: 250_000 });
    cleanups.push(() => outbound.stop());
    outbound.start();
    await rm(media.pathOf(gone.id));
    outbound.push({ key: 'k1', channel: 'town-square', kind: 'post', line: line('look'), files: [photo, notes] });
    outbound.push({ key: 'k2', channel: 'town-square', kind: 'post', line: line(''), files: [big, gone], refused: [{ name: 'tool.exe', reason: 'a type not relayed' }] });
    await waitFor('both posted', () => counters.posted === 2);
    const [first, second] = botPosts(f, channel);
    expect(first!.message).toBe('**Bob**: look');
    expect(first!.file_ids).toHaveLength(2);
    const attached = first!.file_ids!.map((id) => f.files.get(id)!);
    expect(attached.map((file) => [file.name, file.mime_type, file.channel_id])).toEqual([['cat.png', 'image/png', channel], ['data.csv', 'text/csv', channel]]);
    expect(attached[0]!.bytes.equals(PNG)).toBe(true);
    expect(attached[1]!.bytes.toString()).toBe('a,b\n');
    // The link lines as markdown links (the name escaped, the whole URL linked), after the speaker; a refused file's line escaped as text.
    expect(second!.file_ids).toBeUndefined();
    expect(second!.message).toBe([
      '**Bob**: [file: big.iso](https://media.example.org/cccc/big.iso)', `[file: gone.txt](${gone.url})`, '\\[a file was not relayed: tool.exe: a type not relayed\\]',
    ].join('\n'));
    expect(f.uploads).toBe(2);
    expect(counters).toMatchObject({ posted: 2, files_sent: 2, files_linked: 2, dropped: 0 });
  });

  test('a server that takes no attachments (501): the file goes as its link, the line is not lost', async () => {
    const { f, channel, media } = await setup();
    f.fileAttachments = false;
    const photo = await media.put(Readable.from([PNG]), { name: 'cat.png', contentType: 'image/png', image: true });
    const { outbound, counters } = outboundOf(f, channel, media);
    cleanups.push(() => outbound.stop());
    outbound.start();
    outbound.push({ key: 'k1', channel: 'town-square', kind: 'post', line: line('see'), files: [photo] });
    await waitFor('posted', () => counters.posted === 1);
    expect(botPosts(f, channel).map((p) => p.message)).toEqual([`**Bob**: see\n[image: cat.png](${photo.url})`]);
    expect(counters).toMatchObject({ files_sent: 0, files_linked: 1, dropped: 0 });
    // A name with markup is escaped in the label; the URL's parentheses and spaces are encoded (the link ends where the URL does).
    const odd = { ...photo, name: 'a_b [1].png', url: 'https://m.example.org/x/a_b%20(1).png' };
    expect(markdownFileLines([odd, { ...odd, url: undefined }], [], escapeForMattermost)).toEqual([
      '[image: a\\_b \\[1\\].png](https://m.example.org/x/a_b%20%281%29.png)', '\\[image: a\\_b \\[1\\].png\\]',
    ]);
    // The limit: the server's MaxFileSize unless max_file_size says otherwise; 100 MB when neither says.
    expect(fileSettingsOf({ MaxFileSize: '52428800', EnableFileAttachments: 'true' }, undefined)).toEqual({ enabled: true, maxFileSize: 52_428_800 });
    expect(fileSettingsOf({ MaxFileSize: '52428800' }, 1_000)).toEqual({ enabled: true, maxFileSize: 1_000 });
    expect(fileSettingsOf({ EnableFileAttachments: 'false' }, undefined)).toEqual({ enabled: false, maxFileSize: 104_857_600 });
    const base = { server_url: 'https://chat.example.org', token: 'x'.repeat(26) };
    expect(relayMattermostOptions.parse(base).max_file_size).toBeUndefined();
    expect(relayMattermostOptions.safeParse({ ...base, max_file_size: -1 }).success).toBe(false);
  });

  test('stopped mid-send (kill -9 alike) after the upload, before the post was confirmed, and mid-upload: one post each, an uploaded file not uploaded again', async () => {
    const { f, channel, media } = await setup();
    // The server has long forgotten the pending_post_id: only the history look-up can tell.
    f.pendingTtlMs = 0;
    const photo = await media.put(Readable.from([PNG]), { name: 'cat.png', contentType: 'image/png', image: true });
    const notes = await media.put(Readable.from([Buffer.from('a,b\n')]), { name: 'data.csv', contentType: 'text/csv', image: false });

    // 1. The post made, its answer never had.
    f.stallAnswer(1);
    let run = outboundOf(f, channel, media);
    run.outbound.start();
    run.outbound.push({ key: 'k1', channel: 'town-square', kind: 'post', line: line('one'), files: [photo] });
    await waitFor('the post made', () => botPosts(f, channel).length === 1);
    await run.outbound.stop();
    run = outboundOf(f, channel, media);
    run.outbound.start();
    await waitFor('the line taken', () => run.outbound.size === 0);
    expect(run.counters).toMatchObject({ found_after_retry: 1, posted: 1, files_sent: 0 });
    expect([botPosts(f, channel).length, f.uploads]).toEqual([1, 1]);
    await run.outbound.stop();

    // 2. The first file uploaded, the second's answer never had: the first is not uploaded again.
    f.stallUpload(1, 1);
    run = outboundOf(f, channel, media);
    run.outbound.start();
    run.outbound.push({ key: 'k2', channel: 'town-square', kind: 'post', line: line('two'), files: [photo, notes] });
    await waitFor('both uploads in', () => f.uploads === 3);
    await run.outbound.stop();
    run = outboundOf(f, channel, media);
    cleanups.push(() => run.outbound.stop());
    run.outbound.start();
    await waitFor('the line taken', () => run.outbound.size === 0);
    const posts = botPosts(f, channel);
    expect(posts.map((p) => [p.message, p.file_ids?.length])).toEqual([['**Bob**: one', 1], ['**Bob**: two', 2]]);
    // The photo once more than the stalled run's two; the CSV again (its answer never came): four uploads in all, two posts.
    expect(f.uploads).toBe(4);
    expect(run.counters).toMatchObject({ files_sent: 1, posted: 1 });
    expect(f.files.get(posts[1]!.file_ids![0]!)!.bytes.equals(PNG)).toBe(true);
  });
});
