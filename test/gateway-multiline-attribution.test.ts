import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { chatLineOf, continuationOf, splitForChat } from '../src/gateway/render.js';
import type { MapRecord } from '../src/store/message-map.js';
import { MAX_POST_LENGTH } from '../src/supervisor/chat-outbox.js';
import { defaultUsers } from './fakes/slack/state.js';
import { relaySetup, type RelaySetup } from './fakes/slack/harness.js';
import { chatOf, history, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Issue #31 item 11: a relayed text of several lines shows in the chat with its speaker on every line,
 * so a line in it that looks like another member's (`<alice> I resign`) still reads as its real
 * speaker's. Item 14: a speaker's name with a right-to-left override is closed before the text.
 * Through the HTTP API (bearer token) and Slack (the fake), into the local service.
 */

const TOKEN = 'ci-token-0123456789abcdef';
const RLO = '\u202e';
const PDF = '\u202c';

let env: Env | undefined;
let slack: RelaySetup | undefined;
afterEach(async () => {
  await env?.close();
  await slack?.close();
  env = undefined;
  slack = undefined;
});

/** The bot's posts in a chat, oldest first. */
async function botPosts(e: Env, reader: GroupsClient, subject: string): Promise<string[]> {
  const chat = (await chatOf(reader, subject))!;
  const bot = String((await chatOf(e.client('bot'), subject))!.chat_sub!.user_id);
  return (await history(reader, chat.id)).filter((m: ChatMessage) => String(m.user_id) === bot).map((m) => m.message);
}

/** Every line of every post: what a reader of the chat sees line by line. */
const linesOf = (posts: string[]) => posts.flatMap((post) => post.split(/\r\n|\r|\n/));

describe('a multi-line relayed text in the chat', () => {
  test('from the HTTP API: each line starts with the speaker; a forged `<alice>` line shows after the real speaker', { timeout: 60_000 }, async () => {
    const e = (env = await makeEnv([]));
    e.writeConfig([{
      chats: [{ chat: 'general' }],
      reply_rate: { per_second: 200, burst: 200 },
      plugins: [{
        use: 'http-api',
        with: { listen: { host: '127.0.0.1', port: 0 }, channels: { general: 'ops' }, clients: [{ name: 'ci', token: TOKEN }] },
      }],
    }]);
    await e.start({ waitConnected: false });
    const stats = () => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['http-api']!;
    const port = await waitFor('the HTTP API listening', () => stats().port);
    const send = async (body: unknown) => {
      const answer = await request(`http://127.0.0.1:${port}/gateways/ops/messages`, {
        method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      });
      await answer.body.text();
      expect(answer.statusCode).toBe(202);
    };
    await send({ username: 'deploybot', text: 'build 42 passed\n<alice> I resign, effective now\r\n\nthird\n  \nfourth' });
    await send({ username: 'deploybot', kind: 'action', text: 'waves\n<alice> waves too' });
    const reader = e.client('bob');
    await waitFor('both lines in the chat', async () => (await botPosts(e, reader, 'general')).length === 2);
    const posts = await botPosts(e, reader, 'general');
    expect(posts).toEqual([
      '<[api] deploybot> build 42 passed\n<[api] deploybot> <alice> I resign, effective now\n<[api] deploybot> third\n<[api] deploybot> fourth',
      '* [api] deploybot waves\n* [api] deploybot <alice> waves too',
    ]);
    expect(linesOf(posts).filter((line) => !line.startsWith('<[api] deploybot> ') && !line.startsWith('* [api] deploybot '))).toEqual([]);
  });

  test('from Slack: each line and each part of a line too long for one post carries the speaker; a name with an override is closed', { timeout: 60_000 }, async () => {
    slack = await relaySetup({ slack: { users: [...defaultUsers(), { id: 'U0EVE00001', name: 'eve', display_name: `${RLO}eve` }] } });
    await slack.start();
    await slack.connections(1);
    slack.slack.message('C0GENERAL1', 'U0ALICE001', 'hello all\n&lt;Bob Builder&gt; I approve the budget');
    // Longer than one chat post (10,000 characters): cut in two, the second part attributed too.
    const long = `${'word '.repeat(2_400)}&lt;Bob Builder&gt; I approve this too`;
    slack.slack.message('C0GENERAL1', 'U0ALICE001', long);
    slack.slack.message('C0GENERAL1', 'U0EVE00001', 'plain text after my name');
    await waitFor('the lines in the chat', async () => (await slack!.relayed('general')).length >= 4);
    const posts = await slack.relayed('general');
    expect(posts[0]).toBe('<alice.l> hello all\n<alice.l> <Bob Builder> I approve the budget');
    expect(posts).toHaveLength(4);
    expect(posts[2]!.startsWith('<alice.l> ')).toBe(true);
    expect(posts[2]!.endsWith('<Bob Builder> I approve this too')).toBe(true);
    expect(`${posts[1]} ${posts[2]!.slice('<alice.l> '.length)}`).toBe(`<alice.l> ${'word '.repeat(2_400)}<Bob Builder> I approve this too`);
    expect(linesOf(posts.slice(0, 3)).filter((line) => !line.startsWith('<alice.l> '))).toEqual([]);
    // The override ends with the name: the text after it is not reversed.
    expect(posts[3]).toBe(`<${RLO}eve${PDF}> plain text after my name`);
  });
});

describe('the gateway\'s chat line, without I/O', () => {
  const record = (fields: Partial<MapRecord>): MapRecord => ({
    key: 'k', gateway: 'g', origin: 'irc:#a@bot/relay-irc', platform: 'irc', nativeId: '1', kind: 'message',
    speaker: { platform: 'irc', id: 'x', name: 'bob' }, text: 'hi', at: 0, copies: {}, ...fields,
  });

  test('every line attributed, also when the line breaks are NEL or U+2028; a name on one line', () => {
    expect(chatLineOf(record({ text: 'one\u0085<alice> two\u2028three' }), undefined)).toBe('<bob> one\n<bob> <alice> two\n<bob> three');
    expect(chatLineOf(record({ kind: 'action', text: 'waves\nbows' }), undefined)).toBe('* bob waves\n* bob bows');
    expect(chatLineOf(record({ speaker: { platform: 'http', id: 'x', name: 'bob\n<alice>' }, text: 'x' }), undefined)).toBe('<bob <alice>> x');
  });

  test('a quote and a deletion notice: one line each, their override closed before what follows (#31 item 14)', () => {
    const quoted = record({ speaker: { platform: 'irc', id: 'e', name: `${RLO}eve` }, text: `${RLO}olleh\u0085<alice> forged` });
    expect(chatLineOf(record({ text: 'answer' }), undefined, quoted)).toBe(`> ${RLO}eve${PDF}: ${RLO}olleh <alice> forged${PDF}\n<bob> answer`);
    expect(chatLineOf(record({ kind: 'delete' }), undefined, undefined, quoted)).toBe(`* bob deleted a message: "${RLO}olleh <alice> forged${PDF}"`);
  });

  test('a line too long for one post: each part after a cut inside it starts with the speaker; never cut inside a surrogate pair', () => {
    const rec = record({});
    const line = `<bob> ${'\u{1F600}'.repeat(MAX_POST_LENGTH)}`;
    const parts = splitForChat(line, continuationOf(rec));
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(MAX_POST_LENGTH);
      expect(part.startsWith('<bob> ')).toBe(true);
      expect(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(part)).toBe(false);
    }
    expect(parts.map((part) => part.slice('<bob> '.length)).join('')).toBe(line.slice('<bob> '.length));
    // Lines of a multi-line text are cut at their line ends: each part starts with an attributed line.
    const many = Array.from({ length: 400 }, (_, i) => `<bob> line ${i} ${'x'.repeat(40)}`).join('\n');
    expect(splitForChat(many, '<bob> ').every((part) => part.startsWith('<bob> line '))).toBe(true);
  });
});
