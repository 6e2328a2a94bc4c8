import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import relayRocketchat from '../plugins/relay-rocketchat/index.js';
import { filePathOf } from '../plugins/relay-rocketchat/files.js';
import { FakeRocketchat, type FakeMessage } from './helpers/fake-rocketchat.js';
import { bytesOf, lineWithFiles, RelayAlone } from './helpers/relay-alone.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-rocketchat's files (#34): a file message's files are read from the server's /file-upload/ with
 * the bot's id and token, never from another host; a gateway line's files go up with rooms.media and
 * rooms.mediaConfirm under the speaker's name, over FileUpload_MaxFileSize as their link line, once
 * across a restart between the confirm and its answer. The relay alone against the fake Rocket.Chat.
 */

let fake: FakeRocketchat | undefined;
let alone: RelayAlone | undefined;
let elsewhere: Server | undefined;
afterEach(async () => {
  await alone?.close();
  await fake?.close();
  await new Promise((done) => (elsewhere ? elsewhere.close(done) : done(undefined)));
  alone = fake = elsewhere = undefined;
});

async function world(extra: Record<string, unknown> = {}) {
  fake = await FakeRocketchat.start();
  const general = fake.addRoom('general');
  const alice = fake.addUser('alice', { name: 'Alice Liddell' }).user;
  const options = relayRocketchat.options.parse({ server_url: fake.url, user_id: fake.bot._id, token: fake.botToken, rooms: { general: '#general' }, request_timeout_ms: 2_000, ...extra });
  alone = new RelayAlone((env) => relayRocketchat.create(options, env), ['#general']);
  await alone.start();
  await waitFor('the realtime session', () => fake!.sockets >= 1 && (alone!.plugin!.stats!().sessions ?? 0) >= 1);
  return { fake, alone, general, alice };
}

const botMessages = (r: FakeRocketchat, room: string): FakeMessage[] => r.inRoom(room).filter((m) => m.u._id === r.bot._id);

describe('relay-rocketchat: files', () => {
  test('file links: relative and on the server\'s own origin are files; other hosts and escapes are not', () => {
    const server = 'https://chat.example.org';
    expect(filePathOf('/file-upload/AbCdEfGh12345/photo.png', server)).toBe('/file-upload/AbCdEfGh12345/photo.png');
    expect(filePathOf('https://chat.example.org/file-upload/AbCdEfGh12345/a%20b.pdf', server)).toBe('/file-upload/AbCdEfGh12345/a%20b.pdf');
    expect(filePathOf('https://other.example/file-upload/AbCdEfGh12345/x.png', server)).toBeUndefined();
    expect(filePathOf('https://chat.example.org.evil.example/file-upload/AbCdEfGh12345/x.png', server)).toBeUndefined();
    expect(filePathOf('/file-upload/AbCdEfGh12345/../../api/v1/me', server)).toBeUndefined();
    expect(filePathOf('/avatar/alice', server)).toBeUndefined();
    const base = { server_url: server, user_id: 'aB3dE5gH7jK9mN2pQ', token: 'x'.repeat(43) };
    expect(relayRocketchat.options.safeParse({ ...base, max_upload_bytes: 5_000_000 }).success).toBe(true);
    expect(relayRocketchat.options.safeParse({ ...base, max_upload_bytes: 1.5 }).success).toBe(false);
  });

  test('a picture said on Rocket.Chat: read from /file-upload/ with the bot\'s id and token, its bytes arrive with the caption; an attachment linking another host is never fetched; without the token the file is refused', async () => {
    const w = await world();
    let fetchedElsewhere = 0;
    elsewhere = createServer((_req, res) => {
      fetchedElsewhere += 1;
      res.end('x');
    });
    await new Promise<void>((ready) => elsewhere!.listen(0, '127.0.0.1', ready));
    const other = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
    const picture = randomBytes(80_000);
    const said = w.fake.sayFile(w.general, w.alice, 'photo.png', 'image/png', picture, 'my cat');
    w.fake.say(w.general, w.alice, 'from an integration', { attachments: [{ title: 'x.png', type: 'file', title_link: `${other}/file-upload/AbCdEfGh12345/x.png`, image_url: `${other}/x.png` }] });
    await waitFor('both messages handed on', () => w.alone.received.length === 2);
    const [first, second] = w.alone.received.map((r) => r.message);
    expect(first).toMatchObject({ text: 'my cat', nativeId: said._id });
    expect(first!.files?.map((f) => [f.name, f.contentType, f.size])).toEqual([['photo.png', 'image/png', picture.length]]);
    expect((await bytesOf(await first!.files![0]!.open(AbortSignal.timeout(5_000)))).equals(picture)).toBe(true);
    expect(second).toMatchObject({ text: 'from an integration' });
    expect(second!.files).toBeUndefined();
    expect({ downloads: w.fake.downloads, fetchedElsewhere }).toEqual({ downloads: 1, fetchedElsewhere: 0 });

    // A file alone (no caption) is still a message.
    w.fake.sayFile(w.general, w.alice, 'notes.txt', 'text/plain', Buffer.from('plain notes'));
    await waitFor('the third message', () => w.alone.received.length === 3);
    expect(w.alone.received[2]!.message).toMatchObject({ text: '' });
    expect(w.alone.received[2]!.message.files?.[0]).toMatchObject({ name: 'notes.txt', contentType: 'text/plain', size: 11 });

    const anonymous = await request(`${w.fake.url}${said.attachments![0]!.title_link}`);
    expect(anonymous.statusCode).toBe(403);
    await anonymous.body.dump();
    expect(w.fake.refusedDownloads).toBe(1);
  });

  test('a line with a picture goes up natively (rooms.media + rooms.mediaConfirm) under the speaker\'s name with its text; bytes the same; a refused file said after the text; an edit keeps both', async () => {
    const w = await world();
    const picture = randomBytes(150_000);
    const file = await w.alone.file('photo.png', picture, 'image/png');
    w.alone.plugin!.endpoint!.send('#general', lineWithFiles('k1', 'see *this*', [file], { refusedFiles: [{ name: 'big.iso', reason: 'too big (40 MB, limit 25 MB)' }] }));
    await waitFor('the message on Rocket.Chat', () => botMessages(w.fake, w.general).length === 1);
    const [message] = botMessages(w.fake, w.general);
    const upload = w.fake.uploads.get(message!.file!._id)!;
    expect(upload.bytes.equals(picture)).toBe(true);
    expect(upload).toMatchObject({ name: 'photo.png', type: 'image/png', confirmed: true });
    expect(message).toMatchObject({ alias: 'Bob', msg: 'see \\*this\\*\n\\[a file was not relayed: big.iso: too big \\(40 MB, limit 25 MB\\)\\]' });
    expect(message!.attachments?.[0]).toMatchObject({ title: 'photo.png', image_type: 'image/png' });
    expect(w.fake.sends).toHaveLength(0);
    expect(await waitFor('the native id told', () => w.alone.posted.get('k1'))).toBe(message!._id);

    // An edit changes the caption and keeps the file and the line of the refused one.
    w.alone.plugin!.endpoint!.send('#general', lineWithFiles('k1-edit', 'see that', [], { kind: 'edit', target: message!._id }));
    await waitFor('the edit on Rocket.Chat', () => botMessages(w.fake, w.general)[0]!.msg.startsWith('see that'));
    expect(botMessages(w.fake, w.general)[0]).toMatchObject({ msg: 'see that\n\\[a file was not relayed: big.iso: too big \\(40 MB, limit 25 MB\\)\\]', file: { name: 'photo.png' } });
  });

  test('over the server\'s FileUpload_MaxFileSize, or gone from the store: the link line in a text message, nothing uploaded', async () => {
    const w = await world();
    w.fake.maxFileSize = 100_000;
    await w.alone.restart();
    await waitFor('the settings read again', () => w.fake.calls.filter((c) => c === 'GET settings.public').length >= 2);
    const big = await w.alone.file('big.bin', randomBytes(150_000), 'application/octet-stream');
    const gone = await w.alone.file('gone.txt', Buffer.from('old'), 'text/plain');
    await rm(w.alone.media.pathOf(gone.id));
    w.alone.plugin!.endpoint!.send('#general', lineWithFiles('k1', 'two files', [big, gone]));
    await waitFor('two messages on Rocket.Chat', () => botMessages(w.fake, w.general).length === 2);
    expect(w.fake.mediaUploads).toBe(0);
    const escaped = (url: string) => url.replace(/_/g, '\\_');
    expect(botMessages(w.fake, w.general).map((m) => m.msg)).toEqual([`two files\n\\[file: big.bin ${escaped(big.url!)}\\]`, `\\[file: gone.txt ${escaped(gone.url!)}\\]`]);
    expect(await waitFor('the native id told', () => w.alone.posted.get('k1'))).toBe(botMessages(w.fake, w.general)[0]!._id);
  });

  test('a confirm that failed is tried again with the same upload (noted): nothing uploaded twice, one message', async () => {
    const w = await world();
    const picture = randomBytes(30_000);
    const file = await w.alone.file('photo.png', picture, 'image/png');
    w.fake.failConfirm(1);
    w.alone.plugin!.endpoint!.send('#general', lineWithFiles('k1', 'again', [file]));
    await waitFor('the message on Rocket.Chat', () => botMessages(w.fake, w.general).length === 1, 15_000);
    await waitFor('the queue empty', () => w.alone.plugin!.stats!().queued === 0);
    expect({ uploads: w.fake.mediaUploads, confirms: w.fake.confirms.length, retries: w.alone.plugin!.stats!().retries }).toEqual({ uploads: 1, confirms: 2, retries: 1 });
    expect(w.fake.uploads.get(botMessages(w.fake, w.general)[0]!.file!._id)!.bytes.equals(picture)).toBe(true);
  });

  test('stopped after mediaConfirm made the message but before its answer: the next start finds the file\'s message and sends nothing twice', async () => {
    const w = await world();
    const file = await w.alone.file('photo.jpg', randomBytes(40_000), 'image/jpeg');
    w.fake.stallAnswer(1);
    w.alone.plugin!.endpoint!.send('#general', lineWithFiles('k1', 'in flight', [file]));
    await waitFor('the message made', () => botMessages(w.fake, w.general).length === 1);
    await w.alone.restart();
    w.alone.plugin!.endpoint!.send('#general', lineWithFiles('k2', 'after the restart', []));
    await waitFor('the second message', () => botMessages(w.fake, w.general).length === 2, 15_000);
    await waitFor('the queue empty', () => w.alone.plugin!.stats!().queued === 0);
    expect(botMessages(w.fake, w.general).map((m) => m.msg)).toEqual(['in flight', 'after the restart']);
    expect({ uploads: w.fake.mediaUploads, confirms: w.fake.confirms.length }).toEqual({ uploads: 1, confirms: 1 });
    expect(w.alone.plugin!.stats!()).toMatchObject({ found_after_retry: 1 });
    expect(w.alone.posted.get('k1')).toBe(botMessages(w.fake, w.general)[0]!._id);
  });
});
