import { afterEach, describe, expect, test } from 'vitest';
import type { GroupsClient, Message } from '../src/api/index.js';
import { adminOk, chatOf, history, makeEnv, serviceStats, waitFor, type Env, type GatewaySpec, type PluginSpec } from './helpers/supervisor.js';
import { EMAILS } from './helpers/service.js';

/**
 * group-mail against the local service: new topics (and messages) of the demo group's archive reach the
 * bot's chat once, in order, from a durable cursor; its options (topics / messages, hashtags, templates,
 * moderation entries, posting into the group).
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const FAST = { min: '100ms', max: '400ms' };

async function setup(mail: Record<string, unknown>, extra: { plugins?: PluginSpec[]; gateways?: GatewaySpec[]; perSecond?: number } = {}): Promise<{ env: Env; reader: GroupsClient }> {
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    reply_rate: { per_second: extra.perSecond ?? 500, burst: 20 },
    plugins: [...(extra.plugins ?? []), { use: 'group-mail', with: { poll: FAST, ...mail } }],
  }], extra.gateways);
  return { env, reader: env.client('bob') };
}

/** The bot's lines in `general` after `from` (msg_num), oldest first. */
async function botLines(e: Env, reader: GroupsClient, from = 0): Promise<string[]> {
  const chat = (await chatOf(reader, 'general'))!;
  return (await history(reader, chat.id)).filter((m) => m.msg_num > from && m.email === EMAILS.bot).map((m) => m.message);
}

const topic = (e: Env, who: string, subject: string, body: string, hashtags: string[] = []): Promise<{ topic: { id: string }; message: Message }> =>
  adminOk(e.svc, 'topics', { group: 'demo', user: who, subject, body, hashtags });
const reply = (e: Env, topicId: string, who: string, body: string): Promise<Message> => adminOk(e.svc, 'messages', { topic: String(topicId), user: who, body });

describe('group-mail: the archive into the chat', () => {
  test('a new topic is announced once with its subject, author, snippet and link; replies are not (follow: topics); the past is not', async () => {
    const { env: e, reader } = await setup({ groups: { general: 'demo' } });
    await e.start();
    await waitFor('the first read', () => (e.supervisor!.stats() as any).bot0.plugins['group-mail'].polls >= 2);
    const made = await topic(e, EMAILS.alice, 'Picnic on Saturday', 'Bring food!\n\nOn Fri, Bob wrote:\n> old text\n\n-- \nAlice\nsignature');
    await reply(e, made.topic.id, EMAILS.bob, 'I will bring bread');
    const lines = await waitFor('the announcement', async () => {
      const found = await botLines(e, reader);
      return found.length >= 1 ? found : undefined;
    });
    expect(lines[0]).toMatch(/^<Alice Owner> New topic: Picnic on Saturday — Bring food! https:\/\/\S+\/g\/demo\/message\/\d+$/);
    // A second topic goes after it; the reply never shows (topics only).
    await topic(e, EMAILS.carol, 'Second one', 'Hello');
    await waitFor('the second announcement', async () => (await botLines(e, reader)).length >= 2);
    const all = await botLines(e, reader);
    expect(all).toHaveLength(2);
    expect(all[1]).toMatch(/^<Carol Member> New topic: Second one — Hello/);
    expect(all.join('\n')).not.toContain('Welcome to the demo group');
  });
});

/** The m#### markers of the bot's lines, in the order the chat shows them (the last on a line: a line may quote another). */
const markers = (lines: string[]) => lines.map((line) => line.match(/m\d{4}/g)?.at(-1) ?? `?${line}`);

describe('group-mail: exactly once, in order, across stops, crashes and 429s', () => {
  test('500 messages in 40 topics, posted while the bot is stopped, killed mid catch-up and rate-limited: each once, in order', async () => {
    // 150 lines a second into the chat: the catch-up takes seconds, so the kill falls in its middle.
    const { env: e, reader } = await setup({ groups: { general: 'demo' }, follow: 'messages', snippet_length: 40 }, { perSecond: 150 });
    // A first start takes the archive's newest message as the position; then the bot is away.
    await e.start();
    await waitFor('the first read', () => (e.supervisor!.stats() as any).bot0.plugins['group-mail'].polls >= 2);
    await e.supervisor!.stop();
    e.supervisor = undefined;
    const topics: string[] = [];
    const say = async (n: number) => {
      const body = `m${String(n).padStart(4, '0')}`;
      if (n < 40) topics.push(String((await topic(e, EMAILS.alice, `T${n}`, body)).topic.id));
      else await reply(e, topics[n % 40]!, n % 2 ? EMAILS.bob : EMAILS.carol, body);
    };
    for (let n = 0; n < 250; n += 1) await say(n);
    // The service answers 429 to the first reads after the restart.
    await adminOk(e.svc, 'faults/errors', { count: 3, type: 'rate_limit', retry_after: 1, operations: ['getmessages'], scope: 'api' });
    const first = await e.spawn();
    const atKill = await waitFor('the catch-up under way', async () => {
      const count = (await botLines(e, reader)).length;
      return count >= 60 ? count : undefined;
    }, 60_000);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    for (let n = 250; n < 400; n += 1) await say(n);
    await e.spawn();
    for (let n = 400; n < 500; n += 1) await say(n);
    const expected = Array.from({ length: 500 }, (_, n) => `m${String(n).padStart(4, '0')}`);
    const seen = await waitFor('all 500', async () => {
      const found = markers(await botLines(e, reader));
      return found.length >= 500 ? found : undefined;
    }, 120_000);
    expect(seen).toEqual(expected);
    expect(atKill).toBeLessThan(250);
    expect((await serviceStats(e.svc)).faults.errors).toBe(3);
    const lines = await botLines(e, reader);
    // Topics as topics, replies as replies (naming their topic, so with no quote of its announcement).
    expect(lines[0]).toMatch(/^<Alice Owner> New topic: T0 — m0000 /);
    expect(lines[40]).toMatch(/^<Carol Member> re: T0 — m0040 /);
  }, 240_000);
});

describe('group-mail: options', () => {
  test('hashtags: only topics with one of them', async () => {
    const { env: e, reader } = await setup({ groups: { general: 'demo' }, hashtags: ['#Announce'] });
    await e.start();
    await waitFor('the first read', () => (e.supervisor!.stats() as any).bot0.plugins['group-mail'].polls >= 2);
    await topic(e, EMAILS.bob, 'Lunch?', 'anyone');
    await topic(e, EMAILS.alice, 'Release 2.0 #announce', 'It is out');
    await topic(e, EMAILS.mo, 'Meeting moved', 'to Tuesday', ['announce']);
    await topic(e, EMAILS.carol, 'Me too', 'chatter');
    await topic(e, EMAILS.alice, 'Last one #announce', 'end');
    const lines = await waitFor('the tagged topics', async () => {
      const found = await botLines(e, reader);
      return found.length >= 3 ? found : undefined;
    });
    expect(lines.map((line) => /New topic: ([^—]+?) (#|—)/.exec(line)?.[1])).toEqual(['Release 2.0', 'Meeting moved', 'Last one']);
    expect(lines[1]).toContain('#announce');
    expect((e.supervisor!.stats() as any).bot0.plugins['group-mail'].filtered).toBe(2);
  });

  test('moderation: the activity log\'s moderation entries reach the chat as a stream of their own', async () => {
    const { env: e, reader } = await setup({ groups: { general: 'demo' }, moderation: true, moderation_template: '[mod] {entry}' });
    await e.start();
    await waitFor('the first read', () => (e.supervisor!.stats() as any).bot0.plugins['group-mail'].polls >= 2);
    const alice = e.client('alice');
    await alice.newChat({ group_name: 'demo', subject: 'planning', desc: '' });
    const lines = await waitFor('the moderation entry', async () => {
      const found = (await botLines(e, reader)).filter((line) => line.includes('[mod]'));
      return found.length >= 1 ? found : undefined;
    });
    expect(lines[0]).toMatch(/^<demo> \[mod\] .*planning/);
    expect((e.supervisor!.stats() as any).bot0.plugins['group-mail'].moderation_relayed).toBe(1);
  });
});
