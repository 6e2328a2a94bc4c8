import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebClient } from '@slack/web-api';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ChatInfo, ChatMessage } from '../src/index.js';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { Supervisor } from '../src/supervisor/supervisor.js';
import { ChannelIds } from '../plugins/relay-slack/channel-ids.js';
import { ChannelMap, channelKey } from '../plugins/relay-slack/channels.js';
import { classify } from '../plugins/relay-slack/errors.js';
import { escapeForSlack } from '../plugins/relay-slack/escape.js';
import { admit } from '../plugins/relay-slack/intake.js';
import { MsgNumMarks } from '../src/store/msg-num-marks.js';
import { slackToPlain } from '../plugins/relay-slack/markup.js';
import { relaySlackOptions } from '../plugins/relay-slack/options.js';
import relaySlack from '../plugins/relay-slack/index.js';
import type { OutgoingMessage } from '../src/index.js';
import { slackTime } from '../plugins/relay-slack/inbound.js';
import { planFor } from '../plugins/relay-slack/outgoing.js';
import { chatName, renderEdit, renderForChat, renderForSlack } from '../plugins/relay-slack/render.js';
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

  test('channels: may be empty (bots.yaml\'s gateways: name the channels); its pairs are the platform\'s gateways', () => {
    const { token, app_token } = base;
    expect(relaySlackOptions.parse({ token, app_token }).channels).toEqual({});
    const options = relaySlackOptions.parse({ ...base, channels: { general: 'C0123456789', news: '#Random' } });
    expect(relaySlack.platform!.name).toBe('slack');
    expect(relaySlack.platform!.channels(options)).toEqual([
      { chat: 'general', channel: 'C0123456789', direction: 'inout' }, { chat: 'news', channel: '#Random', direction: 'inout' },
    ]);
  });

  test('channels by id or name: one key for the spellings of a name, events matched by id or by name', () => {
    expect(['#Random', 'random', ' #random'].map(channelKey)).toEqual(['#random', '#random', '#random']);
    expect([channelKey('C0123456789'), channelKey('#GENERAL'), channelKey('General')]).toEqual(['C0123456789', '#general', '#general']);
    const map = new ChannelMap(['C0123456789', '#Random', 'news', 'random']);
    expect(map.size).toBe(3);
    expect(map.refsFor('C0123456789')).toEqual(['C0123456789']);
    expect(map.needsName('C0123456789')).toBe(false);
    expect(map.needsName('C0OTHER0001')).toBe(true);
    expect(map.refsFor('C0OTHER0001', 'Random')).toEqual(['#Random']);
    expect(map.refsFor('C0OTHER0001')).toEqual([]);
    expect(map.ids()).toEqual(['C0123456789']);
    expect(new ChannelMap(['C0123456789']).mightMap('C0OTHER0001')).toBe(false);
    expect(new ChannelMap([]).mightMap('C0OTHER0001')).toBe(false);
  });

  test('ids of channels given by name are learned and kept (chat.update and chat.delete take ids only)', () => {
    const store = KeyValueStore.memory();
    const ids = new ChannelIds(store);
    expect(ids.idOf('#random')).toBeUndefined();
    expect(ids.idOf('C0123456789')).toBe('C0123456789');
    ids.learn('Random', 'C0RANDOM01');
    expect(new ChannelIds(store).idOf('#RANDOM')).toBe('C0RANDOM01');
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

/** A gateway line as the core hands it (a chat member's message unless told otherwise). */
function line(fields: Partial<OutgoingMessage> = {}, said: Partial<ChatMessage> = {}): OutgoingMessage {
  return {
    key: 'k1', gateway: 'general', kind: 'message', text: 'hi', speaker: { platform: 'chat', id: '9', name: 'Bob Member' },
    origin: { endpoint: 'chat:17@bot', platform: 'chat', nativeId: '1' }, time: '2024-01-01T00:00:00Z',
    source: { chat, message: message(said) }, ...fields,
  };
}

const ircPerson = { speaker: { platform: 'irc', id: 'dan!d@host', name: 'dan' }, origin: { endpoint: 'irc:#general@bot/relay-irc', platform: 'irc', nativeId: 'i1' } };

describe('rendering', () => {
  const display = relaySlackOptions.parse(base).display;

  test('for Slack: name template, the member\'s photo or the default icon, name in text', () => {
    expect(renderForSlack(line({}, { profile_photo_url: 'https://img.example/b.png' }), display))
      .toEqual({ text: 'hi', username: 'Bob Member', icon_url: 'https://img.example/b.png' });
    expect(renderForSlack(line(), { ...display, default_icon: ':bust_in_silhouette:' }))
      .toEqual({ text: 'hi', username: 'Bob Member', icon_emoji: ':bust_in_silhouette:' });
    expect(renderForSlack(line({}, { profile_photo_url: 'https://img.example/b.png' }), { ...display, avatars: false, default_icon: 'https://img.example/d.png' }).icon_url)
      .toBe('https://img.example/d.png');
    expect(renderForSlack(line({ speaker: { platform: 'chat', id: '9', name: '@channel\nBob' }, text: '<@U1>' }), { ...display, username: '{name} ({user}) via {chat}', name_in_text: true }))
      .toMatchObject({ text: `*@${ZWJ}channel\nBob*: &lt;@U1&gt;`, username: `@${ZWJ}channel Bob (bob) via general` });
    expect([...renderForSlack(line({ speaker: { platform: 'chat', id: '9', name: 'n'.repeat(200) } }), display).username!]).toHaveLength(80);
  });

  test('for Slack: a person from elsewhere gets the default icon, never the photo of the chat message that carried the line', () => {
    const relayed = line({ ...ircPerson, text: 'from irc' }, { profile_photo_url: 'https://img.example/bot.png', user_name: 'bot' });
    expect(renderForSlack(relayed, { ...display, default_icon: ':speech_balloon:', username: '{name}/{user}' }))
      .toEqual({ text: 'from irc', username: 'dan/dan', icon_emoji: ':speech_balloon:' });
    expect(renderForSlack(relayed, display)).toEqual({ text: 'from irc', username: 'dan' });
  });

  test('for Slack: actions, files, quotes; nothing in any of them mentions anyone', () => {
    const post = (fields: Partial<OutgoingMessage>, options = display) => renderForSlack(line({ ...ircPerson, ...fields }), options).text;
    expect(post({ kind: 'action', text: 'waves at <!channel>' })).toBe('_dan waves at &lt;!channel&gt;_');
    expect(post({ text: 'see', files: [{ name: 'a<b>.png', url: 'https://f.example/a' }, {}] })).toBe('see\n[file: a&lt;b&gt;.png https://f.example/a]');
    // Quoted above when Slack has no thread for the answered message here; a thread reply needs none.
    expect(post({ text: 'yes', quote: { name: 'alice', text: `<!here> ${'x'.repeat(100)}\nsecond line` } }))
      .toBe(`> alice: &lt;!here&gt; ${'x'.repeat(72)}…\nyes`);
    expect(post({ text: 'yes', replyTo: '1.000001', quote: { name: 'alice', text: 'q' } })).toBe('yes');
    for (const text of [post({ kind: 'action', text: '@channel' }), post({ kind: 'action', text: '<!everyone>' }), post({ quote: { name: '@here', text: '@channel' } })]) {
      expect(mentionsIn(text)).toEqual([]);
    }
  });

  test('for the chat: the template once, names without brackets', () => {
    expect(renderForChat('<{name}> {text}', 'alice', 'says {name} and {text}', '#general')).toBe('<alice> says {name} and {text}');
    expect(renderForChat('[{channel}] {name}: {text}', '{text}', 'hi', '#general')).toBe('[#general] {text}: hi');
    expect(chatName('Mallory> <!channel\nx')).toBe('Mallory !channel x');
    expect(chatName('<>')).toBe('unknown');
    expect(slackTime('1700000000.000100')).toBe('2023-11-14T22:13:20.000Z');
    expect(slackTime('nonsense')).toBeUndefined();
  });
});

describe('planFor: a gateway line as an item of the queue to Slack', () => {
  const display = relaySlackOptions.parse(base).display;

  test('a message: a post (in the thread of replyTo), keyed by channel and line', () => {
    expect(planFor('#random', line({ replyTo: '1.000001' }), display, 5)).toEqual({
      item: { key: '#random k1', line: 'k1', channel: '#random', chat: 'general', queuedAt: 5, op: 'post', text: 'hi', username: 'Bob Member', thread_ts: '1.000001' },
    });
    const twice = ['C0GENERAL1', '#random'].map((channel) => planFor(channel, line(), display, 5));
    expect(twice.map((plan) => 'item' in plan && plan.item.key)).toEqual(['C0GENERAL1 k1', '#random k1']);
  });

  test('an edit: chat.update of the relay\'s own post, else a follow-up line', () => {
    expect(planFor('C0GENERAL1', line({ kind: 'edit', text: 'fixed <b>', target: '1.000002' }), { ...display, name_in_text: true }, 5))
      .toMatchObject({ item: { op: 'update', ts: '1.000002', text: '*Bob Member*: fixed &lt;b&gt;' } });
    expect(renderEdit(line({ kind: 'edit', text: 'fixed' }), display)).toBe('fixed');
    expect(planFor('C0GENERAL1', line({ kind: 'edit', text: 'fixed' }), display, 5))
      .toMatchObject({ item: { op: 'post', text: '(edit) fixed', username: 'Bob Member' } });
  });

  test('a deletion: chat.delete of the relay\'s own post, else dropped', () => {
    expect(planFor('C0GENERAL1', line({ kind: 'delete', text: '', target: '1.000002' }), display, 5))
      .toEqual({ item: { key: 'C0GENERAL1 k1', line: 'k1', channel: 'C0GENERAL1', chat: 'general', queuedAt: 5, op: 'delete', ts: '1.000002', text: '' } });
    expect(planFor('C0GENERAL1', line({ kind: 'delete', text: '' }), display, 5)).toEqual({ dropped: 'a deletion of a message the relay did not post in this channel' });
  });

  test('joins, leaves and topics: dropped (a Slack channel shows its own)', () => {
    for (const kind of ['join', 'leave', 'topic'] as const) expect(planFor('C0GENERAL1', line({ kind }), display, 5)).toEqual({ dropped: `a ${kind} (Slack shows its own)` });
  });
});

describe('intake', () => {
  const channels = new ChannelMap(['C0GENERAL1']);
  const self = { userId: 'U0SELF0001', botId: 'B0SELF0001' };
  const envelope = (event: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ({ type: 'events_api', body: { type: 'event_callback', event_id: 'Ev1', api_app_id: 'A1', event: { type: 'message', channel: 'C0GENERAL1', user: 'U1', text: 'hi', ts: '1.1', ...event }, ...extra } });
  const changed = (now: Record<string, unknown>, before: Record<string, unknown> = { type: 'message', user: 'U1', text: 'hi', ts: '1.1' }) =>
    envelope({ subtype: 'message_changed', hidden: true, user: undefined, text: undefined, ts: '2.2', message: { type: 'message', user: 'U1', text: 'hi there', ts: '1.1', edited: { user: 'U1', ts: '2.0' }, ...now }, previous_message: before });
  const deleted = (before: Record<string, unknown>) =>
    envelope({ subtype: 'message_deleted', hidden: true, user: undefined, text: undefined, ts: '3.3', deleted_ts: '1.1', previous_message: { type: 'message', text: 'hi', ts: '1.1', ...before } });

  test('a new message by a person is taken, with its dedupe keys', () => {
    expect(admit(envelope({}), self, channels)).toEqual({ item: { kind: 'message', channel: 'C0GENERAL1', user: 'U1', text: 'hi', ts: '1.1' }, keys: ['m:C0GENERAL1:1.1', 'e:Ev1'] });
  });

  test('a thread reply names its parent; a thread\'s first message and a me_message are what they are', () => {
    expect(admit(envelope({ thread_ts: '1.0' }), self, channels)).toMatchObject({ item: { kind: 'message', ts: '1.1', thread_ts: '1.0' } });
    expect(admit(envelope({ thread_ts: '1.1' }), self, channels)).toMatchObject({ item: { kind: 'message' } });
    expect((admit(envelope({ thread_ts: '1.1' }), self, channels) as { item: object }).item).not.toHaveProperty('thread_ts');
    expect(admit(envelope({ subtype: 'thread_broadcast', thread_ts: '1.0' }), self, channels)).toMatchObject({ item: { kind: 'message', thread_ts: '1.0' } });
    expect(admit(envelope({ subtype: 'me_message', text: 'waves' }), self, channels)).toMatchObject({ item: { kind: 'action', text: 'waves' } });
    expect(admit(envelope({ subtype: 'file_share', text: '', files: [{ name: 'a.png', title: 'A', permalink: 'https://p', mimetype: 'image/png' }] }), self, channels))
      .toMatchObject({ item: { kind: 'message', files: [{ name: 'a.png', title: 'A', permalink: 'https://p' }] } });
  });

  test('an edit by a person: the edited message\'s ts, the new text, the edit\'s ts as its revision', () => {
    expect(admit(changed({}), self, channels)).toEqual({
      item: { kind: 'edit', channel: 'C0GENERAL1', user: 'U1', text: 'hi there', ts: '1.1', revision: '2.0' },
      keys: ['m:C0GENERAL1:1.1~edit~2.0', 'e:Ev1'],
    });
    // Without `edited`, the event's own ts tells the edits apart.
    expect(admit(changed({ edited: undefined }), self, channels)).toMatchObject({ item: { revision: '2.2' }, keys: ['m:C0GENERAL1:1.1~edit~2.2', 'e:Ev1'] });
  });

  test('a deletion by a person: the deleted message\'s ts, who had said it', () => {
    expect(admit(deleted({ user: 'U1' }), self, channels)).toEqual({
      item: { kind: 'delete', channel: 'C0GENERAL1', user: 'U1', text: '', ts: '1.1' }, keys: ['m:C0GENERAL1:1.1~delete', 'e:Ev1'],
    });
  });

  test.each([
    [changed({ text: 'hi' }), 'message_changed without a new text'],
    [changed({ bot_id: 'B0SELF0001', subtype: 'bot_message' }), 'a change of a bot_message'],
    [changed({ bot_id: 'B0SELF0001' }), 'own post'],
    [changed({ bot_id: 'B0OTHER001' }), 'a bot'],
    [changed({ user: 'U0SELF0001' }), 'own post'],
    [changed({ ts: undefined }), 'subtype message_changed without a message'],
    [deleted({ bot_id: 'B0SELF0001', subtype: 'bot_message' }), 'own post'],
    [deleted({ bot_id: 'B0OTHER001', subtype: 'bot_message' }), 'a bot'],
    [deleted({ user: 'U0SELF0001' }), 'own post'],
    [envelope({ subtype: 'message_deleted', hidden: true, deleted_ts: '1.1' }), 'subtype message_deleted without previous_message'],
  ])('edits and deletions not relayed: %#', (env, reason) => {
    expect(admit(env, self, channels)).toEqual({ ignored: reason });
  });

  test.each([
    [{ subtype: 'channel_leave' }, 'subtype channel_leave'],
    [{ subtype: 'channel_topic' }, 'subtype channel_topic'],
    [{ hidden: true }, 'subtype hidden'],
    [{ bot_id: 'B0SELF0001' }, 'own post'],
    [{ bot_id: 'B0OTHER001' }, 'a bot'],
    [{ user: 'U0SELF0001' }, 'own post'],
    [{ app_id: 'A1' }, 'own post'],
    [{ user: undefined }, 'no user'],
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
