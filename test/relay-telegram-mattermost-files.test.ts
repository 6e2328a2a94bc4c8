import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import { FakeMattermost } from './helpers/fake-mattermost.js';
import { FakeTelegram, type TgUser } from './helpers/fake-telegram.js';
import { chatOf, history, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Files end to end through one gateway of a chat, a Telegram group (the local Bot API) and a Mattermost
 * channel (the local Mattermost), with the gateway's media store and its listener: a picture said on
 * either platform is read through that platform's file API, arrives natively on the other, and shows in
 * the chat as a working link (the bytes compared each way).
 */

const GROUP = -1001000000002;
const DAVE: TgUser = { id: 502, is_bot: false, first_name: 'dave' };
/** A JPEG's first bytes (the gateway checks an image's magic number), then noise. */
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00]), randomBytes(150_000)]);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]), randomBytes(90_000)]);

let telegram: FakeTelegram | undefined;
let mattermost: FakeMattermost | undefined;
let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  await telegram?.close();
  await mattermost?.close();
  env = telegram = mattermost = undefined;
});

/** The link in a chat line `<name> [image: name http://…]`. */
const linkIn = (line: string) => /(http:\/\/\S+)\]$/.exec(line)?.[1];

describe('files end to end: Telegram ⇄ Mattermost and the chat', () => {
  test('a picture said on Telegram arrives natively on Mattermost and as a working link in the chat; one said on Mattermost arrives by sendPhoto on Telegram; one over the Bot API 20 MB download limit is never fetched and said not relayed', { timeout: 30_000 }, async () => {
    telegram = await FakeTelegram.start();
    telegram.addChat({ id: GROUP, type: 'group', title: 'Random' });
    mattermost = await FakeMattermost.start();
    const channel = mattermost.addChannel('town-square');
    const alice = mattermost.addUser('alice').user;
    env = await makeEnv([]);
    env.writeConfig([{
      chats: [{ chat: 'general' }], reply_rate: { per_second: 200, burst: 200 },
      plugins: [
        { use: 'relay-telegram', with: { token: telegram.token, api_url: telegram.url, rate: 'off', chats: { general: String(GROUP) } } },
        { use: 'relay-mattermost', with: { server_url: mattermost.url, token: mattermost.botToken, channels: { general: channel }, request_timeout_ms: 2_000 } },
      ],
    }]);
    const config = parse(readFileSync(env.configFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(env.configFile, stringify({ ...config, media: { listen: '127.0.0.1:0' } }));
    await env.start();
    const stats = (name: string) => (env!.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins[name]!;
    await waitFor('both relays up', () => (stats('relay-telegram').polls ?? 0) >= 1 && (stats('relay-mattermost').sessions ?? 0) >= 1);
    const bot = env.client('bot');
    const general = (await chatOf(bot, 'general'))!;
    const botId = String(general.chat_sub!.user_id);
    const chatLines = async () => (await history(bot, general.id)).filter((m: ChatMessage) => String(m.user_id) === botId).map((m) => m.message);

    // Telegram → Mattermost and the chat.
    const photo = telegram.addFile(JPEG);
    telegram.say(GROUP, DAVE, '', { extra: { text: undefined, caption: 'the view', photo: [{ ...photo, width: 1280, height: 720 }] } });
    const onMattermost = await waitFor('the photo on Mattermost', () => mattermost!.inChannel(channel).find((p) => p.user_id === mattermost!.bot.id && p.file_ids?.length));
    expect(onMattermost.message).toBe('the view');
    expect(onMattermost.props.override_username).toBe('dave');
    const uploaded = mattermost.files.get(onMattermost.file_ids![0]!)!;
    expect([uploaded.name, uploaded.mime_type, uploaded.bytes.equals(JPEG)]).toEqual(['photo.jpg', 'image/jpeg', true]);
    const lines = await waitFor('the photo in the chat', async () => (await chatLines()).find((line) => line.startsWith('<dave> the view')));
    const [text, image] = lines.split('\n');
    expect(text).toBe('<dave> the view');
    expect(image).toMatch(/^<dave> \[image: photo\.jpg http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/photo\.jpg\]$/);
    const link = await fetch(linkIn(image!)!);
    expect([link.status, link.headers.get('content-type'), Buffer.from(await link.arrayBuffer()).equals(JPEG)]).toEqual([200, 'image/jpeg', true]);
    // Read once, through getFile and the token's download.
    expect([telegram.calls.filter((c) => c === 'getFile').length, telegram.downloads]).toEqual([1, 1]);

    // Mattermost → Telegram and the chat.
    mattermost.sayFiles(channel, alice, 'a diagram', [{ name: 'plan.png', mime_type: 'image/png', bytes: PNG }]);
    await waitFor('the picture on Telegram', () => telegram!.uploads.length === 1);
    const [sent] = telegram.uploads;
    expect([sent!.method, sent!.filename, sent!.caption, sent!.bytes.equals(PNG)]).toEqual(['sendPhoto', 'plan.png', '<alice> a diagram', true]);
    const second = await waitFor('the picture in the chat', async () => (await chatLines()).find((line) => line.startsWith('<alice> a diagram')));
    const back = await fetch(linkIn(second.split('\n')[1]!)!);
    expect(Buffer.from(await back.arrayBuffer()).equals(PNG)).toBe(true);
    expect(mattermost.downloads).toBe(1);
    // Each went once to each side: nothing came back to its origin.
    expect(telegram.uploads).toHaveLength(1);
    expect(mattermost.inChannel(channel).filter((p) => p.user_id === mattermost!.bot.id)).toHaveLength(1);

    // Over the Bot API's 20 MB download limit (under the store's 25 MB): never fetched; the other sides say it was not relayed, and why (FileRefusedError).
    const clip = telegram.addFile(undefined, 22_000_000, 'mp4');
    telegram.say(GROUP, DAVE, '', { extra: { text: undefined, caption: 'long one', video: { ...clip, file_name: 'clip.mp4', mime_type: 'video/mp4' } } });
    const refused = await waitFor('the refusal in the chat', async () => (await chatLines()).find((line) => line.startsWith('<dave> long one')));
    expect(refused).toBe('<dave> long one\n<dave> [a file was not relayed: clip.mp4: Telegram bots cannot download files over 20 MB (this one is 22 MB)]');
    const note = await waitFor('the refusal on Mattermost', () => mattermost!.inChannel(channel).find((p) => p.user_id === mattermost!.bot.id && p.message.startsWith('long one')));
    expect([note.message, note.file_ids]).toEqual(['long one\n\\[a file was not relayed: clip.mp4: Telegram bots cannot download files over 20 MB \\(this one is 22 MB\\)\\]', undefined]);
    expect(telegram.calls.filter((c) => c === 'getFile')).toHaveLength(1);
    expect(JSON.stringify(env.log.lines)).toContain('Telegram bots cannot download files over 20 MB (this one is 22 MB)');
    expect(JSON.stringify(env.log.lines)).not.toContain(telegram.token.split(':')[1]);
  });
});
