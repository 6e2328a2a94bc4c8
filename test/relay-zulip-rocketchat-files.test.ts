import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, test } from 'vitest';
import { FakeRocketchat } from './helpers/fake-rocketchat.js';
import { FakeZulip } from './helpers/fake-zulip.js';
import { chatOf, history, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Files end to end through a supervisor's gateway (#34): a chat, a Zulip topic and a Rocket.Chat room in
 * one gateway, the gateway's intake reading each file once into the media store. A picture said on
 * Zulip arrives natively on Rocket.Chat (rooms.media + mediaConfirm) and in the chat as a working link;
 * one said on Rocket.Chat arrives natively on Zulip (an upload linked in the message). Bytes compared.
 */

let zulip: FakeZulip | undefined;
let rocket: FakeRocketchat | undefined;
let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  await zulip?.close();
  await rocket?.close();
  env = zulip = rocket = undefined;
});

/** A small PNG: its signature and an IHDR chunk, then noise (the intake checks an image's first bytes). */
const png = (fill: number) => Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]), Buffer.alloc(60_000, fill)]);

describe('files: Zulip ⇄ Rocket.Chat through the gateway', () => {
  test('a picture said on Zulip arrives natively on Rocket.Chat and as a working link in the chat; one said on Rocket.Chat arrives natively on Zulip', { timeout: 30_000 }, async () => {
    zulip = await FakeZulip.start();
    zulip.heartbeatMs = 300;
    const stream = zulip.addStream('general');
    const alice = zulip.addUser('alice', { full_name: 'Alice Z' }).user;
    rocket = await FakeRocketchat.start();
    const room = rocket.addRoom('general');
    const rosa = rocket.addUser('rosa').user;
    env = await makeEnv([]);
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      reply_rate: { per_second: 200, burst: 200 },
      plugins: [
        { use: 'relay-zulip', with: { server_url: zulip.url, email: zulip.bot.email, api_key: zulip.botKey, streams: {}, request_timeout_ms: 2_000 } },
        { use: 'relay-rocketchat', with: { server_url: rocket.url, user_id: rocket.bot._id, token: rocket.botToken, rooms: {}, request_timeout_ms: 2_000 } },
      ],
    }], [{ name: 'lobby', endpoints: [{ chat: 'general' }, { zulip: 'general/lobby' }, { rocketchat: '#general' }] }]);
    const config = parse(readFileSync(env.configFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(env.configFile, stringify({ ...config, media: { listen: '127.0.0.1:0' } }));
    await env.start();
    await waitFor('both relays reading', () => zulip!.polling >= 1 && rocket!.sockets >= 1);
    const bot = env.client('bot');
    const general = (await chatOf(bot, 'general'))!;
    const chatTexts = async () => (await history(bot, general.id)).map((m) => m.message);

    // Zulip → Rocket.Chat (natively) and the chat (a link).
    const fromZulip = png(1);
    const path = zulip.addUpload(alice, 'cat.png', fromZulip, 'image/png');
    zulip.say(stream, alice, `my cat\n[cat.png](${path})`);
    const copy = await waitFor('the picture on Rocket.Chat', () => rocket!.inRoom(room).find((m) => m.u._id === rocket!.bot._id && m.file));
    expect(rocket.uploads.get(copy.file!._id)!.bytes.equals(fromZulip)).toBe(true);
    expect(copy).toMatchObject({ msg: 'my cat', alias: 'Alice Z', file: { name: 'cat.png', type: 'image/png', size: fromZulip.length } });
    const lines = await waitFor('the line in the chat', async () => (await chatTexts()).find((t) => t.startsWith('<Alice Z> my cat')));
    const link = /^<Alice Z> \[image: cat\.png (http:\/\/\S+)\]$/.exec(lines.split('\n')[1] ?? '')?.[1];
    expect(link).toBeDefined();
    const download = await request(link!);
    expect(download.statusCode).toBe(200);
    expect(Buffer.from(await download.body.arrayBuffer()).equals(fromZulip)).toBe(true);
    expect(zulip.downloads).toBe(1);

    // Rocket.Chat → Zulip (natively: uploaded and linked in the message).
    const fromRocket = png(2);
    rocket.sayFile(room, rosa, 'dog.png', 'image/png', fromRocket, 'my dog');
    const message = await waitFor('the picture on Zulip', () => zulip!.inStream(stream).find((m) => m.sender_id === zulip!.bot.user_id));
    const [text, linked] = message.content.split('\n');
    expect(text).toBe('**rosa**: my dog');
    const uploaded = /^\[dog\.png\]\((\/user_uploads\/\S+)\)$/.exec(linked ?? '')?.[1];
    expect(zulip.uploads.get(uploaded!)!.bytes.equals(fromRocket)).toBe(true);
    expect(rocket.downloads).toBe(1);
    // Each once, nothing back where it was said.
    expect(rocket.inRoom(room).filter((m) => m.u._id === rocket!.bot._id)).toHaveLength(1);
    expect(zulip.inStream(stream).filter((m) => m.sender_id === zulip!.bot.user_id)).toHaveLength(1);
  });
});
