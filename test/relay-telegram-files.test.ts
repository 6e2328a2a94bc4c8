import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import { FILE_STORAGE, type Attachment, type FileBytes, type GatewayPort, type IncomingMessage } from '../src/index.js';
import { MediaStore } from '../src/media/media-store.js';
import { botApi } from '../plugins/relay-telegram/client.js';
import { downloadUrl } from '../plugins/relay-telegram/files-in.js';
import { planPost } from '../plugins/relay-telegram/files-out.js';
import { relayTelegramOptions } from '../plugins/relay-telegram/options.js';
import { TelegramInbound, type TelegramUpdate } from '../plugins/relay-telegram/inbound.js';
import { TelegramOutbound, type OutboundCounters } from '../plugins/relay-telegram/outbound.js';
import { SendPacing } from '../plugins/relay-telegram/pacing.js';
import { FakeTelegram, type TgUser } from './helpers/fake-telegram.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-telegram's files against the local Bot API (test/helpers/fake-telegram.ts) through grammY's
 * client: a file said on Telegram read through getFile and the token's download only; files from the
 * media store uploaded by sendPhoto / sendDocument with the line as caption; the limits; a retry.
 */

const RANDOM = -1001000000002;
const DAVE: TgUser = { id: 502, is_bot: false, first_name: 'dave' };
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(300_000)]);

let fake: FakeTelegram | undefined;
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

/** The relay's intake with a gateway that keeps what it is handed. */
function inboundOf(f: FakeTelegram, received: IncomingMessage[]): TelegramInbound {
  const gateway = { receive: async (_channel: string, message: IncomingMessage) => void received.push(message) } as unknown as GatewayPort;
  return new TelegramInbound({
    gateway, log: pino({ level: 'silent' }), counters: { received: 0, receive_retries: 0 }, incoming: '<{name}> {text}', self: () => f.bot.id,
    has: (channel) => channel === String(RANDOM), noteTopic: () => undefined,
    bot: { api: () => botApi(f.token, f.url, 5_000), apiUrl: f.url, token: f.token }, stopping: new AbortController().signal,
  });
}

/** The relay's sending side over a media store in a temp dir (the core's store, before the gateway's intake fills it). */
function outboundOf(f: FakeTelegram, media: MediaStore, posted: Map<string, string>, pacing = new SendPacing('off')): { outbound: TelegramOutbound; counters: OutboundCounters } {
  const counters = { posted: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, rate_limited: 0, files_sent: 0, files_linked: 0 };
  const outbound = new TelegramOutbound({
    dataDir: dir!, storage: FILE_STORAGE, queueMax: 100, api: () => botApi(f.token, f.url, 5_000), filesApi: () => botApi(f.token, f.url, 5_000), media,
    token: f.token, pacing, log: pino({ level: 'silent' }), counters, durable: () => Promise.resolve(),
    posted: (item, id) => posted.set(item.key, id), nativeOf: () => undefined, topicOf: () => undefined, fatal: () => undefined,
  });
  return { outbound, counters };
}

async function setup(): Promise<{ f: FakeTelegram; media: MediaStore }> {
  fake = await FakeTelegram.start();
  fake.addChat({ id: RANDOM, type: 'group', title: 'Random' });
  dir = mkdtempSync(join(tmpdir(), 'groupwire-tg-files-'));
  return { f: fake, media: new MediaStore(join(dir, 'media'), 'https://media.example.org') };
}

const LINE = { template: '<{name}> {text}', name: 'Bob' };

describe('relay-telegram: files in', () => {
  test('a photo (its largest size) and a document said on Telegram are read through getFile and the token\'s download; the caption is the text; a file alone is still a line', async () => {
    const { f } = await setup();
    const small = f.addFile(randomBytes(100));
    const large = f.addFile(PNG);
    const doc = f.addFile(Buffer.from('the minutes\n'), undefined, 'txt');
    f.say(RANDOM, DAVE, '', { extra: { text: undefined, caption: 'look', photo: [{ ...small, width: 90, height: 60 }, { ...large, width: 1280, height: 853 }] } });
    f.say(RANDOM, DAVE, '', { extra: { text: undefined, document: { ...doc, file_name: 'minutes.txt', mime_type: 'text/plain' } } });
    const received: IncomingMessage[] = [];
    await inboundOf(f, received).batch(f.messages.map((message, index) => ({ update_id: index + 1, message }) as TelegramUpdate));
    expect(received.map((m) => [m.text, m.chatText, m.files?.map((file) => [file.name, file.contentType, file.size])])).toEqual([
      ['look', '<dave> look', [['photo.jpg', 'image/jpeg', PNG.length]]],
      ['', undefined, [['minutes.txt', 'text/plain', 12]]],
    ]);
    expect(f.downloads).toBe(0);
    const signal = new AbortController().signal;
    expect((await bytesOf(await received[0]!.files![0]!.open(signal))).equals(PNG)).toBe(true);
    expect((await bytesOf(await received[1]!.files![0]!.open(signal))).toString()).toBe('the minutes\n');
    expect(f.calls.filter((c) => c === 'getFile')).toHaveLength(2);
    expect(f.downloads).toBe(2);
    expect(f.downloadsRefused).toBe(0);
  });

  test('over 20 MB: the size is said and open() rejects with Telegram\'s reason, without a getFile; a path off the API root is not fetched; no error names the token', async () => {
    const { f } = await setup();
    const huge = f.addFile(undefined, 40_000_000, 'mp4');
    const odd = f.addFile(Buffer.from('secret'), undefined, 'txt');
    f.say(RANDOM, DAVE, '', { extra: { text: undefined, video: { ...huge, mime_type: 'video/mp4' } } });
    f.say(RANDOM, DAVE, '', { extra: { text: undefined, document: { ...odd, file_name: 'x.txt' } } });
    const received: IncomingMessage[] = [];
    await inboundOf(f, received).batch(f.messages.map((message, index) => ({ update_id: index + 1, message }) as TelegramUpdate));
    const [video, document] = received.map((m) => m.files![0]!);
    expect([video!.name, video!.size]).toEqual(['video.mp4', 40_000_000]);
    const signal = new AbortController().signal;
    await expect(video!.open(signal)).rejects.toThrow(/^Telegram bots cannot download files over 20 MB \(this one is 40 MB\)$/);
    expect(f.calls).not.toContain('getFile');
    // A Bot API that answers a path out of its root (a local server's absolute path, a `..`, a URL): nothing is fetched.
    for (const path of ['/var/lib/telegram-bot-api/x.txt', '../../x.txt', 'https://elsewhere.example/x.txt', 'a/./b']) {
      [...f.files.values()].find((file) => file.file_id === odd.file_id)!.file_path = path;
      const error = await document!.open(signal).then(() => undefined, (e: Error) => e);
      expect(error?.message).toMatch(/file path the relay does not download from/);
      expect(error?.message).not.toContain(f.token);
    }
    expect(f.downloads + f.downloadsRefused).toBe(0);
    expect(() => downloadUrl('http://127.0.0.1:1/', 'T', 'photos/file_1.jpg')).not.toThrow();
    expect(downloadUrl('https://api.telegram.org/', '1:AA', 'photos/file_1.jpg')).toBe('https://api.telegram.org/file/bot1:AA/photos/file_1.jpg');
  });
});

describe('relay-telegram: files out', () => {
  test('an image by sendPhoto with the line as caption, a document by sendDocument, bytes equal; a long line goes first as text; too big, refused or gone: link lines', async () => {
    const { f, media } = await setup();
    const photo = await media.put(Readable.from([PNG]), { name: 'cat.png', contentType: 'image/png', image: true });
    const notes = await media.put(Readable.from([Buffer.from('a,b\n1,2\n')]), { name: 'data "q";.csv', contentType: 'text/csv', image: false });
    const big: Attachment = { ...notes, id: 'c'.repeat(32), name: 'big.iso', size: 60_000_000, url: 'https://media.example.org/big' };
    const gone = await media.put(Readable.from([Buffer.from('soon gone')]), { name: 'gone.txt', contentType: 'text/plain', image: false });
    const posted = new Map<string, string>();
    const { outbound, counters } = outboundOf(f, media, posted);
    cleanups.push(() => outbound.stop());
    outbound.start([String(RANDOM)]);

    const push = (key: string, text: string, files: Attachment[], refused: Array<{ name: string; reason: string }> = []) =>
      outbound.push({ key, channel: String(RANDOM), kind: 'post', ...planPost({ ...LINE, text }, files, refused, 50_000_000, true) });
    push('k1', 'look at this', [photo, notes]);
    push('k2', 'x'.repeat(1_100), [photo]);
    push('k3', 'the image', [big], [{ name: 'tool.exe', reason: 'a type not relayed (application/x-msdownload)' }]);
    await rm(media.pathOf(gone.id));
    push('k4', '', [gone]);
    await waitFor('all sent', () => outbound.size === 0 && posted.size === 4);

    expect(f.uploads.map((u) => [u.method, u.filename, u.caption, u.bytes.length])).toEqual([
      ['sendPhoto', 'cat.png', '<Bob> look at this', PNG.length],
      // Only the first file carries the line; the next carries its speaker.
      ['sendDocument', 'data _q__.csv', '<Bob>', notes.size],
      ['sendPhoto', 'cat.png', '<Bob>', PNG.length],
    ]);
    expect(f.uploads[0]!.bytes.equals(PNG)).toBe(true);
    expect(f.uploads[1]!.bytes.toString()).toBe('a,b\n1,2\n');
    const texts = f.botPosts(RANDOM).map((m) => m.text ?? `[${m.photo ? 'photo' : 'document'}] ${m.caption}`);
    expect(texts).toEqual([
      '[photo] <Bob> look at this',
      '[document] <Bob>',
      `<Bob> ${'x'.repeat(1_100)}`,
      '[photo] <Bob>',
      '<Bob> the image\n[file: big.iso https://media.example.org/big]\n[a file was not relayed: tool.exe: a type not relayed (application/x-msdownload)]',
      `<Bob> [file: gone.txt ${gone.url}]`,
    ]);
    // The native id is the first message's: the photo of k1, the text of k2.
    expect(posted.get('k1')).toBe(String(f.botPosts(RANDOM)[0]!.message_id));
    expect(posted.get('k2')).toBe(String(f.botPosts(RANDOM)[2]!.message_id));
    expect(counters).toMatchObject({ posted: 4, files_sent: 3, files_linked: 1, dropped: 0 });
  });

  test('an "image" Telegram cannot make a photo of goes as a document; a document over max_file_size is its link', async () => {
    const { f, media } = await setup();
    const fakeImage = await media.put(Readable.from([Buffer.from('not really a png')]), { name: 'odd.png', contentType: 'image/png', image: true });
    const posted = new Map<string, string>();
    const { outbound, counters } = outboundOf(f, media, posted);
    cleanups.push(() => outbound.stop());
    outbound.start([String(RANDOM)]);
    outbound.push({ key: 'k1', channel: String(RANDOM), kind: 'post', ...planPost({ ...LINE, text: 'hm' }, [fakeImage], [], 50_000_000, true) });
    outbound.push({ key: 'k2', channel: String(RANDOM), kind: 'post', ...planPost({ ...LINE, text: 'small limit' }, [fakeImage], [], 10, true) });
    await waitFor('sent', () => posted.size === 2 && outbound.size === 0);
    expect(f.bodies.filter((b) => b.method !== 'getMe').map((b) => b.method)).toEqual(['sendPhoto', 'sendDocument', 'sendPhoto', 'sendDocument']);
    expect(f.uploads.map((u) => [u.method, u.caption, u.bytes.toString()])).toEqual([
      ['sendDocument', '<Bob> hm', 'not really a png'],
      ['sendDocument', '<Bob> small limit', 'not really a png'],
    ]);
    // An image within sendPhoto's 10 MB is tried as a photo first whatever max_file_size says; only documents are held to it.
    expect(counters).toMatchObject({ files_sent: 2, files_linked: 0, dropped: 0 });
    expect(planPost({ ...LINE, text: 'x' }, [{ ...fakeImage, image: false }], [], 10, true)).toEqual({ text: `<Bob> x\n[file: odd.png ${fakeImage.url}]`, files: [] });
    // max_file_size: the Bot API's 50 MB by default, at most a local server's 2,000 MB.
    const token = '123456789:AAxxxxxxxxxxxxxxxxxxxxxxxxxx';
    expect(relayTelegramOptions.parse({ token }).max_file_size).toBe(50_000_000);
    expect(relayTelegramOptions.safeParse({ token, max_file_size: 3_000_000_000 }).success).toBe(false);
    expect(relayTelegramOptions.safeParse({ token, max_file_size: 0 }).success).toBe(false);
  });

  test('a line of text and a file: a lost answer and a stop mid-upload resend only the message not confirmed (Telegram has no idempotency key)', async () => {
    const { f, media } = await setup();
    const photo = await media.put(Readable.from([PNG]), { name: 'cat.png', contentType: 'image/png', image: true });
    const item = (key: string) => ({ key, channel: String(RANDOM), kind: 'post' as const, ...planPost({ ...LINE, text: 'y'.repeat(1_500) }, [photo], [], 50_000_000, true) });
    const posted = new Map<string, string>();

    const first = outboundOf(f, media, posted);
    first.outbound.start([String(RANDOM)]);
    f.stallFileSends(1);
    first.outbound.push(item('k1'));
    await waitFor('the text sent and the photo made', () => f.uploads.length === 1);
    // Stopped (a kill -9 would leave the same queue file): the text's confirmation was noted with the line.
    await first.outbound.stop();
    const second = outboundOf(f, media, posted);
    cleanups.push(() => second.outbound.stop());
    second.outbound.start([String(RANDOM)]);
    await waitFor('the line done', () => second.outbound.size === 0 && f.uploads.length === 2);
    // The photo's answer is lost: the photo goes again, the text does not.
    f.loseSendAnswers(1, 'sendPhoto');
    second.outbound.push(item('k2'));
    await waitFor('the second line done', () => second.outbound.size === 0 && f.uploads.length === 4);
    const shown = f.botPosts(RANDOM).map((m) => (m.text ? 'text' : 'photo'));
    // Each text once; the photo whose answer never came shows twice: at least once, never lost, never the whole line again.
    expect(shown).toEqual(['text', 'photo', 'photo', 'text', 'photo', 'photo']);
    expect(f.bodies.filter((b) => b.method === 'sendMessage')).toHaveLength(2);
    expect(second.counters.retries).toBe(1);
  });

  test('each message of a line with files takes its turn of the chat\'s pace: a text and two files are three sends', async () => {
    const { f, media } = await setup();
    const photo = await media.put(Readable.from([PNG]), { name: 'cat.png', contentType: 'image/png', image: true });
    // A clock of the test's own: each pause moves it on, and is counted.
    let now = 0;
    const pauses: number[] = [];
    const pacing = new SendPacing({ per_second: 30, chat_per_minute: 60, chat_burst: 1 }, { now: () => now, sleep: async (ms) => void (pauses.push(ms), now += ms) });
    const posted = new Map<string, string>();
    const { outbound } = outboundOf(f, media, posted, pacing);
    cleanups.push(() => outbound.stop());
    outbound.start([String(RANDOM)]);
    outbound.push({ key: 'k1', channel: String(RANDOM), kind: 'post', ...planPost({ ...LINE, text: 'z'.repeat(1_100) }, [photo, photo], [], 50_000_000, true) });
    await waitFor('sent', () => outbound.size === 0 && f.uploads.length === 2);
    // One a second in the chat after a burst of one: the second and third messages each waited a second.
    expect(pauses).toEqual([1000, 1000]);
  });
});
