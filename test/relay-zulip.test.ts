import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { relayZulipOptions } from '../plugins/relay-zulip/options.js';
import { escapeForZulip, plainFromZulip, renderLine } from '../plugins/relay-zulip/render.js';
import { FakeSlack } from './fakes/slack/fake-slack.js';
import { RELAY_PLUGIN as RELAY_SLACK } from './fakes/slack/harness.js';
import { TOKENS } from './fakes/slack/state.js';
import { FakeZulip, type FakeZulipMessage, type FakeZulipUser } from './helpers/fake-zulip.js';
import { chatOf, history, makeEnv, post, waitFor, type Env, type GatewaySpec } from './helpers/supervisor.js';

/**
 * relay-zulip in a supervisor against the local service and a local Zulip (test/helpers/fake-zulip.ts,
 * written from Zulip's REST API documentation) spoken to by the relay's own client over undici.
 */

let fake: FakeZulip | undefined;
let env: Env | undefined;
let slack: FakeSlack | undefined;
afterEach(async () => {
  await env?.close();
  await fake?.close();
  await slack?.close();
  env = fake = slack = undefined;
});

interface World {
  env: Env;
  fake: FakeZulip;
  reader: GroupsClient;
  alice: FakeZulipUser;
  general: number;
  random: number;
}

async function setup(extra: Record<string, unknown> = {}, gateways?: GatewaySpec[], alongside: Array<{ use: string; with?: Record<string, unknown> }> = []): Promise<World> {
  fake = await FakeZulip.start();
  fake.heartbeatMs = 500;
  const general = fake.addStream('general');
  const random = fake.addStream('random');
  const alice = fake.addUser('alice', { full_name: 'Alice Z' }).user;
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    reply_rate: { per_second: 200, burst: 200 },
    plugins: [
      { use: 'relay-zulip', with: { server_url: fake.url, email: fake.bot.email, api_key: fake.botKey, streams: gateways ? {} : { general: 'general/lobby', random: 'random/lobby' }, request_timeout_ms: 2_000, ...extra } },
      ...alongside,
    ],
  }], gateways);
  return { env, fake, reader: env.client('bob'), alice, general, random };
}

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-zulip']!;
const report = (e: Env) => e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-zulip')!;

/** The bot's posts in a chat (what the relay brought from Zulip), oldest first. */
async function relayed(e: Env, reader: GroupsClient, subject: string): Promise<string[]> {
  const chat = (await chatOf(reader, subject))!;
  const bot = String((await chatOf(e.client('bot'), subject))!.chat_sub!.user_id);
  return (await history(reader, chat.id)).filter((m: ChatMessage) => String(m.user_id) === bot).map((m) => m.message);
}

const botMessages = (w: World, stream: number, topic?: string): FakeZulipMessage[] => w.fake.inStream(stream, topic).filter((m) => m.sender_id === w.fake.bot.user_id);
/** Both the register of each stream and a poll of each held open: the relay reads. */
const reading = (w: World, streams = 2) => waitFor('the event queues polled', () => w.fake.polling >= streams && (stats(w.env).registers ?? 0) >= streams);

describe('relay-zulip: text', () => {
  test('markdown is escaped and every mention defused, by a linear scan; a /me message is an action; options are checked', () => {
    expect(escapeForZulip('@**all** @**everyone** @**stream** @**channel** @**topic** @_**Al** @*admins* #**general** ~~s~~ $$x$$ :smile: <time:1> `c` [l](u) > q\n- item\n1. first\u0007'))
      .toBe('@\u200b\\*\\*all\\*\\* @\u200b\\*\\*everyone\\*\\* @\u200b\\*\\*stream\\*\\* @\u200b\\*\\*channel\\*\\* @\u200b\\*\\*topic\\*\\* @\u200b\\_\\*\\*Al\\*\\* @\u200b\\*admins\\* '
        + '\\#\\*\\*general\\*\\* ~\u200b~s~\u200b~ $\u200b$x$\u200b$ :\u200bsmile: <time:\u200b1\\> \\`c\\` \\[l\\]\\(u\\) \\> q\n\\- item\n1\\. first');
    expect(renderLine({ template: '**{name}**: {text}', name: 'Bob *B*', text: 'hi' })).toBe('**Bob \\*B\\***: hi');
    expect(renderLine({ template: '{text}', name: 'Bob', text: '/poll lunch?' })).toBe('\u200b/poll lunch?');
    expect(renderLine({ template: '**{name}**: {text}', name: 'Bob', text: 'waves', action: true })).toBe('\\* Bob waves');
    expect(plainFromZulip('/me waves')).toEqual({ text: 'waves', action: true });
    // 64 KiB of markup and of @ goes through in one pass.
    expect(escapeForZulip('*'.repeat(65_536) + '@*'.repeat(16_384) + '~'.repeat(16_384))).toHaveLength(65_536 * 2 + 16_384 * 4 + 16_384 * 2 - 1);
    const base = { server_url: 'https://chat.example.org/', email: 'bot@chat.example.org', api_key: 'k'.repeat(32) };
    expect(relayZulipOptions.safeParse({ ...base, streams: { general: 'general/lobby', random: 'random' } }).data?.server_url).toBe('https://chat.example.org');
    expect(relayZulipOptions.safeParse({ ...base, streams: { general: '/lobby' } }).success).toBe(false);
    expect(relayZulipOptions.safeParse({ ...base, email: 'bot' }).success).toBe(false);
  });
});

describe('relay-zulip', () => {
  test('both ways: chat lines as **name**: text, escaped, mentioning nobody, each send naming its queue and a local_id; Zulip messages into the chat as <name> text; its own not relayed back; a command said on Zulip answered there', async () => {
    const w = await setup({}, undefined, [{ use: 'responder', with: { rules: [{ command: 'secret', reply: 'the secret is 42' }] } }]);
    await w.env.start();
    await reading(w);
    await post(w.env.svc, 'general', 'bob', 'hello @**all**, *bold* and @_**Alice Z**');
    await post(w.env.svc, 'random', 'carol', 'over in random');
    await waitFor('two messages on Zulip', () => botMessages(w, w.general).length === 1 && botMessages(w, w.random).length === 1);
    const [line] = botMessages(w, w.general);
    expect(line!.content).toBe('**Bob Member**: hello @\u200b\\*\\*all\\*\\*, \\*bold\\* and @\u200b\\_\\*\\*Alice Z\\*\\*');
    expect(line!.subject).toBe('lobby');
    expect(w.fake.sends[0]).toMatchObject({ type: 'stream', to: String(w.general), topic: 'lobby' });
    expect(w.fake.sends[0]!.queue_id).toBeTruthy();
    expect(w.fake.sends[0]!.local_id).toMatch(/^[\w-]{22}$/);

    w.fake.say(w.general, w.alice, 'hi from Zulip');
    w.fake.say(w.random, w.alice, '/me waves');
    w.fake.say(w.general, w.alice, 'in another topic', 'elsewhere');
    await waitFor('the Zulip lines in the chats', async () => (await relayed(w.env, w.reader, 'general')).length === 1 && (await relayed(w.env, w.reader, 'random')).length === 1);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['<Alice Z> hi from Zulip']);
    expect(await relayed(w.env, w.reader, 'random')).toEqual(['* Alice Z waves']);
    await waitFor('the queue to Zulip empty', () => stats(w.env).queued === 0 && stats(w.env).received === 2);
    expect(botMessages(w, w.general)).toHaveLength(1);
    expect(stats(w.env)).toMatchObject({ posted: 2, received: 2, dropped: 0 });
    expect(report(w.env).status.backlogs?.to_zulip).toBeDefined();

    w.fake.say(w.general, w.alice, '!secret');
    await waitFor('the answer on Zulip', () => botMessages(w, w.general).length === 2);
    expect(botMessages(w, w.general)[1]!.content).toBe('**Demo Bot**: the secret is 42');
  });

  test('429s are waited out as retry-after says; a send whose answer was lost is tied to its message by the queue\'s echo, not sent again: every line once, in order', async () => {
    const w = await setup();
    await w.env.start();
    await reading(w);
    w.fake.rateLimit(2);
    for (let n = 1; n <= 3; n += 1) await post(w.env.svc, 'general', 'bob', `line ${n}`);
    await waitFor('three messages', () => botMessages(w, w.general).length === 3 && stats(w.env).queued === 0, 20_000);
    w.fake.loseAnswer(1);
    await post(w.env.svc, 'general', 'bob', 'line 4');
    await waitFor('four messages', () => stats(w.env).posted === 4, 20_000);
    expect(botMessages(w, w.general).map((m) => m.content)).toEqual([1, 2, 3, 4].map((n) => `**Bob Member**: line ${n}`));
    // Two refused, four made; the lost one was not sent again.
    expect(w.fake.sends).toHaveLength(6);
    expect(stats(w.env)).toMatchObject({ rate_limited: 2, posted: 4, found_after_retry: 1, dropped: 0 });
  });

  test('stopped mid-send (the message made, its answer never had): at the next start the relay finds it in the stream\'s history and posts nothing twice', async () => {
    const w = await setup();
    await w.env.start();
    await reading(w);
    w.fake.stallAnswer(1);
    await post(w.env.svc, 'general', 'bob', 'in flight');
    await waitFor('the message made', () => botMessages(w, w.general).length === 1);
    await w.env.supervisor!.stop();
    await post(w.env.svc, 'general', 'bob', 'after the restart');
    await w.env.start();
    await waitFor('the second message', () => botMessages(w, w.general).length === 2 && stats(w.env).queued === 0, 20_000);
    expect(botMessages(w, w.general).map((m) => m.content)).toEqual(['**Bob Member**: in flight', '**Bob Member**: after the restart']);
    expect(stats(w.env).found_after_retry).toBe(1);
    expect(w.fake.sends).toHaveLength(2);
  });

  test('a clean stop deletes the relay\'s event queues (DELETE /events): Zulip keeps and feeds nothing for a reader that is gone', async () => {
    const w = await setup();
    await w.env.start();
    await reading(w);
    expect(w.fake.queueCount).toBe(2);
    await w.env.supervisor!.stop();
    // Each stream's queue, deleted once; none left to be fed what the streams say next.
    expect(w.fake.calls.filter((call) => call === 'DELETE /events')).toHaveLength(2);
    expect(w.fake.queueCount).toBe(0);
    expect(w.fake.deletedQueues).toBe(2);
  });

  test('a dropped poll, an expired event queue and a restart of the bot: what was said meanwhile is read back from the history, once each, in order', async () => {
    const w = await setup();
    await w.env.start();
    await reading(w);
    w.fake.say(w.general, w.alice, 'before the drop');
    await waitFor('the first line', async () => (await relayed(w.env, w.reader, 'general')).length === 1);
    w.fake.dropPolls();
    w.fake.say(w.general, w.alice, 'during the drop');
    await waitFor('the second line', async () => (await relayed(w.env, w.reader, 'general')).length === 2);
    w.fake.expireQueues();
    w.fake.say(w.general, w.alice, 'while the queue was lost');
    await waitFor('a queue registered again', () => (stats(w.env).queues_lost ?? 0) >= 1);
    await reading(w);
    await w.env.supervisor!.stop();
    for (let n = 1; n <= 30; n += 1) w.fake.say(w.general, w.alice, `said while away ${n}`);
    await w.env.start();
    await waitFor('all caught up', async () => (await relayed(w.env, w.reader, 'general')).length === 33, 30_000);
    expect(await relayed(w.env, w.reader, 'general')).toEqual([
      'before the drop', 'during the drop', 'while the queue was lost', ...Array.from({ length: 30 }, (_, k) => `said while away ${k + 1}`),
    ].map((t) => `<Alice Z> ${t}`));
    expect(stats(w.env).caught_up).toBe(30);
  });

  test('a whole stream beside a topic in one gateway: each topic\'s messages reach the other side, a line that answers nothing goes to the default topic; edits and deletions follow the copies both ways', async () => {
    const w = await setup({}, [{ name: 'lobby', endpoints: [{ chat: 'general' }, { zulip: 'general' }, { zulip: 'random/copies' }] }]);
    await w.env.start();
    await reading(w);
    // A topic of the whole stream: its first message is the thread's start, the next answers it.
    const parent = w.fake.say(w.general, w.alice, 'the plan', 'planning');
    await waitFor('the copy in random', () => botMessages(w, w.random).length === 1);
    const reply = w.fake.say(w.general, w.alice, 'a detail', 'planning');
    await waitFor('the reply\'s copy', () => botMessages(w, w.random).length === 2);
    // A line from the topic side answering the copy of the plan goes back into the "planning" topic.
    w.fake.say(w.random, w.alice, 'noted', 'copies');
    await waitFor('its copy in general', () => botMessages(w, w.general).length === 1);
    expect(botMessages(w, w.general)[0]).toMatchObject({ subject: 'chat', content: '**Alice Z**: noted' });

    w.fake.edit(parent.id, 'the new plan');
    await waitFor('the copy edited', () => botMessages(w, w.random)[0]!.content === '**Alice Z**: the new plan');
    w.fake.remove(reply.id);
    await waitFor('the reply\'s copy deleted', () => botMessages(w, w.random).length === 1 && stats(w.env).deleted === 1);
    // And the other way: a Zulip deletion of the topic side's line takes its copy out of the whole stream.
    const said = w.fake.inStream(w.random, 'copies').find((m) => m.content === 'noted')!;
    w.fake.remove(said.id);
    await waitFor('its copy deleted', () => botMessages(w, w.general).length === 0 && stats(w.env).deleted === 2);
    expect(stats(w.env)).toMatchObject({ edited: 1, deleted: 2, dropped: 0 });
  });

  test('a whole stream beside Slack: a topic\'s messages are a thread of its first message\'s copy, a Slack reply in that thread goes into the topic, the default topic is the main line', { timeout: 20_000 }, async () => {
    slack = await FakeSlack.start();
    const GENERAL = 'C0GENERAL1';
    const w = await setup({}, [{ name: 'lobby', endpoints: [{ chat: 'general' }, { zulip: 'general' }, { slack: GENERAL }] }],
      [{ use: RELAY_SLACK, with: { token: TOKENS.bot, app_token: TOKENS.app, api_url: slack.apiUrl, channels: {} } }]);
    await w.env.start();
    await reading(w, 1);
    await waitFor('the Slack socket', () => slack!.socket.openConnections().length > 0);
    const inSlack = () => slack!.posts.filter((p) => p.channel === GENERAL);

    // Two messages in the topic "plans": the second lands in the thread of the first one's copy.
    w.fake.say(w.general, w.alice, 'first plan', 'plans');
    await waitFor('the first plan in Slack', () => inSlack().length === 1);
    w.fake.say(w.general, w.alice, 'second plan', 'plans');
    await waitFor('the second plan in Slack', () => inSlack().length === 2);
    const [first, second] = inSlack();
    expect(first).toMatchObject({ text: 'first plan', username: 'Alice Z' });
    expect(first!.thread_ts).toBeUndefined();
    expect(second).toMatchObject({ text: 'second plan', username: 'Alice Z', thread_ts: first!.ts });
    expect(slack.api.thread(GENERAL, first!.ts).map((m) => m.text)).toEqual(['second plan']);

    // A Slack reply in that thread goes back into the topic "plans".
    slack.threadReply(GENERAL, 'U0BOB00001', 'agreed', first!.ts);
    await waitFor('the reply on Zulip', () => botMessages(w, w.general).length === 1);
    expect(botMessages(w, w.general)[0]).toMatchObject({ subject: 'plans', content: '**Bob Builder**: agreed' });

    // A message in the default topic ("chat") is a top-level post, not a reply to anything.
    w.fake.say(w.general, w.alice, 'on the main line', 'chat');
    await waitFor('the main-line message in Slack', () => inSlack().length === 3);
    expect(inSlack()[2]).toMatchObject({ text: 'on the main line', username: 'Alice Z' });
    expect(inSlack()[2]!.thread_ts).toBeUndefined();
    // Each once: nothing went back where it was said.
    expect(inSlack().map((p) => p.text)).toEqual(['first plan', 'second plan', 'on the main line']);
    expect(botMessages(w, w.general).map((m) => m.content)).toEqual(['**Bob Builder**: agreed']);
  });

  test('a refused key stops the relay only: the status says so, the bot goes on', async () => {
    const w = await setup({ api_key: 'not-the-right-key-at-all' });
    await w.env.start();
    await waitFor('the relay failed', () => report(w.env).status.connection?.state === 'failed', 20_000);
    expect(report(w.env).status.connection?.detail).toMatch(/refused the bot's email and API key/);
    expect(w.env.log.lines.some((line) => line.level === 50 && /Zulip relay stopped/.test(String(line.msg)))).toBe(true);
    expect(w.env.log.lines.some((line) => JSON.stringify(line).includes('not-the-right-key'))).toBe(false);
    const answer = await post(w.env.svc, 'general', 'bob', 'still here');
    expect(answer.message).toBe('still here');
  });
});
