import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { DurableQueue } from '../src/store/durable-queue.js';
import { kill, post, waitFor } from './helpers/supervisor.js';
import { relaySetup, type RelaySetup } from './fakes/slack/harness.js';
import { rendered } from './fakes/slack/index.js';

/** Chat → Slack: harmless text, display options, rate limits waited out in order, a queue that survives a restart. */

let setup: RelaySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

const ZWJ = '\u200D';

describe('relay-slack: chat to Slack', () => {
  test('every mention or markup attempt from the chat arrives in Slack as the same harmless text', async () => {
    setup = await relaySetup({ with: { display: { username: '{name} (chat {chat})', default_icon: ':speech_balloon:' } } });
    const { env, slack } = setup;
    await setup.start();
    const attempts = [
      '<!channel> everyone look', '<!here>', '<!everyone|everyone>', '<@U0ALICE001> hi', '<#C0GENERAL1>', '<!subteam^S0DEVS|@devs>',
      '@channel lunch?', 'hey @here', '@everyone', '@Channel and @HERE', '＠channel', 'mail me at a@here.example',
      '&lt;!channel&gt;', '&amp;lt;!here&amp;gt;', '<https://evil.example|click me>', 'a & b < c > d', '<<!channel>>', '@\u200Dchannel',
    ];
    for (const text of attempts) await post(env.svc, 'general', 'carol', text);
    await waitFor('every attempt in Slack', () => slack.posts.length >= attempts.length);
    expect(slack.posts.map((p) => p.mentions)).toEqual(attempts.map(() => []));
    for (const [index, posted] of slack.posts.entries()) {
      expect(posted.text).not.toMatch(/[<>]/);
      // What Slack shows is the text as written (a zero-width joiner after a broadcast keyword's @ aside).
      expect(rendered(posted.text).replaceAll(ZWJ, '')).toBe(attempts[index]!.replaceAll(ZWJ, ''));
      expect(posted.args).toMatchObject({ parse: 'none', link_names: 'false', unfurl_links: 'false', unfurl_media: 'false' });
      expect(posted).toMatchObject({ username: 'Carol Member (chat general)', icon_emoji: ':speech_balloon:' });
    }
    // The address is left alone: only whole keywords are broken.
    expect(slack.posts[11]!.text).toBe('mail me at a@here.example');
  });

  test('name_in_text and unfurl: true are passed on', async () => {
    setup = await relaySetup({ with: { unfurl: true, display: { name_in_text: true, username: '', avatars: false } } });
    await setup.start();
    await post(setup.env.svc, 'general', 'bob', 'see https://example.com <@U1>');
    await waitFor('the post', () => setup!.slack.posts.length === 1);
    const [posted] = setup.slack.posts;
    expect(posted!.text).toBe('*Bob Member*: see https://example.com &lt;@U1&gt;');
    expect(posted!.username).toBeUndefined();
    expect(posted!.icon_url).toBeUndefined();
    expect(posted!.args).toMatchObject({ unfurl_links: 'true', unfurl_media: 'true' });
  });

  test('rate limits are waited out (Retry-After) and every message goes out once, in order', async () => {
    setup = await relaySetup();
    const { env, slack } = setup;
    await setup.start();
    slack.rateLimit('chat.postMessage', 2, 1);
    const texts = Array.from({ length: 8 }, (_, i) => `message ${i + 1}`);
    for (const text of texts) await post(env.svc, 'general', 'bob', text);
    await waitFor('all the messages in Slack', () => slack.posts.length >= texts.length, 30_000);
    await setup.drained();
    expect(slack.posts.map((p) => p.text)).toEqual(texts);
    // No call came before Slack's Retry-After had passed, and the limited message was the one tried again.
    expect(slack.api.early).toEqual({});
    const calls = slack.api.calls.filter((c) => c.method === 'chat.postMessage');
    expect(calls.slice(0, 3).map((c) => [c.status, c.args.text])).toEqual([[429, 'message 1'], [429, 'message 1'], [200, 'message 1']]);
    expect(setup.stats()).toMatchObject({ relayed_out: 8, rate_limited: 2, retries: 2, queued: 0, failed: 0 });
  });

  test('Slack or network failures are retried; a refused message is logged and counted and the rest go on', async () => {
    setup = await relaySetup({ with: { channels: { general: 'C0GENERAL1', random: '#outside' } } });
    const { env, slack } = setup;
    await setup.start();
    slack.fault('chat.postMessage', { times: 1, status: 500 });
    slack.fault('chat.postMessage', { times: 1, error: 'service_unavailable' });
    await post(env.svc, 'general', 'bob', 'first');
    await post(env.svc, 'random', 'bob', 'to a channel the app is not in');
    await post(env.svc, 'general', 'bob', 'second');
    await waitFor('both general messages in Slack', () => slack.posts.length >= 2, 30_000);
    await setup.drained();
    expect(slack.posts.map((p) => p.text)).toEqual(['first', 'second']);
    expect(setup.stats()).toMatchObject({ relayed_out: 2, failed: 1, retries: 2, queued: 0 });
    const refused = env.log.lines.find((line) => line.code === 'not_in_channel');
    expect(refused).toMatchObject({ level: 50, chat: 'random' });
    expect(String(refused!.msg)).toContain('invite the app');
  });

  test('what waits for Slack survives a restart and goes out once, in order; a full queue refuses loudly', async () => {
    setup = await relaySetup({ with: { queue_max: 4 } });
    const { env, slack } = setup;
    const first = await setup.start();
    slack.rateLimit('chat.postMessage', 1, 60);
    for (let i = 1; i <= 5; i += 1) await post(env.svc, 'general', 'bob', `queued ${i}`);
    await waitFor('four queued and one refused', () => setup!.stats().queued === 4 && setup!.stats().failed === 1);
    expect(env.log.lines.some((line) => line.level === 50 && String(line.msg).includes('queue to Slack is full'))).toBe(true);
    await first.stop();
    expect(existsSync(join(env.stateDir, 'bots', 'bot0', 'plugins', 'relay-slack', 'to-slack.json'))).toBe(true);
    expect(slack.posts).toHaveLength(0);

    slack.api.clearFaults();
    await setup.start();
    await waitFor('the queued messages in Slack', () => slack.posts.length >= 4, 30_000);
    await post(env.svc, 'general', 'bob', 'after the restart');
    await waitFor('the new message', () => slack.posts.length >= 5);
    await setup.drained();
    expect(slack.posts.map((p) => p.text)).toEqual(['queued 1', 'queued 2', 'queued 3', 'queued 4', 'after the restart']);
    expect(setup.stats()).toMatchObject({ relayed_out: 5, queued: 0 });
  });

  test('a crash (SIGKILL) while messages wait for Slack loses none and posts none twice', { timeout: 60_000 }, async () => {
    setup = await relaySetup();
    const { env, slack } = setup;
    slack.rateLimit('chat.postMessage', 1, 60);
    const child = await env.spawn();
    const queueFile = join(env.stateDir, 'bots', 'bot0', 'plugins', 'relay-slack', 'to-slack.json');
    const queued = () => DurableQueue.read<{ text: string }>(queueFile).map((i) => i.text);
    for (let i = 1; i <= 3; i += 1) await post(env.svc, 'general', 'bob', `before the crash ${i}`);
    await waitFor('three queued on disk', () => queued().length === 3);
    // The first was tried (and rate limited: the relay now waits a minute), so no call is in flight at the kill.
    await waitFor('the first try', () => slack.api.calls.some((c) => c.method === 'chat.postMessage'));
    await kill(child);
    expect(slack.posts).toHaveLength(0);

    slack.api.clearFaults();
    await setup.start();
    await waitFor('the queued messages in Slack', () => slack.posts.length >= 3, 30_000);
    await post(env.svc, 'general', 'bob', 'after the crash');
    await waitFor('the new message', () => slack.posts.some((p) => p.text === 'after the crash'));
    await setup.drained();
    expect(slack.posts.map((p) => p.text)).toEqual(['before the crash 1', 'before the crash 2', 'before the crash 3', 'after the crash']);
  });
});
