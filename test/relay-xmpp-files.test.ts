import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { xml } from '@xmpp/client';
import { HttpUpload } from '../plugins/relay-xmpp/http-upload.js';
import relayXmpp from '../plugins/relay-xmpp/index.js';
import { FILE_STORAGE, type Attachment, type IncomingMessage, type OutgoingMessage, type PluginEnv, type PluginInstance } from '../src/index.js';
import { MediaStore } from '../src/media/media-store.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { freePort } from './helpers/ports.js';
import { HoldingProxy, Prosody, RoomUser } from './helpers/prosody.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-xmpp and files (#34), the plugin alone against a real Prosody 0.12 with its HTTP Upload service
 * (mod_http_file_share on loopback HTTP) and a real media store in a temp dir as env.media: a file shared
 * in a room is read from the server's own upload service and nowhere else; a gateway line's file is
 * uploaded there and said as its URL with OOB after the speaker's line; over max-file-size, its link.
 */

const PASSWORDS = { bot: 'bot-secret', alice: 'alice-secret' };
/** The upload service's max-file-size. */
const LIMIT = 8_000;
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex'), Buffer.alloc(3000, 7)]);

let prosody: Prosody;
/** An HTTP proxy in front of the upload service (its URLs name it): counts the PUTs, and calls `onPut` as one is answered. */
let front: Server;
let puts = 0;
let onPut: (() => void) | undefined;
let dir: string | undefined;
const plugins: PluginInstance[] = [];
const users: RoomUser[] = [];
const servers: Server[] = [];
const proxies: HoldingProxy[] = [];

beforeAll(async () => {
  const port = await freePort();
  front = createServer((req, res) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: prosody.httpPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      if (req.method === 'PUT') {
        puts += 1;
        onPut?.();
      }
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((ready) => front.listen(port, '127.0.0.1', ready));
  prosody = await Prosody.start(PASSWORDS, {}, { upload: { sizeLimit: LIMIT, externalUrl: `http://127.0.0.1:${port}/` } });
});
afterAll(async () => {
  await prosody?.close();
  await new Promise((done) => front?.close(done));
});
afterEach(async () => {
  for (const plugin of plugins.splice(0)) await plugin.stop!();
  await Promise.all(users.splice(0).map((user) => user.close()));
  for (const server of servers.splice(0)) await new Promise((done) => server.close(done));
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  onPut = undefined;
});

let roomCount = 0;
const newRoom = () => prosody.room(`files${++roomCount}-${Date.now().toString(36)}`);

interface World {
  room: string;
  store: MediaStore;
  alice: RoomUser;
  received: IncomingMessage[];
  open(extra?: Record<string, unknown>): Promise<PluginInstance>;
}

async function world(): Promise<World> {
  const room = newRoom();
  dir = mkdtempSync(join(tmpdir(), 'groupwire-xmpp-files-'));
  const store = new MediaStore(join(dir, 'media'), 'https://media.example/files');
  const kv = KeyValueStore.memory();
  const received: IncomingMessage[] = [];
  // Alice makes the room (the first to enter a room makes it).
  const alice = await RoomUser.join(prosody, 'alice', PASSWORDS.alice, room);
  users.push(alice);
  return {
    room, store, alice, received,
    async open(extra = {}) {
      const env = {
        dataDir: dir!, storage: FILE_STORAGE, store: kv, configDir: dir!, log: pino({ level: 'silent' }), stopping: new AbortController().signal, media: store,
        gateway: {
          channels: () => [room], receive: (_channel: string, line: IncomingMessage) => (received.push(line), Promise.resolve()),
          posted: () => undefined, nativeOf: () => undefined,
        },
      } as unknown as PluginEnv;
      const options = relayXmpp.options.parse({
        service: prosody.service, jid: `bot@${prosody.domain}`, password: PASSWORDS.bot, tls: { ca_file: prosody.caFile },
        upload_url_prefix: prosody.uploadUrl, ...extra,
      });
      const plugin = await relayXmpp.create(options, env);
      plugins.push(plugin);
      await plugin.start!();
      await waitFor('the relay in the room', () => plugin.status!().connection?.state === 'connected' && alice.present.has('groupwire'));
      return plugin;
    },
  };
}

const line = (key: string, text: string, files: Attachment[]) => ({
  key, gateway: 'lobby', kind: 'message', text, speaker: { platform: 'slack', id: 'U1', name: 'Bob' },
  origin: { endpoint: 'slack:C1', platform: 'slack', nativeId: key }, time: new Date().toISOString(), files, refusedFiles: [],
}) as unknown as OutgoingMessage;

async function bytesOf(source: unknown): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of source as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** An HTTP server that counts what reaches it: the host a hostile message names. */
async function hostile(): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits += 1;
    res.end('not for you');
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/file_share/x/photo.png`, hits: () => hits };
}

describe('relay-xmpp files: which URLs are the upload service\'s', () => {
  test('under upload_url_prefix only (no escape by ../, a longer path or another port); else https on a dedicated service\'s JID', async () => {
    const prefixed = new HttpUpload({ allowSelfSigned: false, timeoutMs: 1_000, prefix: 'http://127.0.0.1:5280/file_share/' });
    expect(prefixed.trusts('http://127.0.0.1:5280/file_share/abc/photo.png', undefined)).toBe(true);
    for (const url of ['http://127.0.0.1:5280/file_share/../admin', 'http://127.0.0.1:5280/file_share_other/x', 'http://127.0.0.1:5281/file_share/x',
      'http://user:pw@127.0.0.1:5280/file_share/x', 'https://127.0.0.1:5280/file_share/x', 'not a url']) expect(prefixed.trusts(url, undefined), url).toBe(false);
    const byJid = new HttpUpload({ allowSelfSigned: false, timeoutMs: 1_000 });
    const service = { jid: 'upload.example.org', dedicated: true };
    expect(byJid.trusts('https://upload.example.org:5281/file_share/abc/photo.png', service)).toBe(true);
    expect(byJid.trusts('http://upload.example.org/file_share/abc/photo.png', service)).toBe(false);
    expect(byJid.trusts('https://upload.example.org.evil.test/x', service)).toBe(false);
    expect(byJid.trusts('https://upload.example.org/x', undefined)).toBe(false);
    // A service on the account's domain itself: its https URLs are the whole site's, not trusted without the prefix.
    expect(byJid.trusts('https://example.org/file_share/x', { jid: 'example.org', dedicated: false })).toBe(false);
    await Promise.all([prefixed.close(), byJid.close()]);
  });
});

describe('relay-xmpp files', () => {
  test('a picture shared in a room (upload + OOB) is read from the server\'s upload service; a URL elsewhere stays text and is never fetched', async () => {
    const w = await world();
    await w.open();
    const evil = await hostile();
    const url = await w.alice.share(prosody.uploadJid, PNG, 'photo.png', 'image/png');
    // The same shapes pointing elsewhere: a body that is one URL, and an OOB naming another host.
    await w.alice.say(evil.url);
    await w.alice.sayWith('see this', xml('x', { xmlns: 'jabber:x:oob' }, xml('url', {}, evil.url)));
    await waitFor('three lines handed on', () => w.received.length === 3);

    const [picture, typed, described] = w.received;
    expect(picture).toMatchObject({ kind: 'message', text: '', speaker: { name: 'alice' } });
    expect(picture!.files).toHaveLength(1);
    expect(picture!.files![0]!.name).toBe('photo.png');
    expect(url.startsWith(prosody.uploadUrl)).toBe(true);
    expect((await bytesOf(await picture!.files![0]!.open(new AbortController().signal))).equals(PNG)).toBe(true);

    expect(typed).toMatchObject({ text: evil.url });
    expect(typed!.files).toBeUndefined();
    expect(described).toMatchObject({ text: 'see this' });
    expect(described!.files).toBeUndefined();
    expect(evil.hits()).toBe(0);
  });

  test('a file of a gateway line goes to the upload service and into the room as its URL with OOB, after the speaker\'s line; over max-file-size, its link', async () => {
    const w = await world();
    const plugin = await w.open();
    const photo = await w.store.put(Readable.from([PNG]), { name: 'photo.png', contentType: 'image/png', image: true });
    const big = await w.store.put(Readable.from([Buffer.alloc(LIMIT + 1, 1)]), { name: 'big.bin', contentType: 'application/octet-stream', image: false });
    plugin.endpoint!.send(w.room, line('k1', 'the pictures', [photo, big]));
    await waitFor('three messages from the relay', () => w.alice.said.filter((said) => said.nick === 'groupwire').length >= 3);

    const [said, uploaded, linked] = w.alice.said.filter((message) => message.nick === 'groupwire');
    expect(said!.body).toBe('<Bob> the pictures\n[image: photo.png]\n[file: big.bin]');
    expect(uploaded!.body.startsWith(prosody.uploadUrl)).toBe(true);
    expect(uploaded!.oob).toBe(uploaded!.body);
    const got = await fetch(uploaded!.body);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await got.arrayBuffer()).equals(PNG)).toBe(true);
    // Over the service's max-file-size (disco's x-data): the media store's link, no upload.
    expect(linked!.body).toBe(big.url);
    expect(linked!.oob).toBeUndefined();
    expect(plugin.stats!()).toMatchObject({ posted: 1, files: 2, dropped: 0 });
  });

  test('a crash after the file\'s message went out but before its reflection came: the restarted relay finds it in the archive and sends nothing again', async () => {
    const w = await world();
    const proxy = await HoldingProxy.start(prosody.port);
    proxies.push(proxy);
    const first = await w.open({ service: proxy.service });
    const photo = await w.store.put(Readable.from([PNG]), { name: 'photo.png', contentType: 'image/png', image: true });
    // Once the upload is answered nothing more reaches the relay: the file's message goes out, its reflection never comes.
    onPut = () => proxy.hold();
    const before = puts;
    first.endpoint!.send(w.room, line('k2', '', [photo]));
    await waitFor('the file\'s message in the room', () => w.alice.said.filter((said) => said.nick === 'groupwire').length === 2);
    expect(first.stats!()).toMatchObject({ files: 0 });
    // Stopped as a crash would leave it: the held stream is cut as the relay lets go (a stream held open would make its stop wait for the server's goodbye).
    const stopped = plugins.pop()!.stop!();
    proxy.cut();
    await stopped;
    onPut = undefined;
    proxy.cut();

    const second = await w.open({ service: proxy.service });
    await waitFor('the queue empty', () => (second.stats!() as Record<string, number>).queued === 0);
    const relayed = w.alice.said.filter((said) => said.nick === 'groupwire');
    expect(relayed.map((said) => said.body)).toEqual(['<Bob> [image: photo.png]', relayed[1]!.body]);
    expect(relayed[1]!.oob).toBe(relayed[1]!.body);
    expect(puts - before).toBe(1);
    expect((second.stats!() as Record<string, number>).sent).toBe(0);
  });
});
