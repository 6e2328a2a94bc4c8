import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { FakeMatrix } from './helpers/fake-matrix.js';
import { Prosody, RoomUser } from './helpers/prosody.js';
import { chatOf, history, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Files across the gateway end to end (#34) between Matrix (the fake homeserver, test/helpers/fake-matrix.ts)
 * and XMPP (a real Prosody with mod_http_file_share): a picture said on one arrives natively on the other,
 * and in the chat as a link to the media store's listener; each is downloaded and its bytes compared.
 */

const PASSWORDS = { bot: 'bot-secret', alice: 'alice-secret' };
/** A PNG's signature and header, then bytes (the intake checks the first ones). */
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex'), Buffer.alloc(2000, 9)]);
const PNG2 = Buffer.concat([PNG.subarray(0, 29), Buffer.alloc(1500, 3)]);

let prosody: Prosody;
let fake: FakeMatrix | undefined;
let env: Env | undefined;
const users: RoomUser[] = [];

beforeAll(async () => {
  prosody = await Prosody.start(PASSWORDS, {}, { upload: { sizeLimit: 1_000_000 } });
});
afterAll(async () => {
  await prosody?.close();
});
afterEach(async () => {
  await env?.close();
  await Promise.all(users.splice(0).map((user) => user.close()));
  await fake?.close();
  env = fake = undefined;
});

async function download(url: string): Promise<{ status: number; type: unknown; bytes: Buffer }> {
  const answer = await request(url);
  return { status: answer.statusCode, type: answer.headers['content-type'], bytes: Buffer.from(await answer.body.arrayBuffer()) };
}

/** The link in a chat line `<name> [image: photo.png http://…]`. */
const linkIn = (line: string) => /(http:\/\/\S+)\]/.exec(line)?.[1];

describe('files between Matrix and XMPP', () => {
  test('a picture said on Matrix arrives on XMPP as an upload with OOB and in the chat as a working link; one shared on XMPP arrives on Matrix as m.image', { timeout: 40_000 }, async () => {
    fake = await FakeMatrix.start();
    const bot = fake.addUser('groupwire', 'groupwire bot');
    const carol = fake.addUser('carol', 'Carol');
    const matrixRoom = fake.addRoom('lobby', { members: [carol.userId] });
    const xmppRoom = prosody.room(`lobby-${Date.now().toString(36)}`);
    const alice = await RoomUser.join(prosody, 'alice', PASSWORDS.alice, xmppRoom);
    users.push(alice);

    env = await makeEnv([]);
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      reply_rate: { per_second: 200, burst: 200 },
      plugins: [
        { use: 'relay-matrix', with: { homeserver: fake.url, access_token: bot.token, user_id: bot.userId } },
        {
          use: 'relay-xmpp',
          with: { service: prosody.service, jid: `bot@${prosody.domain}`, password: PASSWORDS.bot, tls: { ca_file: prosody.caFile }, upload_url_prefix: prosody.uploadUrl },
        },
      ],
    }], [{ name: 'lobby', endpoints: [{ chat: 'general' }, { matrix: matrixRoom }, { xmpp: xmppRoom }] }]);
    const config = parse(readFileSync(env.configFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(env.configFile, stringify({ ...config, media: { listen: '127.0.0.1:0' } }));
    await env.start();
    await waitFor('the XMPP relay in the room', () => alice.present.has('groupwire'));
    const reader = env.client('bob');
    const general = (await chatOf(reader, 'general'))!;
    const chatTexts = async () => (await history(reader, general.id)).map((m) => m.message);

    // Matrix → XMPP (native) and the chat (a link).
    const mxc = fake.addMedia(PNG, 'image/png', 'photo.png');
    fake.say(matrixRoom, carol.userId, 'photo.png', { msgtype: 'm.image', url: mxc, info: { mimetype: 'image/png', size: PNG.length } });
    await waitFor('the picture on XMPP', () => alice.said.filter((said) => said.nick === 'groupwire').length === 2);
    const [named, uploaded] = alice.said.filter((said) => said.nick === 'groupwire');
    expect(named!.body).toBe('<Carol> [image: photo.png]');
    expect(uploaded!.oob).toBe(uploaded!.body);
    expect(uploaded!.body.startsWith(prosody.uploadUrl)).toBe(true);
    const onXmpp = await download(uploaded!.body);
    expect(onXmpp.status).toBe(200);
    expect(onXmpp.bytes.equals(PNG)).toBe(true);
    const inChat = await waitFor('the link in the chat', async () => (await chatTexts()).find((text) => text.startsWith('<Carol> [image: photo.png')));
    const fromChat = await download(linkIn(inChat)!);
    expect(fromChat).toMatchObject({ status: 200, type: 'image/png' });
    expect(fromChat.bytes.equals(PNG)).toBe(true);
    expect(fake.media.downloads).toBe(1);

    // XMPP → Matrix (native), and the chat.
    await alice.share(prosody.uploadJid, PNG2, 'shot.png', 'image/png');
    const event = await waitFor('the picture on Matrix', () => fake!.eventsIn(matrixRoom).find((e) => e.sender === bot.userId && typeof e.content.url === 'string'));
    expect(event.content).toMatchObject({ msgtype: 'm.image', body: 'alice: shot.png', filename: 'shot.png', info: { mimetype: 'image/png', size: PNG2.length } });
    expect(fake.mediaOf(event.content.url)!.bytes.equals(PNG2)).toBe(true);
    const second = await waitFor('the second link in the chat', async () => (await chatTexts()).find((text) => text.startsWith('<alice> [image: shot.png')));
    expect((await download(linkIn(second)!)).bytes.equals(PNG2)).toBe(true);
    // Each went out once on each side.
    expect(fake.media.uploads).toBe(1);
    expect(alice.said.filter((said) => said.nick === 'groupwire')).toHaveLength(2);
  });
});
