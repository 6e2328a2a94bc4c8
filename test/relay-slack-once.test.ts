import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebClient } from '@slack/web-api';
import { afterEach, describe, expect, test } from 'vitest';
import { kill, post, waitFor } from './helpers/supervisor.js';
import { relaySetup, type RelaySetup } from './fakes/slack/harness.js';
import { FakeSlack, TOKENS } from './fakes/slack/index.js';
import { DurableQueue } from '../src/index.js';
import { PostAttempts, type PostAttempt } from '../plugins/relay-slack/post-attempts.js';

/**
 * Gateway → Slack once, even when chat.postMessage's answer never came back: every post carries its
 * key in message metadata, and a post tried before (marked durably before the call) is looked for in
 * the channel (conversations.history, or conversations.replies for a thread reply) before it is sent
 * again. Found: its ts is the answer (the message map, threads and counters as for a normal answer).
 * Not allowed to look (no channels:history): said once, and posted again.
 */

let setup: RelaySetup | undefined;
let fake: FakeSlack | undefined;
afterEach(async () => {
  await setup?.close();
  await fake?.close();
  setup = undefined;
  fake = undefined;
});

const GENERAL = 'C0GENERAL1';
const RANDOM = 'C0RANDOM01';

/** The event type and key a post carried in its metadata (chat.postMessage's `metadata`, a JSON string in the form post). */
function metadataOf(args: Record<string, string>): { event_type: string; event_payload: { key: string } } {
  return JSON.parse(args.metadata!) as { event_type: string; event_payload: { key: string } };
}

describe('relay-slack: a post whose answer was lost shows once', () => {
  test('a lost answer: looked for and found, not posted again; its thread reply (lost too) found in the thread; the map knows both', { timeout: 60_000 }, async () => {
    setup = await relaySetup({
      with: { channels: {} },
      gateways: [{ name: 'lobby', endpoints: [{ chat: 'general' }, { slack: GENERAL }, { slack: RANDOM }] }],
    });
    const { slack } = setup;
    await setup.start();
    await setup.connections(1);
    const copies = (text: string) => slack.posts.filter((p) => p.text === text);

    // Slack stores the copy in #random, and the connection dies before its answer.
    slack.loseAnswer('chat.postMessage', 'destroy');
    const parent = slack.message(GENERAL, 'U0ALICE001', 'lost on the way back');
    const parentTs = parent.payload.event.ts as string;
    await waitFor('the copy taken as posted', () => setup!.stats().recovered === 1);
    await setup.drained();
    expect(copies('lost on the way back').map((p) => p.channel)).toEqual([RANDOM]);
    const copy = copies('lost on the way back')[0]!;
    expect(metadataOf(copy.args)).toMatchObject({ event_type: 'groupwire_line', event_payload: { key: expect.any(String) } });
    const lookups = slack.api.calls.filter((c) => c.method === 'conversations.history');
    expect(lookups).toHaveLength(1);
    expect(lookups[0]!.args).toMatchObject({ channel: RANDOM, include_all_metadata: 'true' });
    // The search starts a little before the first try, not at the start of the channel.
    expect(Number(lookups[0]!.args.oldest)).toBeGreaterThan(Number(copy.ts) - 120);

    // A reply in the thread of the copy goes into the thread of the original: the map has the copy's ts.
    // Its post into #general loses its answer too: looked for in that thread.
    slack.loseAnswer('chat.postMessage', 'destroy');
    slack.threadReply(RANDOM, 'U0BOB00001', 'replying to the copy', copy.ts);
    await waitFor('the reply taken as posted', () => setup!.stats().recovered === 2);
    await setup.drained();
    expect(copies('replying to the copy')).toHaveLength(1);
    expect(copies('replying to the copy')[0]).toMatchObject({ channel: GENERAL, thread_ts: parentTs });
    expect(slack.api.thread(GENERAL, parentTs).map((m) => m.text)).toEqual(['replying to the copy']);
    const threadLookup = slack.api.calls.filter((c) => c.method === 'conversations.replies');
    expect(threadLookup).toHaveLength(1);
    expect(threadLookup[0]!.args).toMatchObject({ channel: GENERAL, ts: parentTs, include_all_metadata: 'true' });

    // The map knows the recovered copy as the relay's post: an edit of the original updates it.
    slack.messageChanged(GENERAL, parentTs, 'lost on the way back, edited');
    await waitFor('the recovered copy updated', () => slack.api.changes.length === 1);
    expect(slack.api.changes[0]).toMatchObject({ method: 'chat.update', channel: RANDOM, ts: copy.ts, text: 'lost on the way back, edited' });
    expect(setup.stats()).toMatchObject({ relayed_out: 2, recovered: 2, edited_out: 1, failed: 0 });
    expect(setup.env.log.lines.filter((line) => line.level >= 40 && String(line.msg).includes('may show twice'))).toEqual([]);
  });

  test('the bot killed (SIGKILL) during chat.postMessage: after the restart the post is found, not made again', { timeout: 60_000 }, async () => {
    setup = await relaySetup();
    const { env, slack } = setup;
    // Slack stores the post and the bot waits for an answer that never comes; it is killed meanwhile.
    slack.loseAnswer('chat.postMessage', 'hang');
    const child = await env.spawn();
    await post(env.svc, 'general', 'bob', 'in flight at the kill');
    await waitFor('the post stored in Slack', () => slack.posts.some((p) => p.text === 'in flight at the kill'));
    await kill(child);

    await setup.start();
    await waitFor('the queue to Slack empty', () => setup!.stats().queued === 0 && setup!.stats().recovered === 1, 30_000);
    await post(env.svc, 'general', 'bob', 'after the restart');
    await waitFor('the new message', () => slack.posts.some((p) => p.text === 'after the restart'));
    await setup.drained();
    expect(slack.posts.map((p) => p.text)).toEqual(['in flight at the kill', 'after the restart']);
    expect(setup.stats()).toMatchObject({ relayed_out: 2, recovered: 1, failed: 0 });
    // Each post carries its own key.
    const [first, second] = slack.posts.map((p) => metadataOf(p.args).event_payload.key);
    expect(first).not.toBe(second);
  });

  test('no channels:history: the lost post is sent again (at least once), said once with the scope to add', { timeout: 60_000 }, async () => {
    setup = await relaySetup();
    const { env, slack } = setup;
    await setup.start();
    for (const text of ['first lost answer', 'second lost answer']) {
      slack.loseAnswer('chat.postMessage', 'destroy');
      slack.fault('conversations.history', { times: 1, error: 'missing_scope', needed: 'channels:history' });
      await post(env.svc, 'general', 'bob', text);
      await waitFor(`${text} posted again`, () => slack.posts.filter((p) => p.text === text).length === 2);
      await setup.drained();
    }
    expect(slack.api.calls.filter((c) => c.method === 'conversations.history').map((c) => c.error)).toEqual(['missing_scope', 'missing_scope']);
    const warnings = env.log.lines.filter((line) => line.level === 40 && String(line.msg).includes('history could not be read'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ code: 'missing_scope', method: 'conversations.history' });
    expect(String(warnings[0]!.msg)).toContain('channels:history');
    expect(String(warnings[0]!.msg)).toContain('groups:history');
    // The relay goes on: a missing scope for the lookup is not a refused token.
    await post(env.svc, 'general', 'bob', 'still relaying');
    await waitFor('the next message', () => slack.posts.some((p) => p.text === 'still relaying'));
    expect(setup.stats()).toMatchObject({ recovered: 0, disabled: 0, failed: 0 });
  });

  test('a post Slack answered with an error or a rate limit is not looked for: it was not stored', async () => {
    setup = await relaySetup();
    const { env, slack } = setup;
    await setup.start();
    slack.rateLimit('chat.postMessage', 1, 1);
    slack.fault('chat.postMessage', { times: 1, error: 'internal_error' });
    await post(env.svc, 'general', 'bob', 'refused twice, then taken');
    await waitFor('the post', () => slack.posts.length === 1, 30_000);
    await setup.drained();
    expect(slack.api.calls.filter((c) => c.method.startsWith('conversations.history'))).toEqual([]);
    expect(setup.stats()).toMatchObject({ relayed_out: 1, recovered: 0, rate_limited: 1, retries: 2 });
  });
});

describe('the fake Slack\'s history, as Slack documents it', () => {
  test('conversations.history: newest first, no thread replies, oldest/latest/inclusive, limit and cursor pages, metadata only when asked', async () => {
    fake = await FakeSlack.start({ echoPosts: false });
    const web = new WebClient(TOKENS.bot, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } });
    const ts: string[] = [];
    for (const n of [1, 2, 3, 4, 5]) {
      const answer = await web.chat.postMessage({ channel: GENERAL, text: `m${n}`, metadata: { event_type: 'groupwire_line', event_payload: { key: `k${n}` } } });
      ts.push(answer.ts!);
    }
    await web.chat.postMessage({ channel: GENERAL, text: 'a reply', thread_ts: ts[1]! });

    const texts = (messages: Array<{ text?: string }> | undefined) => (messages ?? []).map((m) => m.text);
    const first = await web.conversations.history({ channel: GENERAL, limit: 2, include_all_metadata: true });
    expect(texts(first.messages)).toEqual(['m5', 'm4']);
    expect(first.has_more).toBe(true);
    expect(first.messages![0]!.metadata).toEqual({ event_type: 'groupwire_line', event_payload: { key: 'k5' } });
    const second = await web.conversations.history({ channel: GENERAL, limit: 2, cursor: first.response_metadata!.next_cursor! });
    expect(texts(second.messages)).toEqual(['m3', 'm2']);
    expect(second.messages![0]!.metadata).toBeUndefined();
    const last = await web.conversations.history({ channel: GENERAL, limit: 2, cursor: second.response_metadata!.next_cursor! });
    expect(texts(last.messages)).toEqual(['m1']);
    expect(last.has_more).toBe(false);
    expect(last.response_metadata!.next_cursor).toBe('');

    expect(texts((await web.conversations.history({ channel: GENERAL, oldest: ts[2]!, latest: ts[4]! })).messages)).toEqual(['m4']);
    expect(texts((await web.conversations.history({ channel: GENERAL, oldest: ts[2]!, latest: ts[4]!, inclusive: true })).messages)).toEqual(['m5', 'm4', 'm3']);
    await expect(web.conversations.history({ channel: GENERAL, cursor: 'bm90IGEgY3Vyc29y' })).rejects.toMatchObject({ data: { error: 'invalid_cursor' } });
    await expect(web.conversations.history({ channel: 'C0NOTMEMBR' })).rejects.toMatchObject({ data: { error: 'not_in_channel' } });

    const thread = await web.conversations.replies({ channel: GENERAL, ts: ts[1]!, include_all_metadata: true });
    expect(texts(thread.messages)).toEqual(['m2', 'a reply']);
    expect(thread.messages![0]!.metadata).toMatchObject({ event_payload: { key: 'k2' } });
    await expect(web.conversations.replies({ channel: GENERAL, ts: '1.000001' })).rejects.toMatchObject({ data: { error: 'thread_not_found' } });
  });
});

describe('post attempts on disk', () => {
  test('a mark is one appended line, read back after a reopen with its first time; marks are forgotten together', () => {
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-attempts-'));
    try {
      const file = join(dir, 'post-attempts.json');
      const lines = () => readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
      const attempts = new PostAttempts(DurableQueue.open<PostAttempt>(file));
      attempts.mark('a', 1_000);
      expect(lines()).toBe(1);
      attempts.mark('a', 2_000);
      expect(lines()).toBe(1);
      const reopened = new PostAttempts(DurableQueue.open<PostAttempt>(file));
      expect(reopened.at('a')).toBe(1_000);
      expect(reopened.at('b')).toBeUndefined();
      reopened.settled();
      expect(reopened.at('a')).toBe(1_000);
      for (let i = 0; i < 70; i += 1) reopened.mark(`item ${i}`, i);
      reopened.settled();
      expect(reopened.at('a')).toBeUndefined();
      expect(new PostAttempts(DurableQueue.open<PostAttempt>(file)).at('item 5')).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
