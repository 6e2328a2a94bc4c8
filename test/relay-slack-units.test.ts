import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebClient } from '@slack/web-api';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ChatInfo, ChatMessage } from '../src/index.js';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { Supervisor } from '../src/supervisor/supervisor.js';
import { ChannelMap } from '../plugins/relay-slack/channels.js';
import { classify } from '../plugins/relay-slack/errors.js';
import { escapeForSlack } from '../plugins/relay-slack/escape.js';
import { admit } from '../plugins/relay-slack/intake.js';
import { MsgNumMarks } from '../src/store/msg-num-marks.js';
import { slackToPlain } from '../plugins/relay-slack/markup.js';
import { relaySlackOptions } from '../plugins/relay-slack/options.js';
import { chatName, renderForChat, renderForSlack } from '../plugins/relay-slack/render.js';
import { SeenEvents } from '../plugins/relay-slack/seen.js';
import { RELAY_PLUGIN } from './fakes/slack/harness.js';
import { FakeSlack, mentionsIn, rendered, TOKENS } from './fakes/slack/index.js';

/** The relay's pure parts: escaping, markup, options, error classes (on the SDK's real errors), rendering, intake, dedupe. */

const ZWJ = '\u200D';
const base = { token: 'xoxb-1', app_token: 'xapp-1', channels: { general: 'C0123456789' } };
const chat: ChatInfo = { id: '17', subject: 'general', groupId: '1', groupName: 'demo', chatsubId: '5' };

function message(fields: Partial<ChatMessage>): ChatMessage {
  return {
    object: 'chat_message', id: '1', created: '2024-01-01T00:00:00Z', version: 1, user_id: '9', group_id: '1', chat_id: '17',
    type: 'chat_msg_type_normal', message: 'hi', msg_num: 1, display_name: 'Bob Member', user_name: 'bob', profile_photo_url: '',
    profile_privacy: 'profile_members', email: '', ...fields,
  };
}

describe('escapeForSlack', () => {
  test.each([
    ['a & b < c > d', 'a &amp; b &lt; c &gt; d'],
    ['<!channel>', '&lt;!channel&gt;'],
    ['&lt;!here&gt;', '&amp;lt;!here&amp;gt;'],
    ['@channel @here @everyone @group', `@${ZWJ}channel @${ZWJ}here @${ZWJ}everyone @${ZWJ}group`],
    ['@Here! and (@channel)', `@${ZWJ}Here! and (@${ZWJ}channel)`],
    ['＠channel', `＠${ZWJ}channel`],
    ['@channels @hereby bob@here.example', '@channels @hereby bob@here.example'],
  ])('%s', (input, output) => {
    expect(escapeForSlack(input)).toBe(output);
    expect(mentionsIn(escapeForSlack(input))).toEqual([]);
    expect(rendered(escapeForSlack(input)).replaceAll(ZWJ, '')).toBe(input);
  });
});

describe('slackToPlain', () => {
  const names = {
    user: async (id: string) => ({ U1: 'alice', U2: undefined } as Record<string, string | undefined>)[id],
    channel: async (id: string) => ({ C1: 'general' } as Record<string, string>)[id],
  };
  test.each([
    ['<@U1> hi', '@alice hi'],
    ['<@U2|bobby>', '@bobby'],
    ['<@U3>', '@U3'],
    ['<#C1|general> and <#C1> and <#C9|>', '#general and #general and #C9'],
    ['<!here> <!channel> <!everyone> <!here|here>', '@here @channel @everyone @here'],
    ['<!subteam^S1|@devs> <!subteam^S2>', '@devs @S2'],
    ['<!date^1392734382^{date_pretty}|Feb 18, 2014>', 'Feb 18, 2014'],
    ['<https://a.example/x?y=1&amp;z=2|docs> <https://b.example> <https://c.example|c.example>', 'docs (https://a.example/x?y=1&z=2) https://b.example https://c.example'],
    ['<mailto:a@b.example|a@b.example> <mailto:a@b.example|Alice>', 'a@b.example Alice (a@b.example)'],
    ['1 &lt; 2 &amp;&amp; 3 &gt; 2, &amp;lt; stays', '1 < 2 && 3 > 2, &lt; stays'],
    ['no markup at all', 'no markup at all'],
  ])('%s', async (input, output) => {
    expect(await slackToPlain(input, names)).toBe(output);
  });
});

describe('options', () => {
  test('the issue\'s example parses, with the defaults users expect', () => {
    const parsed = relaySlackOptions.parse({ ...base, api_url: 'https://slack.com/api/' });
    expect(parsed).toMatchObject({
      api_url: 'https://slack.com/api/', unfurl: false, queue_max: 10_000,
      display: { username: '{name}', avatars: true, name_in_text: false, incoming: '<{name}> {text}' },
    });
    expect(relaySlackOptions.parse(base).api_url).toBe('https://slack.com/api/');
  });

  test.each([
    [{ token: 'xoxp-user' }, 'token'],
    [{ app_token: 'xoxb-1' }, 'app_token'],
    [{ channels: {} }, 'channels'],
    [{ channels: { general: 'Not A Channel!' } }, 'channels'],
    [{ display: { incoming: '<{name}>' } }, 'display'],
    [{ display: { default_icon: 'smile' } }, 'display'],
    [{ chanels: {} }, ''],
  ])('%j is refused', (change, path) => {
    const result = relaySlackOptions.safeParse({ ...base, ...change });
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]!.path.join('.')).toContain(path);
  });

  test('the documented example is a valid bots.yaml; a wrong token is reported at its line', async () => {
    const docs = readFileSync(new URL('../docs/plugins/relay-slack.md', import.meta.url), 'utf8');
    const example = /```yaml\n(# bots\.yaml[\s\S]*?)```/.exec(docs)![1]!.replace(/- use: \S+relay-slack\S+/, `- use: ${RELAY_PLUGIN}`);
    const dir = mkdtempSync(join(tmpdir(), 'relay-docs-'));
    try {
      const file = join(dir, 'bots.yaml');
      writeFileSync(file, example);
      const env = { SLACK_BOT_TOKEN: 'xoxb-1-2', SLACK_APP_TOKEN: 'xapp-1-2', BRIDGE_PASSWORD: 'x' };
      const [plugins] = await Supervisor.check(await loadBotsConfig(file, env));
      expect(plugins!.map((p) => p.name)).toEqual(['relay-slack', 'logger']);
      expect(plugins![0]!.options).toMatchObject({ channels: { general: 'C0123456789', standup: '#standup' }, unfurl: false });
      const wrong = await Supervisor.check(await loadBotsConfig(file, { ...env, SLACK_BOT_TOKEN: 'xoxp-user-token' })).catch((error: Error) => error.message);
      expect(wrong).toMatch(/bots\.yaml:\d+:\d+: a Slack bot token \(xoxb-\.\.\.\) \(at bots\.0\.plugins\.0\.with\.token\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('channels by id or name', () => {
    const map = new ChannelMap(relaySlackOptions.parse({ ...base, channels: { general: 'C0123456789', '42': '#Random', news: 'news', caps: '#GENERAL' } }).channels);
    expect(map.slackChannelFor({ ...chat, id: '9', subject: 'caps' })).toBe('#general');
    expect(map.slackChannelFor(chat)).toBe('C0123456789');
    expect(map.slackChannelFor({ ...chat, id: '42', subject: 'other' })).toBe('#random');
    expect(map.chatsFor('C0123456789')).toEqual(['general']);
    expect(map.needsName('C0123456789')).toBe(false);
    expect(map.needsName('C0OTHER0001')).toBe(true);
    expect(map.chatsFor('C0OTHER0001', 'random')).toEqual(['42']);
    expect(new ChannelMap({ general: 'C0123456789' }).mightMap('C0OTHER0001')).toBe(false);
  });
});

describe('classify (errors the SDK really throws, from the fake Slack)', () => {
  let slack: FakeSlack;
  let web: WebClient;
  beforeAll(async () => {
    slack = await FakeSlack.start();
    web = new WebClient(TOKENS.bot, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true, logger: quiet() });
  });
  afterAll(() => slack.close());
  const failure = (call: Promise<unknown>) => call.then(() => undefined, classify);

  test('429 with Retry-After is a rate limit of that many seconds', async () => {
    slack.rateLimit('users.info', 1, 2);
    expect(await failure(web.users.info({ user: 'U0ALICE001' }))).toEqual({ kind: 'rate_limited', code: 'ratelimited', retryAfterMs: 2000 });
    slack.api.clearFaults();
  });

  test('Slack errors: token, scope, per message, transient, unknown', async () => {
    slack.fault('chat.postMessage', { times: 1, error: 'missing_scope' });
    expect(await failure(web.chat.postMessage({ channel: 'C0GENERAL1', text: 'x' }))).toMatchObject({ kind: 'fatal', code: 'missing_scope' });
    expect(await failure(web.chat.postMessage({ channel: 'C0NOPE0001', text: 'x' }))).toEqual({ kind: 'permanent', code: 'channel_not_found' });
    slack.fault('chat.postMessage', { times: 1, error: 'internal_error' });
    expect(await failure(web.chat.postMessage({ channel: 'C0GENERAL1', text: 'x' }))).toEqual({ kind: 'transient', code: 'internal_error' });
    slack.fault('chat.postMessage', { times: 1, error: 'something_new' });
    expect(await failure(web.chat.postMessage({ channel: 'C0GENERAL1', text: 'x' }))).toEqual({ kind: 'unknown', code: 'something_new' });
    slack.fault('auth.test', { times: 1, status: 502 });
    expect(await failure(web.auth.test())).toEqual({ kind: 'transient', code: 'http_502' });
    const stranger = new WebClient('xoxb-wrong', { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 }, logger: quiet() });
    expect(await failure(stranger.auth.test())).toEqual({ kind: 'fatal', code: 'invalid_auth' });
    const nowhere = new WebClient(TOKENS.bot, { slackApiUrl: 'http://127.0.0.1:1/api/', retryConfig: { retries: 0 }, logger: quiet() });
    expect(await failure(nowhere.auth.test())).toEqual({ kind: 'transient', code: 'request_error' });
  });
});

describe('rendering', () => {
  test('for Slack: name template, photo or default icon, name in text', () => {
    const display = relaySlackOptions.parse(base).display;
    expect(renderForSlack(message({ profile_photo_url: 'https://img.example/b.png' }), chat, display))
      .toEqual({ text: 'hi', username: 'Bob Member', icon_url: 'https://img.example/b.png' });
    expect(renderForSlack(message({}), chat, { ...display, default_icon: ':bust_in_silhouette:' }))
      .toEqual({ text: 'hi', username: 'Bob Member', icon_emoji: ':bust_in_silhouette:' });
    expect(renderForSlack(message({ profile_photo_url: 'https://img.example/b.png' }), chat, { ...display, avatars: false, default_icon: 'https://img.example/d.png' }).icon_url)
      .toBe('https://img.example/d.png');
    expect(renderForSlack(message({ display_name: '@channel\nBob', message: '<@U1>' }), chat, { ...display, username: '{name} via {chat}', name_in_text: true }))
      .toMatchObject({ text: `*@${ZWJ}channel\nBob*: &lt;@U1&gt;`, username: `@${ZWJ}channel Bob via general` });
    expect([...renderForSlack(message({ display_name: 'n'.repeat(200) }), chat, display).username!]).toHaveLength(80);
  });

  test('for the chat: the template once, names without brackets, long texts split', () => {
    expect(renderForChat('<{name}> {text}', 'alice', 'says {name} and {text}', '#general')).toEqual(['<alice> says {name} and {text}']);
    expect(renderForChat('[{channel}] {name}: {text}', '{text}', 'hi', '#general')).toEqual(['[#general] {text}: hi']);
    const parts = renderForChat('<{name}> {text}', 'alice', 'x'.repeat(25_000), '');
    expect(parts).toHaveLength(3);
    expect(parts.every((part) => part.length <= 10_000 && part.startsWith('<alice> '))).toBe(true);
    expect(parts.join('').replaceAll('<alice> ', '')).toBe('x'.repeat(25_000));
    expect(chatName('Mallory> <!channel\nx')).toBe('Mallory !channel x');
    expect(chatName('<>')).toBe('unknown');
  });
});

describe('intake', () => {
  const channels = new ChannelMap({ general: 'C0GENERAL1' });
  const self = { userId: 'U0SELF0001', botId: 'B0SELF0001' };
  const envelope = (event: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ({ type: 'events_api', body: { type: 'event_callback', event_id: 'Ev1', api_app_id: 'A1', event: { type: 'message', channel: 'C0GENERAL1', user: 'U1', text: 'hi', ts: '1.1', ...event }, ...extra } });

  test('a new message by a person is taken, with its dedupe keys', () => {
    expect(admit(envelope({}), self, channels)).toEqual({ item: { channel: 'C0GENERAL1', user: 'U1', text: 'hi', ts: '1.1' }, keys: ['m:C0GENERAL1:1.1', 'e:Ev1'] });
  });

  test.each([
    [{ subtype: 'message_changed' }, 'subtype message_changed'],
    [{ subtype: 'channel_leave' }, 'subtype channel_leave'],
    [{ hidden: true }, 'subtype hidden'],
    [{ bot_id: 'B0SELF0001' }, 'own post'],
    [{ bot_id: 'B0OTHER001' }, 'a bot'],
    [{ user: 'U0SELF0001' }, 'own post'],
    [{ app_id: 'A1' }, 'own post'],
    [{ channel: 'C0OTHER0001' }, 'channel not mapped'],
    [{ type: 'reaction_added' }, 'event reaction_added'],
  ])('%j is ignored', (event, reason) => {
    expect(admit(envelope(event), self, channels)).toEqual({ ignored: reason });
  });

  test('other envelope types are ignored', () => {
    expect(admit({ type: 'slash_commands', body: {} }, self, channels)).toEqual({ ignored: 'envelope slash_commands' });
  });
});

describe('durable bookkeeping', () => {
  test('seen events: bounded, oldest out first, kept in the store', () => {
    const store = KeyValueStore.memory();
    const seen = new SeenEvents(store, 3);
    seen.add('a', 'b');
    seen.add('c', 'd');
    expect(seen.has('a')).toBe(false);
    expect(seen.has('b', 'x')).toBe(true);
    expect(new SeenEvents(store, 3).has('d')).toBe(true);
    expect(store.get('seen')).toEqual(['b', 'c', 'd']);
  });

  test('queued marks survive a new instance', () => {
    const dir = mkdtempSync(join(tmpdir(), 'relay-marks-'));
    try {
      const marks = MsgNumMarks.open(join(dir, 'deep', 'marks.json'));
      marks.mark('17', 5);
      marks.mark('17', 3);
      marks.markKey('a:b:9');
      const again = MsgNumMarks.open(join(dir, 'deep', 'marks.json'));
      expect([again.has('17', 5), again.has('17', 4), again.has('17', 6), again.has('18', 1), again.has('a:b', 9)]).toEqual([true, true, false, false, true]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function quiet() {
  const nothing = () => undefined;
  return { debug: nothing, info: nothing, warn: nothing, error: nothing, setLevel: nothing, getLevel: () => 'error' as never, setName: nothing };
}
