import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import relayZulip from '../plugins/relay-zulip/index.js';
import { uploadLinks } from '../plugins/relay-zulip/files.js';
import { FakeZulip, type FakeZulipMessage } from './helpers/fake-zulip.js';
import { bytesOf, lineWithFiles, RelayAlone } from './helpers/relay-alone.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-zulip's files (#34): uploads a Zulip message links to are read through the bot's key (Zulip's
 * temporary-URL flow) and never from another host; a gateway line's files are uploaded (POST
 * /user_uploads) and linked in its message, over the server's limit as their link line, once across a
 * restart mid-send. The relay alone against the fake Zulip, with a real media store.
 */

let fake: FakeZulip | undefined;
let alone: RelayAlone | undefined;
let elsewhere: Server | undefined;
afterEach(async () => {
  await alone?.close();
  await fake?.close();
  await new Promise((done) => (elsewhere ? elsewhere.close(done) : done(undefined)));
  alone = fake = elsewhere = undefined;
});

async function world(extra: Record<string, unknown> = {}) {
  fake = await FakeZulip.start();
  fake.heartbeatMs = 300;
  const general = fake.addStream('general');
  const alice = fake.addUser('alice', { full_name: 'Alice Z' }).user;
  const options = relayZulip.options.parse({ server_url: fake.url, email: fake.bot.email, api_key: fake.botKey, streams: { general: 'general/lobby' }, request_timeout_ms: 2_000, ...extra });
  alone = new RelayAlone((env) => relayZulip.create(options, env), ['general/lobby']);
  await alone.start();
  await waitFor('the stream polled', () => fake!.polling >= 1);
  return { fake, alone, general, alice };
}

const botMessages = (z: FakeZulip, stream: number): FakeZulipMessage[] => z.inStream(stream).filter((m) => m.sender_id === z.bot.user_id);

describe('relay-zulip: files', () => {
  test('upload links: relative and on the server\'s own origin are files, other hosts and escapes stay text; one linear scan', () => {
    const server = 'https://chat.example.org';
    const said = uploadLinks('look\n[photo.png](/user_uploads/2/ab/xyz/photo.png)\n[doc](https://chat.example.org/user_uploads/2/cd/q/doc.pdf) and '
      + '[evil](https://other.example/user_uploads/2/ab/xyz/x.png) [up](/user_uploads/2/../../etc/passwd) [t](/user_uploads/temporary/abc/x)', server);
    expect(said.links).toEqual([{ name: 'photo.png', path: '/user_uploads/2/ab/xyz/photo.png' }, { name: 'doc', path: '/user_uploads/2/cd/q/doc.pdf' }]);
    expect(said.text).toBe('look\n and [evil](https://other.example/user_uploads/2/ab/xyz/x.png) [up](/user_uploads/2/../../etc/passwd) [t](/user_uploads/temporary/abc/x)');
    expect(uploadLinks('no links [here]', server)).toEqual({ text: 'no links [here]', links: [] });
    expect(uploadLinks('[a](/user_uploads/2/a/b/a.png) and again [a](/user_uploads/2/a/b/a.png)', server)).toEqual({ text: 'and again', links: [{ name: 'a', path: '/user_uploads/2/a/b/a.png' }] });
    // 256 KiB of `](` with no `)`, and of `[`: each character looked at a bounded number of times.
    const hostile = `[${'](x'.repeat(87_381)}`;
    expect(uploadLinks(hostile, server).text).toBe(hostile);
    expect(uploadLinks(Array.from({ length: 4_096 }, (_, k) => `[](/user_uploads/2/a/b/${k}.txt)`).join(''), server).links).toHaveLength(4_096);
    const base = { server_url: server, email: 'bot@chat.example.org', api_key: 'k'.repeat(32) };
    expect(relayZulip.options.safeParse({ ...base, max_upload_bytes: 1_000_000 }).success).toBe(true);
    expect(relayZulip.options.safeParse({ ...base, max_upload_bytes: -1 }).success).toBe(false);
  });

  test('a picture said on Zulip: read through the bot\'s key (a temporary URL) and its bytes arrive; a link to another host is never fetched; without the key the file is refused', async () => {
    const w = await world();
    let fetchedElsewhere = 0;
    elsewhere = createServer((_req, res) => {
      fetchedElsewhere += 1;
      res.end('x');
    });
    await new Promise<void>((ready) => elsewhere!.listen(0, '127.0.0.1', ready));
    const other = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
    const picture = randomBytes(70_000);
    const path = w.fake.addUpload(w.alice, 'photo.png', picture, 'image/png');
    w.fake.say(w.general, w.alice, `my cat\n[photo.png](${path})\n[not ours](${other}/user_uploads/2/ab/cd/x.png)`);
    await waitFor('the message handed on', () => w.alone.received.length === 1);
    const { message } = w.alone.received[0]!;
    expect(message.text).toBe(`my cat\n[not ours](${other}/user_uploads/2/ab/cd/x.png)`);
    expect(message.files?.map((f) => [f.name, f.contentType])).toEqual([['photo.png', 'image/png']]);
    const bytes = await bytesOf(await message.files![0]!.open(AbortSignal.timeout(5_000)));
    expect(bytes.equals(picture)).toBe(true);
    expect({ temporaryUrls: w.fake.temporaryUrls, downloads: w.fake.downloads, fetchedElsewhere }).toEqual({ temporaryUrls: 1, downloads: 1, fetchedElsewhere: 0 });

    // A message of files alone is still a message; its text is empty.
    w.fake.say(w.general, w.alice, `[photo.png](${w.fake.url}${path})`);
    await waitFor('the second message', () => w.alone.received.length === 2);
    expect(w.alone.received[1]!.message).toMatchObject({ text: '' });
    expect(w.alone.received[1]!.message.files).toHaveLength(1);

    const anonymous = await request(`${w.fake.url}${path}`);
    expect(anonymous.statusCode).toBe(401);
    await anonymous.body.dump();
  });

  test('a line with a picture goes up natively (POST /user_uploads) and its message links it after the speaker\'s text; bytes the same; an edit keeps the picture', async () => {
    const w = await world();
    const picture = randomBytes(200_000);
    const file = await w.alone.file('photo.png', picture, 'image/png');
    w.alone.plugin!.endpoint!.send('general/lobby', lineWithFiles('k1', 'see *this*', [file], { refusedFiles: [{ name: 'big.iso', reason: 'too big (40 MB, limit 25 MB)' }] }));
    await waitFor('the message on Zulip', () => botMessages(w.fake, w.general).length === 1);
    const [upload] = [...w.fake.uploads.entries()];
    expect(upload![1].bytes.equals(picture)).toBe(true);
    expect(upload![1]).toMatchObject({ name: 'photo.png', type: 'image/png', owner: w.fake.bot.user_id });
    expect(botMessages(w.fake, w.general)[0]!.content).toBe(`**Bob**: see \\*this\\*\n[photo.png](${upload![0]})\n\\[a file was not relayed: big.iso: too big \\(40 MB, limit 25 MB\\)\\]`);
    expect(await waitFor('the native id told', () => w.alone.posted.get('k1'))).toBe(String(botMessages(w.fake, w.general)[0]!.id));

    // An edit of the line changes its text and keeps its file lines (the picture stays in the message).
    w.alone.plugin!.endpoint!.send('general/lobby', lineWithFiles('k1-edit', 'see that', [], { kind: 'edit', target: w.alone.posted.get('k1')! }));
    await waitFor('the edit on Zulip', () => botMessages(w.fake, w.general)[0]!.content.startsWith('**Bob**: see that'));
    expect(botMessages(w.fake, w.general)[0]!.content).toBe(`**Bob**: see that\n[photo.png](${upload![0]})\n\\[a file was not relayed: big.iso: too big \\(40 MB, limit 25 MB\\)\\]`);
  });

  test('over the server\'s max_file_upload_size_mib, or gone from the store: the link line instead, nothing uploaded', async () => {
    const w = await world();
    w.fake.maxUploadMib = 1;
    await w.alone.restart();
    await waitFor('registered again', () => w.fake.registers >= 2 && w.fake.polling >= 1);
    const big = await w.alone.file('big.bin', randomBytes(1_200_000), 'application/octet-stream');
    const gone = await w.alone.file('gone.txt', Buffer.from('old'), 'text/plain');
    await import('node:fs/promises').then((fs) => fs.rm(w.alone.media.pathOf(gone.id)));
    w.alone.plugin!.endpoint!.send('general/lobby', lineWithFiles('k1', 'two files', [big, gone]));
    await waitFor('the message on Zulip', () => botMessages(w.fake, w.general).length === 1);
    expect(w.fake.uploadCount).toBe(0);
    expect(botMessages(w.fake, w.general)[0]!.content).toBe(
      `**Bob**: two files\n\\[file: big.bin ${big.url!.replace(/_/g, '\\_')}\\]\n\\[file: gone.txt ${gone.url!.replace(/_/g, '\\_')}\\]`);
  });

  test('stopped while uploading the second of two files: the next start uploads only that one again (the first was noted) and makes the message once', async () => {
    const w = await world();
    const [one, two] = [randomBytes(30_000), randomBytes(40_000)];
    const files = [await w.alone.file('one.png', one, 'image/png'), await w.alone.file('two.pdf', two, 'application/pdf')];
    w.fake.stallUpload(2);
    w.alone.plugin!.endpoint!.send('general/lobby', lineWithFiles('k1', 'two files', files));
    await waitFor('the second upload made', () => w.fake.uploadCount === 2);
    await w.alone.restart();
    await waitFor('the message on Zulip', () => botMessages(w.fake, w.general).length === 1);
    await waitFor('the queue empty', () => w.alone.plugin!.stats!().queued === 0);
    // one.png once; two.pdf twice (its first upload was never answered: left unreferenced); one message.
    expect([...w.fake.uploads.values()].map((u) => u.name)).toEqual(['one.png', 'two.pdf', 'two.pdf']);
    const [first, , again] = [...w.fake.uploads.keys()];
    expect(botMessages(w.fake, w.general)[0]!.content).toBe(`**Bob**: two files\n[one.png](${first})\n[two.pdf](${again})`);
    expect(w.fake.uploads.get(again!)!.bytes.equals(two)).toBe(true);
    expect(w.fake.sends).toHaveLength(1);
  });

  test('stopped after the message was made but before its answer: the next start finds it by its noted content and posts nothing twice, uploads nothing again', async () => {
    const w = await world();
    const picture = randomBytes(50_000);
    const file = await w.alone.file('photo.jpg', picture, 'image/jpeg');
    w.fake.stallAnswer(1);
    w.alone.plugin!.endpoint!.send('general/lobby', lineWithFiles('k1', 'in flight', [file]));
    await waitFor('the message made', () => botMessages(w.fake, w.general).length === 1);
    await w.alone.restart();
    w.alone.plugin!.endpoint!.send('general/lobby', lineWithFiles('k2', 'after the restart', []));
    await waitFor('the second message', () => botMessages(w.fake, w.general).length === 2, 15_000);
    await waitFor('the queue empty', () => w.alone.plugin!.stats!().queued === 0);
    expect(botMessages(w.fake, w.general).map((m) => m.content.split('\n')[0])).toEqual(['**Bob**: in flight', '**Bob**: after the restart']);
    expect(w.fake.uploadCount).toBe(1);
    expect(w.fake.sends).toHaveLength(2);
    expect(w.alone.plugin!.stats!()).toMatchObject({ found_after_retry: 1 });
  });
});
