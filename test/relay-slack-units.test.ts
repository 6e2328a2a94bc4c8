import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebClient } from '@slack/web-api';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { Supervisor } from '../src/supervisor/supervisor.js';
import { ChannelIds } from '../plugins/relay-slack/channel-ids.js';
import { ChannelMap, channelKey } from '../plugins/relay-slack/channels.js';
import { classify } from '../plugins/relay-slack/errors.js';
import { escapeForSlack } from '../plugins/relay-slack/escape.js';
import { MsgNumMarks } from '../src/store/msg-num-marks.js';
import { slackToPlain } from '../plugins/relay-slack/markup.js';
import { relaySlackOptions } from '../plugins/relay-slack/options.js';
import relaySlack from '../plugins/relay-slack/index.js';
import { SeenEvents } from '../plugins/relay-slack/seen.js';
import { RELAY_PLUGIN } from './fakes/slack/harness.js';
import { FakeSlack, mentionsIn, rendered, TOKENS } from './fakes/slack/index.js';

/** The relay's pure parts: escaping, markup, options, channels, error classes (on the SDK's real errors), dedupe. Rendering and intake: relay-slack-rendering.test.ts. */

const ZWJ = '\u200D';
const base = { token: 'xoxb-1', app_token: 'xapp-1', channels: { general: 'C0123456789' } };

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
      api_url: 'https://slack.com/api/', unfurl: false, queue_max: 10_000, max_file_size: 1_000_000_000,
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
    [{ max_file_size: 0 }, 'max_file_size'],
    [{ max_file_size: 2_000_000_000 }, 'max_file_size'],
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

describe('durable bookkeeping', () => {
  test('seen events: bounded, oldest out first, kept in a journal of their own; the list an earlier version kept in the store is read once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'relay-seen-'));
    try {
      const store = KeyValueStore.memory();
      store.set('seen', ['x', 'y']);
      const seen = SeenEvents.open(join(dir, 'seen-events.json'), store, undefined, 3);
      expect(store.get('seen')).toBeUndefined();
      expect(seen.has('x')).toBe(true);
      seen.add('a', 'b');
      seen.add('c', 'd');
      expect(seen.has('a')).toBe(false);
      expect(seen.has('b', 'x')).toBe(true);
      const again = SeenEvents.open(join(dir, 'seen-events.json'), store, undefined, 3);
      expect([again.has('b'), again.has('c'), again.has('d'), again.has('x'), again.size]).toEqual([true, true, true, false, 3]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
