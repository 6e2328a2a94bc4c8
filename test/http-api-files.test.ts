import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import httpApi from '../plugins/http-api/index.js';
import { FILE_STORAGE, PostFailedError, type Attachment, type IncomingMessage, type OutgoingMessage, type PluginEnv, type PluginInstance } from '../src/index.js';
import { MediaStore } from '../src/media/media-store.js';
import { localTls } from '../src/service/tls.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { waitFor } from './helpers/supervisor.js';
import { WebhookReceiver } from './helpers/webhook-receiver.js';

/**
 * http-api and files (#34): the plugin alone over real HTTPS (fastify, undici as the client), with a
 * real MediaStore in a temp dir as the gateway's store. Files in: a multipart POST's files are streamed
 * to temp files and handed to the gateway as IncomingFiles whose open() reads them (the fake gateway
 * reads each into the store, as the core's intake does). Files out: a line's attachments in webhook
 * payloads and the stream, and the API's own download URL.
 */

const TOKEN = 'files-token-0123456789abcdef';
const OTHER_TOKEN = 'other-token-0123456789abcdef';
const HMAC_SECRET = 'files-signer-0123456789abcdef';
const WEBHOOK_SECRET = 'webhook-secret-0123456789abcdef';

interface Taken {
  channel: string;
  message: IncomingMessage;
  stored: Attachment[];
}

interface Api {
  plugin: PluginInstance;
  base: string;
  taken: Taken[];
  media: MediaStore;
  uploads: () => string[];
  dir: string;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-http-files-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

let trusting: Agent;

/**
 * The plugin over TLS, channels `ops` and `dev`; the gateway reads every file into `media` before it
 * takes the line (while `takes` says the chat takes lines; else it refuses them as a closed chat would).
 */
async function open(extra: Record<string, unknown> = {}, publicUrl?: string, given?: { dir: string; takes: () => boolean }): Promise<Api> {
  const dir = given?.dir ?? await tempDir();
  if (!existsSync(join(dir, 'cert.pem'))) {
    const tls = await localTls(join(dir, 'tls'));
    writeFileSync(join(dir, 'cert.pem'), tls.cert);
    writeFileSync(join(dir, 'key.pem'), tls.key);
    trusting = new Agent({ connect: { ca: tls.ca } });
    cleanups.push(() => trusting.close());
  }
  const media = new MediaStore(join(dir, 'media'), publicUrl);
  const taken: Taken[] = [];
  const dataDir = join(dir, 'data');
  const env = {
    dataDir, storage: FILE_STORAGE, store: KeyValueStore.memory(), configDir: dir, log: pino({ level: 'silent' }), stopping: new AbortController().signal, media,
    gateway: {
      channels: () => ['ops', 'dev'],
      receive: async (channel: string, message: IncomingMessage) => {
        if (given && !given.takes()) throw new PostFailedError('the chat is closed');
        const stored: Attachment[] = [];
        for (const file of message.files ?? []) {
          stored.push(await media.put(await file.open(new AbortController().signal), { name: file.name, contentType: file.contentType ?? 'application/octet-stream', image: false }));
        }
        taken.push({ channel, message, stored });
      },
      posted: () => undefined,
      nativeOf: () => undefined,
    },
  } as unknown as PluginEnv;
  const options = httpApi.options.parse({
    listen: { port: 0 }, tls: { cert_file: 'cert.pem', key_file: 'key.pem' },
    clients: [{ name: 'ci', token: TOKEN }, { name: 'signer', hmac_secret: HMAC_SECRET }, { name: 'dev-only', token: OTHER_TOKEN, channels: ['dev'] }],
    ...extra,
  });
  const plugin = await httpApi.create(options, env);
  await plugin.start!();
  let stopped = false;
  const stop = plugin.stop!;
  plugin.stop = async () => {
    if (!stopped) await stop();
    stopped = true;
  };
  cleanups.push(() => plugin.stop!());
  const uploads = () => {
    try {
      return readdirSync(join(dataDir, 'uploads'));
    } catch {
      return [];
    }
  };
  return { plugin, base: `https://127.0.0.1:${plugin.stats!().port}`, taken, media, uploads, dir };
}

interface Part {
  field: string;
  value?: string;
  file?: { name: string; type: string; bytes: Buffer };
}

/** A multipart/form-data body built byte for byte (so a client can sign exactly what it sends). */
function multipart(parts: Part[]): { body: Buffer; contentType: string } {
  const boundary = `----groupwire${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.field}"${part.file ? `; filename="${part.file.name}"` : ''}`;
    const head = `--${boundary}\r\ncontent-disposition: ${disposition}\r\n${part.file ? `content-type: ${part.file.type}\r\n` : ''}\r\n`;
    chunks.push(Buffer.from(head), part.file ? part.file.bytes : Buffer.from(part.value ?? ''), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

async function send(url: string, init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: Buffer | string } = {}): Promise<Reply> {
  const answer = await request(url, { method: init.method ?? 'GET', headers: init.headers ?? {}, dispatcher: trusting, ...(init.body !== undefined ? { body: init.body } : {}) });
  return { status: answer.statusCode, headers: answer.headers, body: Buffer.from(await answer.body.arrayBuffer()) };
}

const json = (reply: Reply) => JSON.parse(reply.body.toString('utf8')) as Record<string, unknown>;

function postFiles(api: Api, parts: Part[], headers: Record<string, string> = {}, channel = 'ops'): Promise<Reply> {
  const { body, contentType } = multipart(parts);
  return send(`${api.base}/gateways/${channel}/messages`, { method: 'POST', body, headers: { 'content-type': contentType, authorization: `Bearer ${TOKEN}`, ...headers } });
}

const photo = randomBytes(150_000);
const notes = Buffer.from('line one\nline two\n');

describe('http-api: files in (multipart POST)', () => {
  test('file_max takes bytes or 512KB / 25MB / 1GB (25 MB by default); anything else is explained', () => {
    expect(httpApi.options.parse({}).file_max).toBe(25_000_000);
    expect(httpApi.options.parse({ file_max: '512KB' }).file_max).toBe(512_000);
    expect(httpApi.options.parse({ file_max: 1_000 }).file_max).toBe(1_000);
    const wrong = httpApi.options.safeParse({ file_max: 'big' });
    expect(wrong.success ? [] : wrong.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`)).toEqual(['file_max: a size: a number of bytes, or such as 512KB, 25MB or 1GB']);
  });

  test('a multipart POST with two files and the text reaches the gateway: names, types, sizes, and open() gives the bytes sent; the temp files go once the line was taken', async () => {
    const api = await open();
    const answer = await postFiles(api, [
      { field: 'text', value: 'the build log and a screenshot' },
      { field: 'username', value: 'deploybot' },
      { field: 'file', file: { name: 'screen.png', type: 'image/png', bytes: photo } },
      { field: 'file', file: { name: 'build.log', type: 'text/plain', bytes: notes } },
    ]);
    expect(answer.status).toBe(202);
    expect(json(answer)).toEqual({ id: expect.stringMatching(/^\d{13}-\d{6}$/), status: 'queued' });
    await waitFor('the line taken', () => api.taken.length === 1);
    const [line] = api.taken;
    expect(line!.message).toMatchObject({ text: 'the build log and a screenshot', speaker: { platform: 'http', id: 'ci', name: '[api] deploybot' } });
    expect(line!.message.files!.map((f) => [f.name, f.contentType, f.size])).toEqual([['screen.png', 'image/png', photo.length], ['build.log', 'text/plain', notes.length]]);
    expect(await readFile(api.media.pathOf(line!.stored[0]!.id))).toEqual(photo);
    expect(await readFile(api.media.pathOf(line!.stored[1]!.id))).toEqual(notes);
    await waitFor('the temp files removed', () => api.uploads().length === 0);

    // A file alone, without text, is a message too; a POST with neither is refused.
    expect((await postFiles(api, [{ field: 'file', file: { name: 'only.bin', type: 'application/octet-stream', bytes: notes } }])).status).toBe(202);
    await waitFor('the file-only line taken', () => api.taken.length === 2);
    expect(api.taken[1]!.message).toMatchObject({ text: '', files: [expect.objectContaining({ name: 'only.bin' })] });
    const empty = await postFiles(api, [{ field: 'text', value: '  ' }]);
    expect(empty.status).toBe(400);
    expect(json(empty)).toMatchObject({ field: 'text' });
  });

  test('a signed multipart POST is checked over the bytes sent: taken when right, 401 when the body was changed (and its temp files removed)', async () => {
    const api = await open();
    const { body, contentType } = multipart([{ field: 'text', value: 'signed with a file' }, { field: 'f', file: { name: 'a.txt', type: 'text/plain', bytes: notes } }]);
    const target = '/gateways/ops/messages';
    const sign = (bytes: Buffer, ts = String(Math.floor(Date.now() / 1000))) => ({
      'content-type': contentType, 'x-timestamp': ts,
      'x-signature-256': `sha256=${createHmac('sha256', HMAC_SECRET).update(`v1:${ts}:POST:${target}::`).update(bytes).digest('hex')}`,
    });
    const good = await send(`${api.base}${target}`, { method: 'POST', body, headers: sign(body) });
    expect(good.status).toBe(202);
    await waitFor('the signed line taken', () => api.taken.length === 1);
    expect(api.taken[0]!.message.files!.map((f) => f.name)).toEqual(['a.txt']);

    const tampered = Buffer.from(body);
    tampered[tampered.indexOf('line one')] = 'L'.charCodeAt(0);
    const bad = await send(`${api.base}${target}`, { method: 'POST', body: tampered, headers: sign(body) });
    expect(bad.status).toBe(401);
    expect(json(bad).error).toMatch(/signature/);
    await waitFor('the temp files removed', () => api.uploads().length === 0);
    expect(api.taken).toHaveLength(1);
  });

  test('a file over file_max is refused with 413 and a JSON error; nothing is handed on and no temp file stays', async () => {
    const api = await open({ file_max: 100_000 });
    const big = await postFiles(api, [{ field: 'text', value: 'too big' }, { field: 'file', file: { name: 'big.bin', type: 'application/octet-stream', bytes: photo } }]);
    expect(big.status).toBe(413);
    expect(json(big)).toMatchObject({ error: expect.stringMatching(/big\.bin.*100 KB/) });
    expect(api.uploads()).toEqual([]);
    // A client that goes away halfway through a file: nothing is handed on, its temp file goes.
    const { body, contentType } = multipart([{ field: 'file', file: { name: 'cut.bin', type: 'application/octet-stream', bytes: photo } }]);
    const halfway = async function* () {
      yield body.subarray(0, 60_000);
      await waitFor('the upload begun', () => api.uploads().length === 1);
      throw new Error('the client went away');
    };
    await expect(request(`${api.base}/gateways/ops/messages`, {
      method: 'POST', body: Readable.from(halfway()), dispatcher: trusting, headers: { 'content-type': contentType, authorization: `Bearer ${TOKEN}` },
    })).rejects.toThrow();
    await waitFor('the cut upload removed', () => api.uploads().length === 0);
    // Under the cap it is taken.
    expect((await postFiles(api, [{ field: 'file', file: { name: 'small.bin', type: 'application/octet-stream', bytes: notes } }])).status).toBe(202);
    await waitFor('the small one taken', () => api.taken.length === 1);
    expect(api.taken.map((t) => t.message.files!.map((f) => f.name))).toEqual([['small.bin']]);
  });

  test('the plugin\'s own disk failing is its error, not the client\'s: 500, nothing handed on', async () => {
    const api = await open();
    // The uploads folder cannot be made: a file stands where it would be.
    writeFileSync(join(api.dir, 'data', 'uploads'), 'in the way');
    const failed = await postFiles(api, [{ field: 'text', value: 'nowhere to put it' }, { field: 'file', file: { name: 'a.png', type: 'image/png', bytes: photo } }]);
    expect([failed.status, json(failed)]).toEqual([500, { error: 'internal error' }]);
    await api.plugin.stop!();
    expect(api.taken).toEqual([]);
    expect(api.plugin.stats!()).toMatchObject({ accepted: 0, intake_queued: 0 });
  });

  test('the same Idempotency-Key with files twice: handed on once, the second answer is the first', async () => {
    const api = await open();
    const parts: Part[] = [{ field: 'text', value: 'once' }, { field: 'file', file: { name: 'once.png', type: 'image/png', bytes: photo } }];
    const first = await postFiles(api, parts, { 'idempotency-key': 'upload-1' });
    const second = await postFiles(api, parts, { 'idempotency-key': 'upload-1' });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(json(second)).toEqual(json(first));
    expect(second.headers['idempotent-replayed']).toBe('true');
    await waitFor('the line taken', () => api.taken.length === 1);
    await api.plugin.stop!();
    expect(api.taken).toHaveLength(1);
    expect(api.uploads()).toEqual([]);
  });

  test('a line with files the chat does not take yet stays queued across a restart, its files with it; uploads no queued line names are swept at start', async () => {
    let takes = false;
    const dir = await tempDir();
    const api = await open({}, undefined, { dir, takes: () => takes });
    expect((await postFiles(api, [{ field: 'text', value: 'wait for me' }, { field: 'file', file: { name: 'kept.png', type: 'image/png', bytes: photo } }])).status).toBe(202);
    expect(api.uploads()).toHaveLength(1);
    await api.plugin.stop!();
    writeFileSync(join(dir, 'data', 'uploads', 'f'.repeat(32)), 'left by a crash');

    takes = true;
    const again = await open({}, undefined, { dir, takes: () => takes });
    await waitFor('the queued line taken after the restart', () => again.taken.length === 1);
    expect(again.taken[0]!.message.text).toBe('wait for me');
    expect(await readFile(again.media.pathOf(again.taken[0]!.stored[0]!.id))).toEqual(photo);
    expect(again.plugin.stats!()).toMatchObject({ uploads_swept: 1 });
    await waitFor('no upload left', () => again.uploads().length === 0);
  });
});

/** A gateway line with files, as the core hands it to the relay. */
function lineWith(key: string, files: Attachment[]): OutgoingMessage {
  return {
    key, gateway: 'lobby', kind: 'message', text: 'look', speaker: { platform: 'irc', id: 'alice!a@example.org', name: 'alice' },
    origin: { endpoint: 'irc:#lobby@bot/relay-irc', platform: 'irc', nativeId: key }, time: new Date().toISOString(), files,
    refusedFiles: [{ name: 'huge.iso', reason: 'too big (40 MB, limit 25 MB)' }], source: {},
  } as unknown as OutgoingMessage;
}

describe('http-api: files out', () => {
  test('webhook payloads and the poll carry files and refused_files; the API\'s own URL serves the bytes with the stored type behind the stream\'s auth', async () => {
    const hook = await WebhookReceiver.start(WEBHOOK_SECRET);
    cleanups.push(() => hook.close());
    const api = await open({ webhooks: [{ url: hook.url, secret: WEBHOOK_SECRET }] });
    const image = await api.media.put(Readable.from([photo]), { name: 'cat photo.png', contentType: 'image/png', image: true });
    const page = await api.media.put(Readable.from([Buffer.from('<script>alert(1)</script>')]), { name: 'page.html', contentType: 'text/html', image: false });
    api.plugin.endpoint!.send('ops', lineWith('k1', [image, page]));
    await waitFor('the webhook got the line', () => hook.lines.length === 1);
    const files = hook.lines[0]!.files as Array<Record<string, unknown>>;
    expect(files).toEqual([
      { id: image.id, name: 'cat photo.png', content_type: 'image/png', size: photo.length, image: true, url: `${api.base}/gateways/ops/files/${image.id}/cat%20photo.png` },
      { id: page.id, name: 'page.html', content_type: 'text/html', size: 25, image: false, url: `${api.base}/gateways/ops/files/${page.id}/page.html` },
    ]);
    expect(hook.lines[0]!.refused_files).toEqual([{ name: 'huge.iso', reason: 'too big (40 MB, limit 25 MB)' }]);
    const poll = json(await send(`${api.base}/gateways/ops/messages`, { headers: { authorization: `Bearer ${TOKEN}` } }));
    expect((poll.messages as Array<Record<string, unknown>>)[0]).toMatchObject({ files, refused_files: [{ name: 'huge.iso' }] });

    const got = await send(files[0]!.url as string, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(photo);
    expect(got.headers).toMatchObject({ 'content-type': 'image/png', 'x-content-type-options': 'nosniff', 'content-disposition': expect.stringMatching(/^inline; filename="cat photo.png"/) });
    const html = await send(files[1]!.url as string, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(html.body.toString()).toBe('<script>alert(1)</script>');
    expect(html.headers).toMatchObject({ 'content-type': 'text/html', 'x-content-type-options': 'nosniff', 'content-disposition': expect.stringMatching(/^attachment; filename="page.html"/) });

    // Without credentials, or for a client of another channel: refused, no bytes. An id this channel never sent: 404.
    const anonymous = await send(files[0]!.url as string);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.includes(photo.subarray(0, 64))).toBe(false);
    expect((await send(files[0]!.url as string, { headers: { authorization: `Bearer ${OTHER_TOKEN}` } })).status).toBe(403);
    expect((await send(`${api.base}/gateways/dev/files/${image.id}/x.png`, { headers: { authorization: `Bearer ${OTHER_TOKEN}` } })).status).toBe(404);
    expect((await send(`${api.base}/gateways/ops/files/${image.id}/other.png`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
    // Gone from the store (retention): 404 with a JSON error.
    rmSync(api.media.pathOf(page.id));
    const gone = await send(files[1]!.url as string, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(gone.status).toBe(404);
    expect(json(gone).error).toMatch(/no longer/);
  });

  test('with the media store\'s public link, payloads carry it instead of the API\'s URL; the event stream carries files too', async () => {
    const api = await open({}, 'https://media.example.org/m/');
    const image = await api.media.put(Readable.from([photo]), { name: 'p.jpg', contentType: 'image/jpeg', image: true });
    const events = await request(`${api.base}/gateways/ops/events?after=0`, { headers: { authorization: `Bearer ${TOKEN}` }, dispatcher: trusting });
    api.plugin.endpoint!.send('ops', lineWith('k2', [image]));
    let text = '';
    for await (const chunk of events.body) {
      text += (chunk as Buffer).toString('utf8');
      if (text.includes('event: message')) break;
    }
    const data = JSON.parse(/data: (.*)\n/.exec(text)![1]!) as { files: unknown };
    expect(data.files).toEqual([{ id: image.id, name: 'p.jpg', content_type: 'image/jpeg', size: photo.length, image: true, url: `https://media.example.org/m/${image.id}/p.jpg` }]);
  });
});
