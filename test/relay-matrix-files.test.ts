import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import relayMatrix from '../plugins/relay-matrix/index.js';
import { fileTxnIdOf } from '../plugins/relay-matrix/outbound.js';
import { FILE_STORAGE, type Attachment, type IncomingMessage, type OutgoingMessage, type PluginEnv, type PluginInstance } from '../src/index.js';
import { MediaStore } from '../src/media/media-store.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { FakeMatrix } from './helpers/fake-matrix.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-matrix and files (#34), the plugin alone against the fake homeserver (test/helpers/fake-matrix.ts)
 * with a real media store in a temp dir as env.media: files said in a room are read through the
 * authenticated media download and nowhere else; files of gateway lines are uploaded and sent as
 * m.image / m.file events with the speaker, as their link line when over the limit, once across a crash.
 */

/** A 1×1 PNG and some more bytes after it (the relay does not look inside). */
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex'), Buffer.alloc(3000, 7)]);

let fake: FakeMatrix | undefined;
let dir: string | undefined;
const plugins: PluginInstance[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const plugin of plugins.splice(0)) await plugin.stop!();
  for (const server of servers.splice(0)) await new Promise((done) => server.close(done));
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  fake = dir = undefined;
});

interface World {
  fake: FakeMatrix;
  store: MediaStore;
  bot: { userId: string; token: string };
  alice: { userId: string; token: string };
  room: string;
  received: IncomingMessage[];
  posted: Array<[string, string]>;
  /** Starts an instance of the relay on the same data dir (a restart after a crash keeps only what is on disk). */
  open(extra?: Record<string, unknown>): Promise<PluginInstance>;
}

async function world(): Promise<World> {
  fake = await FakeMatrix.start();
  const bot = fake.addUser('groupwire', 'groupwire bot');
  const alice = fake.addUser('alice', 'Alice');
  const room = fake.addRoom('general', { members: [alice.userId] });
  dir = mkdtempSync(join(tmpdir(), 'groupwire-matrix-files-'));
  const store = new MediaStore(join(dir, 'media'), 'https://media.example/files');
  const kv = KeyValueStore.memory();
  const received: IncomingMessage[] = [];
  const posted: Array<[string, string]> = [];
  const w: World = {
    fake, store, bot, alice, room, received, posted,
    async open(extra = {}) {
      const env = {
        dataDir: dir!, storage: FILE_STORAGE, store: kv, configDir: dir!, log: pino({ level: 'silent' }), stopping: new AbortController().signal, media: store,
        gateway: {
          channels: () => [room], receive: (_channel: string, line: IncomingMessage) => (received.push(line), Promise.resolve()),
          posted: (key: string, _channel: string, id: string) => void posted.push([key, id]), nativeOf: () => undefined,
        },
      } as unknown as PluginEnv;
      const options = relayMatrix.options.parse({ homeserver: fake!.url, access_token: bot.token, user_id: bot.userId, ...extra });
      const plugin = await relayMatrix.create(options, env);
      plugins.push(plugin);
      await plugin.start!();
      // A first start is connected after its first /sync; a restart from the kept position once the rooms are joined.
      await waitFor('the relay connected', () => plugin.status!().connection?.state === 'connected');
      return plugin;
    },
  };
  return w;
}

const line = (key: string, text: string, files: Attachment[], refusedFiles: OutgoingMessage['refusedFiles'] = []) => ({
  key, gateway: 'lobby', kind: 'message', text, speaker: { platform: 'slack', id: 'U1', name: 'Bob' },
  origin: { endpoint: 'slack:C1', platform: 'slack', nativeId: key }, time: new Date().toISOString(), files, refusedFiles,
}) as unknown as OutgoingMessage;

const botEvents = (w: World) => w.fake.eventsIn(w.room).filter((e) => e.sender === w.bot.userId && e.type === 'm.room.message');

async function bytesOf(source: Awaited<ReturnType<NonNullable<IncomingMessage['files']>[number]['open']>>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of source as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** An HTTP server that counts what reaches it: the host a hostile event names. */
async function hostile(): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits += 1;
    res.end('not for you');
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  servers.push(server);
  return { url: `127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

describe('relay-matrix files', () => {
  test('a picture said in a room is read through the authenticated media download of the homeserver; a hostile URL is never fetched', async () => {
    const w = await world();
    const evil = await hostile();
    await w.open();
    const mxc = w.fake.addMedia(PNG, 'image/png', 'photo.png');
    w.fake.say(w.room, w.alice.userId, 'look at this', { msgtype: 'm.image', url: mxc, filename: 'photo.png', info: { mimetype: 'image/png', size: PNG.length } });
    // Not mxc:// (a URL a client should never send): nothing is fetched, the event is not relayed as a file.
    w.fake.say(w.room, w.alice.userId, 'photo2.png', { msgtype: 'm.image', url: `http://${evil.url}/photo2.png`, info: { mimetype: 'image/png' } });
    // An mxc:// URI naming the hostile host as its server: asked of the homeserver only (which has no such file).
    w.fake.say(w.room, w.alice.userId, 'photo3.png', { msgtype: 'm.file', url: `mxc://${evil.url}/abcdef` });
    w.fake.say(w.room, w.alice.userId, 'after the files');
    await waitFor('the lines handed on', () => w.received.length === 3);

    const [picture, remote, after] = w.received;
    expect(picture).toMatchObject({ kind: 'message', text: 'look at this', speaker: { name: 'Alice' } });
    expect(picture!.files).toHaveLength(1);
    const file = picture!.files![0]!;
    expect(file).toMatchObject({ name: 'photo.png', contentType: 'image/png', size: PNG.length });
    expect(w.fake.media.downloads).toBe(0);
    expect((await bytesOf(await file.open(new AbortController().signal))).equals(PNG)).toBe(true);
    expect(w.fake.media.downloads).toBe(1);

    expect(remote).toMatchObject({ text: '', files: [{ name: 'photo3.png' }] });
    await expect(remote!.files![0]!.open(new AbortController().signal)).rejects.toThrow(/Not found/);
    expect(w.fake.calls.filter((call) => call.includes('/media/download/'))).toEqual([
      expect.stringContaining(`GET /_matrix/client/v1/media/download/localhost/`), `GET /_matrix/client/v1/media/download/${evil.url}/abcdef`,
    ]);
    expect(after).toMatchObject({ text: 'after the files' });
    expect(evil.hits()).toBe(0);

    // The fake's download wants the token, as a homeserver's does.
    const anonymous = await fetch(`${w.fake.url}/_matrix/client/v1/media/download/${mxc.slice('mxc://'.length)}`);
    expect(anonymous.status).toBe(401);
    expect(w.fake.media.refused).toBe(1);
  });

  test('a file of a gateway line is uploaded and sent as m.image with the speaker, after the text; bytes the same; a refused file says so', async () => {
    const w = await world();
    await w.open();
    const photo = await w.store.put(Readable.from([PNG]), { name: 'photo.png', contentType: 'image/png', image: true });
    const notes = await w.store.put(Readable.from([Buffer.from('meeting notes\n')]), { name: 'notes.txt', contentType: 'text/plain', image: false });
    await plugins[0]!.endpoint!.send(w.room, line('k1', 'the pictures', [photo, notes], [{ name: 'big.iso', reason: 'too big (40 MB, limit 25 MB)' }]));
    await waitFor('three events', () => botEvents(w).length === 3 && w.posted.length === 1);

    const [text, image, document] = botEvents(w);
    expect(text!.content.body).toBe('Bob: the pictures\n[a file was not relayed: big.iso: too big (40 MB, limit 25 MB)]');
    expect(image!.content).toMatchObject({
      msgtype: 'm.image', body: 'Bob: photo.png', filename: 'photo.png', info: { mimetype: 'image/png', size: PNG.length }, 'm.mentions': {},
    });
    expect(document!.content).toMatchObject({ msgtype: 'm.file', body: 'Bob: notes.txt', filename: 'notes.txt', info: { mimetype: 'text/plain', size: 14 } });
    const uploaded = w.fake.mediaOf(image!.content.url);
    expect(uploaded).toMatchObject({ contentType: 'image/png', filename: 'photo.png', uploader: w.bot.userId });
    expect(uploaded!.bytes.equals(PNG)).toBe(true);
    expect(w.fake.mediaOf(document!.content.url)!.bytes.toString()).toBe('meeting notes\n');
    expect(w.fake.media.uploads).toBe(2);
    // The line's event is its text's.
    expect(w.posted).toEqual([['k1', text!.event_id]]);
  });

  test('over the homeserver\'s upload limit (or the relay\'s max_file_size) a file goes as its link line, said by the speaker', async () => {
    const w = await world();
    w.fake.uploadLimit = 1_000;
    await w.open();
    const photo = await w.store.put(Readable.from([PNG]), { name: 'photo.png', contentType: 'image/png', image: true });
    const small = await w.store.put(Readable.from([Buffer.alloc(600, 1)]), { name: 'small.bin', contentType: 'application/octet-stream', image: false });
    // A line of files alone: no text event, the first file's event is the line's.
    await plugins[0]!.endpoint!.send(w.room, line('k2', '', [photo, small]));
    await waitFor('two events', () => botEvents(w).length === 2 && w.posted.length === 1);
    const [link, native] = botEvents(w);
    expect(link!.content).toMatchObject({ msgtype: 'm.notice', body: `Bob: [image: photo.png ${photo.url}]` });
    expect(link!.content.url).toBeUndefined();
    expect(native!.content).toMatchObject({ msgtype: 'm.file', body: 'Bob: small.bin' });
    expect(w.fake.media).toMatchObject({ uploads: 1, configs: 1 });
    expect(w.posted).toEqual([['k2', link!.event_id]]);
    await plugins.pop()!.stop!();

    // The relay's own cap, lower than the homeserver's.
    await w.open({ max_file_size: 500 });
    await plugins.at(-1)!.endpoint!.send(w.room, line('k3', '', [small]));
    await waitFor('the link', () => botEvents(w).length === 3);
    expect(botEvents(w)[2]!.content.body).toBe(`Bob: [file: small.bin ${small.url}]`);
    expect(w.fake.media.uploads).toBe(1);
  });

  test('a crash after the upload, with the event taken but its answer lost: the restarted relay sends the same event again, not a second upload; one event', async () => {
    const w = await world();
    await w.open();
    const photo = await w.store.put(Readable.from([PNG]), { name: 'photo.png', contentType: 'image/png', image: true });
    w.fake.holdNextFileSend = true;
    await plugins[0]!.endpoint!.send(w.room, line('k4', '', [photo]));
    await waitFor('the event taken (its answer held)', () => botEvents(w).length === 1);
    // What a kill -9 leaves is what is on disk: the queue (written before each call returned) and its note.
    await plugins.pop()!.stop!();
    expect(w.posted).toEqual([]);

    await w.open();
    await waitFor('the line delivered', () => w.posted.length === 1);
    const events = botEvents(w);
    expect(events).toHaveLength(1);
    expect(w.posted).toEqual([['k4', events[0]!.event_id]]);
    expect(w.fake.media.uploads).toBe(1);
    const txn = fileTxnIdOf('k4', photo.id);
    expect(w.fake.txnIds.filter((id) => id === txn)).toHaveLength(2);
    expect(w.fake.mediaOf(events[0]!.content.url)!.bytes.equals(PNG)).toBe(true);
  });
});
