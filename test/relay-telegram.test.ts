import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import { FILE_STORAGE } from '../src/index.js';
import { MediaStore } from '../src/media/media-store.js';
import { botApi } from '../plugins/relay-telegram/client.js';
import { TelegramOutbound } from '../plugins/relay-telegram/outbound.js';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { relayTelegramOptions, relayTelegramWarnings } from '../plugins/relay-telegram/options.js';
import { SendPacing } from '../plugins/relay-telegram/pacing.js';
import { plainFromTelegram, renderLine, speakerOf, type TelegramMessage } from '../plugins/relay-telegram/render.js';
import { expectLinearOnAdversarialText } from './helpers/adversarial-text.js';
import { FakeTelegram, type TgUser } from './helpers/fake-telegram.js';
import { chatOf, history, makeEnv, post, waitFor, type Env, type GatewaySpec } from './helpers/supervisor.js';

/**
 * relay-telegram in a supervisor against the local service and a local Bot API (test/helpers/fake-telegram.ts,
 * written from the Bot API documentation) spoken to by grammY's client.
 */

let fake: FakeTelegram | undefined;
let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  await fake?.close();
  env = fake = undefined;
});

const GENERAL = -1001000000001;
const RANDOM = -1001000000002;
const ALICE: TgUser = { id: 501, is_bot: false, first_name: 'Alice', last_name: 'Smith', username: 'alice' };
const DAVE: TgUser = { id: 502, is_bot: false, first_name: 'dave' };

interface World {
  env: Env;
  fake: FakeTelegram;
  reader: GroupsClient;
}

async function setup(relay: (fake: FakeTelegram) => Record<string, unknown>, gateways?: GatewaySpec[]): Promise<World> {
  fake = await FakeTelegram.start();
  fake.addChat({ id: GENERAL, type: 'supergroup', title: 'General', is_forum: true });
  fake.addChat({ id: RANDOM, type: 'group', title: 'Random' });
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    reply_rate: { per_second: 200, burst: 200 },
    plugins: [{ use: 'relay-telegram', with: { token: fake.token, api_url: fake.url, rate: 'off', ...relay(fake) } }],
  }], gateways);
  return { env, fake, reader: env.client('bob') };
}

const bothChats = () => ({ chats: { general: String(GENERAL), random: String(RANDOM) } });

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-telegram']!;
const report = (e: Env) => e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-telegram')!;

/** The bot's posts in a chat (what the relay brought from Telegram), oldest first. */
async function relayed(e: Env, reader: GroupsClient, subject: string): Promise<string[]> {
  const chat = (await chatOf(reader, subject))!;
  const bot = String((await chatOf(e.client('bot'), subject))!.chat_sub!.user_id);
  return (await history(reader, chat.id)).filter((m: ChatMessage) => String(m.user_id) === bot).map((m) => m.message);
}

/** A port nobody listens on now (the webhook's listener takes it). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

const texts = (w: World, chat: number, topic?: number) => w.fake.botPosts(chat, topic).map((m) => m.text);

describe('relay-telegram', () => {
  test('both ways: chat lines as plain `<name> text` (no parse_mode, no preview), Telegram lines into the chat; a webhook in the way is deleted; the past is not relayed', async () => {
    const w = await setup(bothChats);
    w.fake.say(RANDOM, ALICE, 'said before the relay ever started');
    w.fake.setWebhook('https://elsewhere.example.org/hook');
    await w.env.start();
    await waitFor('the first polls', () => (stats(w.env).polls ?? 0) >= 1);
    expect(stats(w.env).webhooks_deleted).toBe(1);

    await post(w.env.svc, 'general', 'bob', 'hi *bold* <b>x</b> [a](http://x.example) @all @everyone');
    await post(w.env.svc, 'random', 'carol', 'over in random');
    await waitFor('two posts in Telegram', () => texts(w, GENERAL).length === 1 && texts(w, RANDOM).length === 1);
    expect(texts(w, GENERAL)).toEqual(['<Bob Member> hi *bold* <b>x</b> [a](http://x.example) @all @everyone']);
    expect(texts(w, RANDOM)).toEqual(['<Carol Member> over in random']);
    const sent = w.fake.bodies.filter((b) => b.method === 'sendMessage').map((b) => b.body);
    expect(sent.every((body) => body.parse_mode === undefined && body.entities === undefined && body.link_preview_options?.is_disabled === true)).toBe(true);

    w.fake.say(GENERAL, ALICE, 'hello from Telegram');
    w.fake.say(RANDOM, DAVE, '', { extra: { text: undefined, poll: { question: 'lunch?' } } });
    // A message as if from the bot itself (Telegram never sends these): skipped by its id.
    w.fake.say(RANDOM, w.fake.bot, 'an echo of my own');
    w.fake.say(RANDOM, DAVE, 'second');
    await waitFor('the Telegram lines in the chats', async () => (await relayed(w.env, w.reader, 'general')).length === 1 && (await relayed(w.env, w.reader, 'random')).length === 2);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['<Alice Smith> hello from Telegram']);
    expect(await relayed(w.env, w.reader, 'random')).toEqual(['<dave> [poll: lunch?]', '<dave> second']);
    await waitFor('the queue to Telegram empty', () => stats(w.env).queued === 0);
    expect(stats(w.env)).toMatchObject({ posted: 2, received: 3, dropped: 0 });
    expect(report(w.env).status).toMatchObject({ connection: { state: 'connected' }, queues: { to_telegram: 0 } });
    // Each chat's queue in the backlogs (/status, /metrics, the falling-behind warning), with what paces it.
    const limit = expect.stringMatching(/^rate: \d+\/min a chat, \d+\/s in all$|^Telegram's rate limits/);
    expect(report(w.env).status.backlogs).toMatchObject({
      [String(GENERAL)]: { depth: 0, oldestAt: undefined, pushed: 1, taken: 1, limit },
      [String(RANDOM)]: { depth: 0, oldestAt: undefined, pushed: 1, taken: 1, limit },
    });
  });

  test('a command said on Telegram is answered by who said it, in the chat and on Telegram', async () => {
    const w = await setup(bothChats);
    w.env.writeConfig([{
      chats: [{ chat: 'general' }, { chat: 'random' }], reply_rate: { per_second: 200, burst: 200 },
      plugins: [
        { use: 'relay-telegram', with: { token: w.fake.token, api_url: w.fake.url, rate: 'off', ...bothChats() } },
        { use: 'responder', with: { rules: [{ command: 'whoami', reply: '{{user}} on {{platform}} ({{user_id}}) said {{message}}' }] } },
      ],
    }]);
    await w.env.start();
    await waitFor('the first poll', () => (stats(w.env).polls ?? 0) >= 1);
    w.fake.say(RANDOM, ALICE, '!whoami');
    const answer = 'Alice Smith on telegram (telegram:501) said !whoami';
    await waitFor('the answer in the chat', async () => (await relayed(w.env, w.reader, 'random')).includes(answer));
    await waitFor('the answer on Telegram', () => texts(w, RANDOM).some((text) => text?.endsWith(answer)));
    // The command itself is not sent back to Telegram: only the answer.
    expect(texts(w, RANDOM)).toEqual([expect.stringContaining(answer)]);
  });

  test('429 retry_after is waited out: each line posted once, in order', async () => {
    const w = await setup(bothChats);
    await w.env.start();
    await waitFor('the first poll', () => (stats(w.env).polls ?? 0) >= 1);
    w.fake.rateLimit(1);
    for (let n = 1; n <= 4; n += 1) await post(w.env.svc, 'random', 'bob', `line ${n}`);
    await waitFor('four posts', () => texts(w, RANDOM).length === 4 && stats(w.env).posted === 4);
    expect(texts(w, RANDOM)).toEqual([1, 2, 3, 4].map((n) => `<Bob Member> line ${n}`));
    expect(w.fake.bodies.filter((b) => b.method === 'sendMessage')).toHaveLength(5);
    expect(stats(w.env)).toMatchObject({ rate_limited: 1, posted: 4, dropped: 0 });
  });

  test('a restart relays what was said meanwhile once each, in order, from the kept offset; a lost poll answer is asked again; what Telegram dropped after 24 h is gone', async () => {
    const w = await setup(bothChats);
    await w.env.start();
    await waitFor('the first poll', () => (stats(w.env).polls ?? 0) >= 1);
    w.fake.say(RANDOM, ALICE, 'one');
    await waitFor('one', async () => (await relayed(w.env, w.reader, 'random')).length === 1);
    await w.env.supervisor!.stop();

    w.fake.say(RANDOM, ALICE, 'said a day and more ago');
    w.fake.age(25 * 60 * 60 * 1000);
    for (let n = 1; n <= 3; n += 1) w.fake.say(RANDOM, ALICE, `said while away ${n}`);
    w.fake.dropPollAnswers(1);
    await w.env.start();
    await waitFor('all caught up', async () => (await relayed(w.env, w.reader, 'random')).length === 4);
    w.fake.say(RANDOM, ALICE, 'live again');
    await waitFor('the live line', async () => (await relayed(w.env, w.reader, 'random')).length === 5);
    expect(await relayed(w.env, w.reader, 'random')).toEqual(['<Alice Smith> one', ...[1, 2, 3].map((n) => `<Alice Smith> said while away ${n}`), '<Alice Smith> live again']);
    expect(w.env.log.lines.some((line) => line.level === 40 && /getUpdates failed/.test(String(line.msg)))).toBe(true);
    // Everything handed on was confirmed to Telegram by the next offset.
    await waitFor('confirmed', () => w.fake.pending === 0);
  });

  test('a forum topic and a group in one gateway: replies by reply_parameters to the copy, in the topic; a Telegram edit edits the copy', async () => {
    const w = await setup(() => ({}), []);
    const plans = w.fake.addTopic(GENERAL, 'Plans');
    w.env.writeConfig([{
      chats: [{ chat: 'general' }, { chat: 'random' }], reply_rate: { per_second: 200, burst: 200 },
      plugins: [{ use: 'relay-telegram', with: { token: w.fake.token, api_url: w.fake.url, rate: 'off' } }],
    }], [{ name: 'lobby', endpoints: [{ chat: 'general' }, { telegram: `${GENERAL}/${plans}` }, { telegram: String(RANDOM) }] }]);
    await w.env.start();
    await waitFor('the first poll', () => (stats(w.env).polls ?? 0) >= 1);

    // In the topic: Alice's line (it answers the topic's first message, which is no reply) reaches the chat and the group.
    const parent = w.fake.say(GENERAL, ALICE, 'the plan', { topic: plans });
    w.fake.say(GENERAL, DAVE, 'said in General, in no gateway');
    await waitFor('the copy in the group', () => texts(w, RANDOM).length === 1);
    expect(texts(w, RANDOM)).toEqual(['<Alice Smith> the plan']);
    expect(w.fake.bodies.find((b) => b.method === 'sendMessage')!.body.reply_parameters).toBeUndefined();
    const copy = w.fake.botPosts(RANDOM)[0]!;

    // Dave answers the copy in the group: in the topic it answers Alice's own message.
    w.fake.say(RANDOM, DAVE, 'and a detail', { replyTo: copy.message_id });
    await waitFor('the reply in the topic', () => texts(w, GENERAL, plans).length === 1);
    const reply = w.fake.botPosts(GENERAL, plans)[0]!;
    expect(reply).toMatchObject({ text: '<dave> and a detail', message_thread_id: plans, reply_to_message: { message_id: parent.message_id } });
    await waitFor('the reply in the chat', async () => (await relayed(w.env, w.reader, 'general')).length === 2);
    expect((await relayed(w.env, w.reader, 'general'))[1]).toBe('> Alice Smith: the plan\n<dave> and a detail');

    // Alice edits her line: the copy in the group is edited, and the chat told.
    w.fake.edit(GENERAL, parent.message_id, 'the new plan');
    await waitFor('the copy edited', () => w.fake.find(RANDOM, copy.message_id)?.text === '<Alice Smith> the new plan');
    await waitFor('the edit in the chat', async () => (await relayed(w.env, w.reader, 'general')).length === 3);
    expect((await relayed(w.env, w.reader, 'general'))[2]).toBe('(edit) <Alice Smith> the new plan');
    // Two edits within one second (edit_date counts seconds): both are edits of their own.
    w.fake.edit(GENERAL, parent.message_id, 'plan B');
    w.fake.edit(GENERAL, parent.message_id, 'plan C');
    await waitFor('the last edit in the group', () => w.fake.find(RANDOM, copy.message_id)?.text === '<Alice Smith> plan C');
    await waitFor('both edits in the chat', async () => (await relayed(w.env, w.reader, 'general')).length === 5);
    expect((await relayed(w.env, w.reader, 'general')).slice(3)).toEqual(['(edit) <Alice Smith> plan B', '(edit) <Alice Smith> plan C']);
    // Nothing went to General, the topic had only the reply.
    expect(w.fake.botPosts(GENERAL).length).toBe(1);
    expect(stats(w.env)).toMatchObject({ edited: 3, dropped: 0, received: 2 });
  });

  test('webhook mode: setWebhook with the secret and one connection; updates by POST in order, answered once handed on; a POST without the secret refused; a restart gets what Telegram held', async () => {
    const port = await freePort();
    const secret = 'a-secret-of-the-relay_0123456789';
    const w = await setup(() => ({ ...bothChats(), webhook: { url: 'https://bridge.example.org/telegram', listen: { port }, secret_token: secret } }));
    w.fake.deliverTo = `http://127.0.0.1:${port}/telegram`;
    w.fake.say(RANDOM, ALICE, 'said before the relay ever started');
    await w.env.start();
    await waitFor('the webhook set', () => report(w.env).status.connection?.state === 'connected');
    expect(w.fake.bodies.find((b) => b.method === 'setWebhook')!.body).toMatchObject({
      url: 'https://bridge.example.org/telegram', secret_token: secret, max_connections: 1, allowed_updates: ['message', 'edited_message', 'channel_post', 'edited_channel_post'],
      // A first start: what Telegram held is the chats' past.
      drop_pending_updates: true,
    });
    expect(w.fake.webhookMaxConnections).toBe(1);
    for (let n = 1; n <= 3; n += 1) w.fake.say(RANDOM, ALICE, `by webhook ${n}`);
    await waitFor('three lines', async () => (await relayed(w.env, w.reader, 'random')).length === 3);
    const refused = await fetch(`http://127.0.0.1:${port}/telegram`, { method: 'POST', headers: { 'x-telegram-bot-api-secret-token': 'wrong' }, body: '{"update_id":99}' });
    expect(refused.status).toBe(401);
    expect(stats(w.env)).toMatchObject({ webhook_refused: 1, webhook_updates: 3, polls: 0 });
    await w.env.supervisor!.stop();
    w.fake.say(RANDOM, ALICE, 'while the bot was stopped');
    await w.env.start();
    await waitFor('the held line', async () => (await relayed(w.env, w.reader, 'random')).length === 4);
    expect(await relayed(w.env, w.reader, 'random')).toEqual([1, 2, 3].map((n) => `<Alice Smith> by webhook ${n}`).concat('<Alice Smith> while the bot was stopped'));
    await waitFor('all answered', () => w.fake.pending === 0);
    expect(w.fake.bodies.filter((b) => b.method === 'setWebhook').map((b) => b.body.drop_pending_updates)).toEqual([true, false]);
    expect(w.fake.calls).not.toContain('getUpdates');
  });

  test('outbound edits and deletions: editMessageText and deleteMessage of the copy; an unchanged edit or a message gone already is done, not retried', async () => {
    fake = await FakeTelegram.start();
    fake.addChat({ id: RANDOM, type: 'group', title: 'Random' });
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-tg-'));
    const counters = { posted: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, rate_limited: 0, files_sent: 0, files_linked: 0 };
    const posted = new Map<string, string>();
    const log = pino({ level: 'silent' });
    const outbound = new TelegramOutbound({
      dataDir: dir, storage: FILE_STORAGE, queueMax: 100, api: () => botApi(fake!.token, fake!.url, 5_000), filesApi: () => botApi(fake!.token, fake!.url, 5_000),
      media: new MediaStore(join(dir, 'media')), token: fake.token,
      pacing: new SendPacing('off'), log, counters, durable: () => Promise.resolve(),
      posted: (item, id) => posted.set(item.key, id), nativeOf: () => undefined, topicOf: () => undefined, fatal: () => undefined,
    });
    outbound.start([String(RANDOM)]);
    try {
      outbound.push({ key: 'k1', channel: String(RANDOM), kind: 'post', text: '<Bob> first' });
      await waitFor('posted', () => posted.get('k1'));
      const id = posted.get('k1')!;
      outbound.push({ key: 'k2', channel: String(RANDOM), kind: 'edit', target: id, text: '<Bob> second' });
      outbound.push({ key: 'k3', channel: String(RANDOM), kind: 'edit', target: id, text: '<Bob> second' });
      outbound.push({ key: 'k4', channel: String(RANDOM), kind: 'delete', target: id });
      outbound.push({ key: 'k5', channel: String(RANDOM), kind: 'delete', target: id });
      await waitFor('all sent', () => outbound.size === 0);
      expect(fake.calls.filter((c) => c !== 'getMe')).toEqual(['sendMessage', 'editMessageText', 'editMessageText', 'deleteMessage', 'deleteMessage']);
      expect(fake.botPosts(RANDOM)).toEqual([]);
      expect(counters).toMatchObject({ posted: 1, edited: 1, deleted: 1, dropped: 0, retries: 0 });
    } finally {
      await outbound.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a refused token stops the relay only: the status says so, the token is in no log line, the bot goes on', async () => {
    const w = await setup(() => ({ ...bothChats(), token: '7000001:AAThisIsNotTheTokenTheFakeKnows_000' }));
    await w.env.start();
    await waitFor('the relay failed', () => report(w.env).status.connection?.state === 'failed');
    expect(report(w.env).status.connection?.detail).toMatch(/refused the bot token \(401 Unauthorized\)/);
    expect(w.env.log.lines.some((line) => line.level === 50 && /Telegram relay stopped/.test(String(line.msg)))).toBe(true);
    expect(JSON.stringify(w.env.log.lines)).not.toContain('AAThisIsNotTheTokenTheFakeKnows');
    expect((await post(w.env.svc, 'random', 'bob', 'still here')).message).toBe('still here');
  });

  test('a send whose answer is lost is sent again: Telegram has no idempotency key, so the line shows twice (at least once, never lost)', async () => {
    const w = await setup(bothChats);
    await w.env.start();
    await waitFor('the first poll', () => (stats(w.env).polls ?? 0) >= 1);
    w.fake.loseSendAnswers(1);
    await post(w.env.svc, 'random', 'bob', 'said once');
    await post(w.env.svc, 'random', 'bob', 'said after');
    await waitFor('posted', () => stats(w.env).posted === 2);
    expect(texts(w, RANDOM)).toEqual(['<Bob Member> said once', '<Bob Member> said once', '<Bob Member> said after']);
    expect(stats(w.env).retries).toBe(1);
  });
});

describe('relay-telegram units', () => {
  test('a line renders as typed: controls dropped, nothing escaped, an action and a quote, cut at 4,096', () => {
    expect(renderLine({ template: '<{name}> {text}', name: 'A\u0007*b*', text: 'x & <y>\nnext @all' })).toBe('<A*b*> x & <y>\nnext @all');
    expect(renderLine({ template: '[{name}] {text} ({name})', name: 'Bob', text: 'hi' })).toBe('[Bob] hi (Bob)');
    expect(renderLine({ template: '<{name}> {text}', name: 'Bob', text: 'waves', action: true })).toBe('* Bob waves');
    expect(renderLine({ template: '<{name}> {text}', name: 'Bob', text: 'yes', quote: { name: 'Carol', text: 'go\nnow?' } })).toBe('> Carol: go now?\n<Bob> yes');
    const long = renderLine({ template: '{name}: {text}', name: 'B', text: 'x'.repeat(5000) });
    expect(long).toHaveLength(4096);
    expect(long.endsWith('…')).toBe(true);
  });

  test('a right-to-left override in a name or a quote ends with its field (#31 item 14); the renders take linear time on 1 MiB of adversarial text (#31)', () => {
    expect(renderLine({ template: '<{name}> {text}', name: '\u202eeve', text: 'hello', quote: { name: '\u202eeve', text: '\u202eolleh' } }))
      .toBe('> \u202eeve\u202c: \u202eolleh\u202c\n<\u202eeve\u202c> hello');
    expectLinearOnAdversarialText((text) => renderLine({ template: '<{name}> {text}', name: text, text, quote: { name: text, text } }));
    expectLinearOnAdversarialText((text) => plainFromTelegram({ message_id: 1, date: 0, chat: { id: -1, type: 'group' }, document: { file_id: 'f', file_name: text }, caption: text }));
  }, 240_000);

  test('a Telegram message in plain text: media by kind with the caption, service messages none; the speaker by name or as the chat', () => {
    const base = { message_id: 1, date: 0, chat: { id: -1, type: 'supergroup', title: 'G' } };
    expect(plainFromTelegram({ ...base, text: 'hi\u0000' } as TelegramMessage)).toBe('hi');
    expect(plainFromTelegram({ ...base, sticker: { emoji: '🙂' } } as TelegramMessage)).toBe('[sticker 🙂]');
    // A file's caption is the line's text: the file itself goes with the line (files-in.ts).
    expect(plainFromTelegram({ ...base, document: { file_id: 'f', file_name: 'a.pdf' }, caption: 'the file' } as TelegramMessage)).toBe('the file');
    expect(plainFromTelegram({ ...base, photo: [{ file_id: 'p', width: 1, height: 1 }] } as TelegramMessage)).toBe('');
    expect(plainFromTelegram({ ...base, new_chat_title: 'x' } as unknown as TelegramMessage)).toBeUndefined();
    expect(speakerOf({ ...base, from: { id: 5, is_bot: false, first_name: 'Ann', last_name: 'Lee' } } as TelegramMessage)).toEqual({ id: '5', name: 'Ann Lee' });
    expect(speakerOf({ ...base, sender_chat: { id: -1, title: 'G' }, author_signature: 'Ann' } as TelegramMessage)).toEqual({ id: '-1', name: 'Ann (G)' });
  });

  test('options: a BotFather token; chats by id, or id/topic; rate off or per chat and in all', () => {
    const token = '123456789:AAbcdefghijklmnopqrstuvwxyz012345';
    expect(relayTelegramOptions.safeParse({ token, chats: { general: '-1001234567890', plans: '-1001234567890/42' } }).data).toMatchObject({
      api_url: 'https://api.telegram.org', format: '<{name}> {text}', rate: { per_second: 30, chat_per_minute: 20, chat_burst: 3 }, poll_timeout_s: 30,
    });
    expect(relayTelegramOptions.safeParse({ token, rate: 'off' }).success).toBe(true);
    expect(relayTelegramOptions.safeParse({ token: 'not-a-token' }).success).toBe(false);
    expect(relayTelegramOptions.safeParse({ token, chats: { general: '@mygroup' } }).success).toBe(false);
    expect(relayTelegramOptions.safeParse({ token, format: 'no text here' }).success).toBe(false);
    const webhook = { url: 'https://bridge.example.org/telegram', listen: { port: 8443 }, secret_token: 'a-secret-of-the-relay_0123456789' };
    const parsed = relayTelegramOptions.parse({ token, webhook });
    expect(parsed.webhook!.listen.host).toBe('127.0.0.1');
    expect(relayTelegramWarnings(parsed)).toEqual([]);
    expect(relayTelegramWarnings(relayTelegramOptions.parse({ token, webhook: { ...webhook, listen: { host: '0.0.0.0', port: 8443 } } }))[0]!.path).toEqual(['webhook', 'listen', 'host']);
    expect(relayTelegramOptions.safeParse({ token, webhook: { ...webhook, secret_token: 'short' } }).success).toBe(false);
    expect(relayTelegramOptions.safeParse({ token, webhook: { ...webhook, url: 'http://bridge.example.org/telegram' } }).success).toBe(false);
  });

  test('pacing: a chat gets its burst, then one line per 60/chat_per_minute s; the bot at most per_second in all; chats do not wait for each other', async () => {
    let now = 0;
    const waits: number[] = [];
    const pacing = new SendPacing({ per_second: 2, chat_per_minute: 20, chat_burst: 3 }, {
      now: () => now, sleep: async (ms) => { waits.push(ms); now += ms; },
    });
    const signal = new AbortController().signal;
    const times: Record<string, number[]> = { a: [], b: [] };
    for (let n = 0; n < 5; n += 1) {
      await pacing.take('a', signal);
      times.a!.push(now);
    }
    // Three at once (the chat's burst, though the bot's own bucket holds two: the third waits 500 ms), then every 3 s.
    expect(times.a).toEqual([0, 0, 500, 3000, 6000]);
    await pacing.take('b', signal);
    times.b!.push(now);
    expect(times.b).toEqual([6000]);
    expect(waits.every((ms) => ms > 0)).toBe(true);
    const off = new SendPacing('off', { now: () => 0, sleep: async () => { throw new Error('no pause when off'); } });
    for (let n = 0; n < 100; n += 1) await off.take('a', signal);
  });
});
