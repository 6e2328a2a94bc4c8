import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, test } from 'vitest';
import type { IncomingFile, IncomingMessage, OutgoingMessage } from '../src/index.js';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, waitFor, type Env, type GatewaySpec, type PluginSpec } from './helpers/supervisor.js';

/**
 * Files across the gateway (docs/gateways.md "Files"), end to end: a relay written the way a user writes
 * one hands on lines with files (IncomingFile, read from a local file here), the gateway's intake reads
 * them into the media store under its limits, the chat shows each as a link line with the speaker, the
 * other relay gets them as Attachments, and the store's listener serves the link (the bytes compared).
 */

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const INDEX = pathToFileURL(join(ROOT, 'src', 'index.ts')).href;

interface Sent extends OutgoingMessage {
  channel: string;
}

interface MemoryPlatform {
  sent: Record<string, Sent[]>;
  say: Record<string, (channel: string, message: IncomingMessage) => Promise<void>>;
  /** The relayed lines the chain saw (ctx.own.relayed), with their files: what the logger records. */
  relayed?: Array<{ text: string; files: string[]; refused: string[] }>;
}

const platform = (): MemoryPlatform => {
  const global = globalThis as { __filesPlatform?: MemoryPlatform };
  global.__filesPlatform ??= { sent: {}, say: {} };
  return global.__filesPlatform;
};

const PLUGIN = `import { definePlugin } from ${JSON.stringify(INDEX)};
const hub = (globalThis.__filesPlatform ??= { sent: {}, say: {} });
const passThrough = { safeParse: (value) => ({ success: true, data: value ?? {} }) };
export default definePlugin({
  name: 'relay-files',
  options: passThrough,
  ownPosts: true,
  platform: {
    name: 'memory',
    channels: (options) => Object.entries(options.channels ?? {}).map(([chat, channel]) => ({ chat, channel, direction: 'inout' })),
  },
  create(options, env) {
    let count = 0;
    hub.say[options.id] = (channel, message) => env.gateway.receive(channel, message);
    return {
      async handle(ctx, next) {
        const relayed = ctx.own?.relayed;
        if (relayed && options.id === 'a') (hub.relayed ??= []).push({ text: relayed.text, files: (relayed.files ?? []).map((f) => f.name), refused: (relayed.refusedFiles ?? []).map((f) => f.name) });
        await next();
      },
      endpoint: {
        send(channel, message) {
          const nativeId = options.id + '-' + (++count);
          (hub.sent[options.id] ??= []).push({ ...message, source: undefined, channel, nativeId });
          env.gateway.posted(message.key, channel, nativeId);
        },
      },
    };
  },
});
`;

/** A tiny PNG: the signature and an IHDR chunk, then filler (the intake checks only the first bytes). */
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]), Buffer.alloc(3000, 7)]);

let env: Env | undefined;
let irc: { server: IrcServer; watcher: IrcWatcher } | undefined;
afterEach(async () => {
  irc?.watcher.close();
  await env?.close();
  await irc?.server.close();
  irc = undefined;
  env = undefined;
  platform().sent = {};
  platform().say = {};
  platform().relayed = [];
});

const speaker = (name: string) => ({ platform: 'memory', id: `id-${name}`, name });
const said = (nativeId: string, text: string, files: IncomingFile[] = []): IncomingMessage =>
  ({ kind: 'message', text, speaker: speaker('uma'), nativeId, ...(files.length ? { files } : {}) });

/** A file read from disk, as a platform's file API would give it. */
function diskFile(dir: string, name: string, bytes: Buffer, extra: Partial<IncomingFile> = {}): IncomingFile {
  const path = join(dir, `src-${name}`);
  writeFileSync(path, bytes);
  return { name, size: bytes.length, open: async () => createReadStream(path), ...extra };
}

async function setUp(media: Record<string, unknown> = {}, other: PluginSpec = { use: './relay-files.mjs', with: { id: 'b', channels: { general: '#b' } } }, more: { plugins?: PluginSpec[]; gateways?: GatewaySpec[] } = {}) {
  env = await makeEnv([]);
  writeFileSync(join(env.dir, 'relay-files.mjs'), PLUGIN);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [
      { use: './relay-files.mjs', with: { id: 'a', channels: { general: '#a' } } },
      other,
      ...(more.plugins ?? []),
    ],
  }], more.gateways);
  // The media settings (the helper writes the bots and the service; this adds the top-level key).
  const config = parse(readFileSync(env.configFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(env.configFile, stringify({ ...config, media: { listen: '127.0.0.1:0', ...media } }));
  const supervisor = await env.start();
  const bot = env.client('bot');
  const general = (await chatOf(bot, 'general'))!;
  const chatTexts = async () => (await history(bot, general.id)).map((m) => m.message);
  return { env, supervisor, chatTexts, hub: platform() };
}

async function get(url: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') {
  const answer = await request(url, { headers, method });
  return { status: answer.statusCode, headers: answer.headers, bytes: Buffer.from(await answer.body.arrayBuffer()) };
}

/** The link in a chat line `<uma> [image: name http://…]`. */
const linkIn = (line: string) => /(http:\/\/\S+)\]/.exec(line)?.[1];

describe('gateways: files', () => {
  test('a picture and a document said on one side arrive on the other as attachments and in the chat as working links', { timeout: 30_000 }, async () => {
    const { env, supervisor, chatTexts, hub } = await setUp();
    const notes = Buffer.from('<html><script>alert(1)</script></html>');
    await hub.say.a!('#a', said('f1', 'look', [
      diskFile(env.dir, 'cat photo.png', PNG, { contentType: 'image/png' }),
      diskFile(env.dir, 'notes.html', notes, { contentType: 'text/html' }),
    ]));
    await waitFor('the line on b', () => (hub.sent.b ?? []).length === 1);
    const [out] = hub.sent.b!;
    expect(out!.text).toBe('look');
    expect(out!.files!.map((f) => [f.name, f.contentType, f.size, f.image])).toEqual([['cat photo.png', 'image/png', PNG.length, true], ['notes.html', 'text/html', notes.length, false]]);
    expect(out!.refusedFiles).toBeUndefined();

    const lines = await waitFor('the line in the chat', async () => (await chatTexts()).find((t) => t.startsWith('<uma> look')));
    const [text, image, document] = lines.split('\n');
    expect(text).toBe('<uma> look');
    expect(image).toMatch(/^<uma> \[image: cat photo\.png http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/cat%20photo\.png\]$/);
    expect(document).toMatch(/^<uma> \[file: notes\.html http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/notes\.html\]$/);
    expect(linkIn(image!)).toBe(out!.files![0]!.url);
    expect(linkIn(image!)!.startsWith(supervisor.mediaUrl!)).toBe(true);

    // The link works: the same bytes, the type it was stored with, shown inline (a checked image).
    const picture = await get(linkIn(image!)!);
    expect(picture.status).toBe(200);
    expect(picture.bytes.equals(PNG)).toBe(true);
    expect(picture.headers['content-type']).toBe('image/png');
    expect(picture.headers['content-disposition']).toBe(`inline; filename="cat photo.png"; filename*=UTF-8''cat%20photo.png`);
    expect(picture.headers['x-content-type-options']).toBe('nosniff');
    expect(picture.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
    // Anything else is a download, never shown (an HTML file runs nothing from the link).
    const page = await get(linkIn(document!)!);
    expect(page.bytes.equals(notes)).toBe(true);
    expect(page.headers['content-disposition']).toMatch(/^attachment; /);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    // A range, and HEAD.
    const part = await get(linkIn(image!)!, { range: 'bytes=0-7' });
    expect([part.status, part.bytes.equals(PNG.subarray(0, 8)), part.headers['content-range']]).toEqual([206, true, `bytes 0-7/${PNG.length}`]);
    const head = await get(linkIn(image!)!, {}, 'HEAD');
    expect([head.status, head.headers['content-length'], head.bytes.length]).toEqual([200, String(PNG.length), 0]);
    // An unknown id, a wrong name, no name: 404 alike.
    const url = new URL(linkIn(image!)!);
    const id = url.pathname.split('/')[1]!;
    expect((await get(`${url.origin}/${'0'.repeat(32)}/cat%20photo.png`)).status).toBe(404);
    expect((await get(`${url.origin}/${id}/other.png`)).status).toBe(404);
    expect((await get(`${url.origin}/${id}`)).status).toBe(404);
    expect((await get(`${url.origin}/../../etc/passwd`)).status).toBe(404);
    expect(hub.sent.a ?? []).toEqual([]);
    expect(supervisor.fileCounts.stored).toBe(2);
    expect(supervisor.fileCounts.bytesStored).toBe(PNG.length + notes.length);
    // The chain sees the bot's post of the line with its files (ctx.own.relayed: what the logger records).
    await waitFor('the chain saw the relayed line', () => hub.relayed?.length === 1);
    expect(hub.relayed).toEqual([{ text: 'look', files: ['cat photo.png', 'notes.html'], refused: [] }]);
  });

  test('a file the limits refuse gives its line on every side and is counted; a line of refused files alone is still relayed', { timeout: 30_000 }, async () => {
    const { env, supervisor, chatTexts, hub } = await setUp({ max_size: 2000 });
    const big = Buffer.alloc(5000, 1);
    await hub.say.a!('#a', said('r1', 'five refused', [
      diskFile(env.dir, 'big.bin', big),
      diskFile(env.dir, 'quiet.bin', big, { size: undefined }),
      diskFile(env.dir, 'liar.bin', Buffer.alloc(1500, 2), { size: 100 }),
      diskFile(env.dir, 'setup.exe', Buffer.from('MZ....'), { contentType: 'application/octet-stream' }),
      diskFile(env.dir, 'readme.txt', Buffer.concat([Buffer.from('MZ'), Buffer.alloc(100)]), { contentType: 'text/plain' }),
      diskFile(env.dir, 'fake.png', Buffer.from('this is not a picture at all'), { contentType: 'image/png' }),
    ]));
    await hub.say.a!('#a', said('r2', '', [diskFile(env.dir, 'run.sh', Buffer.from('echo hi'), { contentType: 'application/x-sh' })]));
    await waitFor('both lines on b', () => (hub.sent.b ?? []).length === 2);
    const [first, second] = hub.sent.b!;
    expect(first!.files).toBeUndefined();
    expect(first!.refusedFiles).toEqual([
      { name: 'big.bin', reason: 'too big (5 KB, limit 2 KB)' },
      { name: 'quiet.bin', reason: 'too big (over the 2 KB limit)' },
      { name: 'liar.bin', reason: 'size not as stated (said 100 bytes, sent more)' },
      { name: 'setup.exe', reason: 'type not allowed (.exe)' },
      { name: 'readme.txt', reason: 'type not allowed (application/x-dosexec)' },
      { name: 'fake.png', reason: 'not an image (said image/png)' },
    ]);
    expect(second!.refusedFiles).toEqual([{ name: 'run.sh', reason: 'type not allowed (.sh)' }]);
    await waitFor('both lines in the chat', async () => (await chatTexts()).filter((t) => t.startsWith('<uma>')).length === 2);
    const texts = (await chatTexts()).filter((t) => t.startsWith('<uma>'));
    expect(texts[0]!.split('\n')).toEqual([
      '<uma> five refused',
      '<uma> [a file was not relayed: big.bin: too big (5 KB, limit 2 KB)]',
      '<uma> [a file was not relayed: quiet.bin: too big (over the 2 KB limit)]',
      '<uma> [a file was not relayed: liar.bin: size not as stated (said 100 bytes, sent more)]',
      '<uma> [a file was not relayed: setup.exe: type not allowed (.exe)]',
      '<uma> [a file was not relayed: readme.txt: type not allowed (application/x-dosexec)]',
      '<uma> [a file was not relayed: fake.png: not an image (said image/png)]',
    ]);
    expect(texts[1]).toBe('<uma> [a file was not relayed: run.sh: type not allowed (.sh)]');
    expect(Object.fromEntries(supervisor.fileCounts.refused)).toEqual({ too_big: 2, size_mismatch: 1, denied_type: 3, not_an_image: 1 });
    expect(supervisor.fileCounts.stored).toBe(0);
    // As /metrics says them (every reason, 0 until one happens).
    const ops = new Operations({ supervisor, config: { listen: '127.0.0.1:0', lag_probe_seconds: 0 }, log: env.log.logger, errors: new RecentErrors(), stateDir: env.stateDir });
    await ops.start();
    try {
      const metrics = (await (await request(`${ops.url}/metrics`)).body.text()).split('\n');
      expect(metrics).toEqual(expect.arrayContaining([
        'groupwire_files_stored_total 0', 'groupwire_file_bytes_stored_total 0',
        'groupwire_files_refused_total{reason="too_big"} 2', 'groupwire_files_refused_total{reason="denied_type"} 3',
        'groupwire_files_refused_total{reason="size_mismatch"} 1', 'groupwire_files_refused_total{reason="not_an_image"} 1',
        'groupwire_files_refused_total{reason="stalled"} 0',
      ]));
      // /status.json says where the listener is and what the store took.
      const status = await (await request(`${ops.url}/status.json`)).body.json() as { media?: unknown };
      expect(status.media).toEqual({ url: supervisor.mediaUrl, stored: 0, bytesStored: 0, refused: 7 });
    } finally {
      await ops.close();
    }
  });

  test('a line from a channel that no gateway takes in from is not relayed, and its files are not read', { timeout: 30_000 }, async () => {
    const { supervisor, hub } = await setUp({}, undefined, {
      plugins: [{ use: './relay-files.mjs', with: { id: 'c', channels: {} } }],
      gateways: [{ name: 'announce', endpoints: [{ chat: 'general' }, { memory: '#c', plugin: 'relay-files-3', direction: 'out' }] }],
    });
    let opened = 0;
    await hub.say.c!('#c', said('n1', 'nobody hears this', [{ name: 'x.txt', open: async () => { opened += 1; return Readable.from([Buffer.from('x')]); } }]));
    expect(opened).toBe(0);
    expect(supervisor.fileCounts.stored).toBe(0);
  });

  test('a line behind one whose file is read waits for it; a stalled download is refused after stall_timeout and the lines behind go on', { timeout: 30_000 }, async () => {
    const { env, chatTexts, hub } = await setUp({ stall_timeout: 0.5 });
    let release!: () => void;
    const slow: IncomingFile = { name: 'slow.txt', contentType: 'text/plain', size: 4, open: async () => {
      await new Promise<void>((go) => { release = go; });
      return Readable.from([Buffer.from('slow')]);
    } };
    let aborted = false;
    const stalled: IncomingFile = { name: 'stuck.bin', open: async (signal) => {
      signal.addEventListener('abort', () => { aborted = true; });
      // Never a byte (a platform that ignores the signal: the intake stops waiting anyway).
      return new Readable({ read() {} });
    } };
    const first = hub.say.a!('#a', said('o1', 'with a slow file', [slow]));
    const second = hub.say.a!('#a', said('o2', 'after the slow file'));
    await waitFor('the slow file opened', () => release);
    // The text line waits behind the file line: nothing reached b yet.
    expect(hub.sent.b ?? []).toEqual([]);
    release();
    await Promise.all([first, second]);
    await hub.say.a!('#a', said('o3', 'with a stalled file', [stalled]));
    await hub.say.a!('#a', said('o4', 'after the stalled file'));
    await waitFor('four lines on b', () => (hub.sent.b ?? []).length === 4);
    expect(hub.sent.b!.map((s) => [s.text, s.files?.map((f) => f.name) ?? [], s.refusedFiles?.map((f) => f.reason) ?? []])).toEqual([
      ['with a slow file', ['slow.txt'], []],
      ['after the slow file', [], []],
      ['with a stalled file', [], ['download stalled (no bytes for 0.5 s)']],
      ['after the stalled file', [], []],
    ]);
    expect(aborted).toBe(true);
    await waitFor('four lines in the chat', async () => (await chatTexts()).filter((t) => t.startsWith('<uma>')).length === 4);
    expect((await chatTexts()).filter((t) => t.startsWith('<uma>')).map((t) => t.split('\n')[0])).toEqual([
      '<uma> with a slow file', '<uma> after the slow file', '<uma> with a stalled file', '<uma> after the stalled file',
    ]);
  });

  test('on IRC a file is a link line with the speaker, and the link works', { timeout: 30_000 }, async () => {
    const server = await IrcServer.start({ kind: 'ngircd' });
    irc = { server, watcher: await IrcWatcher.connect(server.port, 'alice', ['#files']) };
    const { env } = await setUp({}, relayPlugin(server, { channels: { general: '#files' } }));
    await irc.watcher.waitForLine(/^:gwbot!\S+ JOIN :?#files/i);
    await platform().say.a!('#a', said('i1', 'for IRC', [diskFile(env.dir, 'cat.png', PNG, { contentType: 'image/png' })]));
    await platform().say.a!('#a', said('i2', '', [diskFile(env.dir, 'tool.exe', Buffer.from('MZ'))]));
    const onIrc = () => irc!.watcher.said.filter((s) => s.command === 'PRIVMSG' && s.target === '#files').map((s) => s.text);
    await waitFor('three lines on IRC', () => onIrc().length >= 3);
    const [text, image, refused] = onIrc();
    expect(text).toMatch(/^<u\u200bma> for IRC$/);
    expect(image).toMatch(/^<u\u200bma> \[image: cat\.png http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/cat\.png\]$/);
    expect(refused).toMatch(/^<u\u200bma> \[a file was not relayed: tool\.exe: type not allowed \(\.exe\)\]$/);
    const picture = await get(linkIn(image!)!);
    expect([picture.status, picture.bytes.equals(PNG)]).toEqual([200, true]);
  });
});
