import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { relayMatrixOptions } from '../plugins/relay-matrix/options.js';
import { txnIdOf } from '../plugins/relay-matrix/outbound.js';
import { editContent, plainFromMatrix, renderLine } from '../plugins/relay-matrix/render.js';
import { FakeMatrix, type MatrixEvent } from './helpers/fake-matrix.js';
import { chatOf, history, makeEnv, post, waitFor, type Env, type GatewaySpec } from './helpers/supervisor.js';

/**
 * relay-matrix in a supervisor against the local service and a local homeserver (test/helpers/fake-matrix.ts,
 * written from the Matrix client-server spec) spoken to by matrix-js-sdk.
 */

let fake: FakeMatrix | undefined;
let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  await fake?.close();
  env = fake = undefined;
});

interface World {
  env: Env;
  fake: FakeMatrix;
  reader: GroupsClient;
  bot: { userId: string; token: string };
  alice: { userId: string; token: string };
  dave: { userId: string; token: string };
  general: string;
  random: string;
}

async function setup(relay: (w: Omit<World, 'env' | 'reader'>) => Record<string, unknown>, gateways?: GatewaySpec[]): Promise<World> {
  fake = await FakeMatrix.start();
  const bot = fake.addUser('groupwire', 'groupwire bot', 'bot-password');
  const alice = fake.addUser('alice', 'Alice');
  // No display name: shown by the localpart.
  const dave = fake.addUser('dave');
  const general = fake.addRoom('general', { alias: 'general', members: [alice.userId, dave.userId] });
  const random = fake.addRoom('random', { members: [alice.userId, dave.userId] });
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    reply_rate: { per_second: 200, burst: 200 },
    plugins: [{ use: 'relay-matrix', with: { homeserver: fake.url, ...relay({ fake, bot, alice, dave, general, random }) } }],
  }], gateways);
  return { env, fake, reader: env.client('bob'), bot, alice, dave, general, random };
}

/** The usual relay: the bot's token, `general` by its alias, `random` by its id. */
const byToken = ({ bot, random }: { bot: World['bot']; random: string }) => ({
  access_token: bot.token, user_id: bot.userId, rooms: { general: '#general:localhost', random },
});

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-matrix']!;
const report = (e: Env) => e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-matrix')!;

/** The bot's posts in a chat (what the relay brought from Matrix), oldest first. */
async function relayed(e: Env, reader: GroupsClient, subject: string): Promise<string[]> {
  const chat = (await chatOf(reader, subject))!;
  const bot = String((await chatOf(e.client('bot'), subject))!.chat_sub!.user_id);
  return (await history(reader, chat.id)).filter((m: ChatMessage) => String(m.user_id) === bot).map((m) => m.message);
}

/** The relay's messages in a room (edits included), oldest first. */
const botPosts = (w: World, room: string): MatrixEvent[] => w.fake.eventsIn(room).filter((e) => e.sender === w.bot.userId && e.type === 'm.room.message');

describe('relay-matrix', () => {
  test('both ways: chat lines as m.notice `name: text`, escaped and mentioning nobody; room lines into the chat as <name> text; its own posts not relayed back', async () => {
    const w = await setup(byToken);
    w.fake.say(w.general, w.alice.userId, 'said before the relay ever started');
    await w.env.start();
    await waitFor('the first sync', () => (stats(w.env).syncs ?? 0) >= 1);
    // The first sync only takes the position: a timeline of at most one event, and the past is not relayed.
    expect(w.fake.syncFilters[0].room.timeline.limit).toBeLessThanOrEqual(1);
    expect(w.fake.syncFilters[0].room.rooms).toEqual([w.general, w.random]);
    expect(w.fake.calls).toContain('GET /directory/room/#general:localhost');

    await post(w.env.svc, 'general', 'bob', 'hi <script>alert(1)</script> @room & co');
    await post(w.env.svc, 'random', 'carol', 'over in random');
    await waitFor('two posts in Matrix', () => botPosts(w, w.general).length === 1 && botPosts(w, w.random).length === 1);
    expect(botPosts(w, w.general)[0]!.content).toEqual({
      msgtype: 'm.notice',
      body: 'Bob Member: hi <script>alert(1)</script> @\u200broom & co',
      format: 'org.matrix.custom.html',
      formatted_body: '<b>Bob Member</b>: hi &lt;script&gt;alert(1)&lt;/script&gt; @\u200broom &amp; co',
      'm.mentions': {},
    });
    expect(botPosts(w, w.random)[0]!.content.body).toBe('Carol Member: over in random');

    w.fake.say(w.general, w.alice.userId, 'hello from Matrix');
    w.fake.say(w.random, w.dave.userId, 'second', { msgtype: 'm.notice' });
    w.fake.say(w.random, w.dave.userId, 'waves', { msgtype: 'm.emote' });
    await waitFor('the Matrix lines in the chats', async () => (await relayed(w.env, w.reader, 'general')).length === 1 && (await relayed(w.env, w.reader, 'random')).length === 2);
    expect(await relayed(w.env, w.reader, 'general')).toEqual(['<Alice> hello from Matrix']);
    expect(await relayed(w.env, w.reader, 'random')).toEqual(['<dave> second', '* dave waves']);
    // The relay's own two posts came back in /sync and were not relayed: still one line each way.
    await waitFor('the queue to Matrix empty', () => stats(w.env).queued === 0);
    expect(botPosts(w, w.general)).toHaveLength(1);
    expect(stats(w.env)).toMatchObject({ posted: 2, received: 3, dropped: 0 });
  });

  test('429 M_LIMIT_EXCEEDED is waited out: every line posted once, in order, the same txnId sent again', async () => {
    const w = await setup(byToken);
    await w.env.start();
    await waitFor('the first sync', () => (stats(w.env).syncs ?? 0) >= 1);
    w.fake.rateLimit(3);
    for (let n = 1; n <= 6; n += 1) await post(w.env.svc, 'general', 'bob', `line ${n}`);
    // The fake keeps a post before the relay reads its answer (and counts it): wait for both.
    await waitFor('six posts', () => botPosts(w, w.general).length === 6 && stats(w.env).posted === 6);
    expect(botPosts(w, w.general).map((e) => e.content.body)).toEqual([1, 2, 3, 4, 5, 6].map((n) => `Bob Member: line ${n}`));
    expect(w.fake.txnIds).toHaveLength(9);
    // The first line was refused three times and sent a fourth with the one txnId; each line has its own.
    expect(new Set(w.fake.txnIds.slice(0, 4)).size).toBe(1);
    expect(new Set(w.fake.txnIds).size).toBe(6);
    expect(stats(w.env)).toMatchObject({ rate_limited: 3, posted: 6, dropped: 0 });
  });

  test('a restart relays what was said meanwhile once each, from the kept since; a limited timeline is filled by /messages', async () => {
    const w = await setup(byToken);
    await w.env.start();
    await waitFor('the first sync', () => (stats(w.env).syncs ?? 0) >= 1);
    w.fake.say(w.general, w.alice.userId, 'one');
    await waitFor('one', async () => (await relayed(w.env, w.reader, 'general')).length === 1);
    await w.env.supervisor!.stop();

    // Five lines while away, but a /sync timeline of two: the other three are a gap to fill.
    w.fake.timelineLimit = 2;
    for (let n = 1; n <= 5; n += 1) w.fake.say(w.general, w.alice.userId, `said while away ${n}`);
    // And the first answer after the restart is lost on the way: the relay syncs again from the same position.
    w.fake.dropNextSyncAnswer();
    await w.env.start();
    await waitFor('all caught up', async () => (await relayed(w.env, w.reader, 'general')).length === 6);
    w.fake.say(w.general, w.alice.userId, 'live again');
    await waitFor('the live line', async () => (await relayed(w.env, w.reader, 'general')).length === 7);
    expect(await relayed(w.env, w.reader, 'general')).toEqual([
      '<Alice> one', ...[1, 2, 3, 4, 5].map((n) => `<Alice> said while away ${n}`), '<Alice> live again',
    ]);
    expect(w.fake.calls.some((c) => c.startsWith(`GET /rooms/${w.general}/messages`))).toBe(true);
    expect(w.env.log.lines.some((line) => line.level === 40 && /Matrix \/sync failed/.test(String(line.msg)))).toBe(true);
    expect(stats(w.env).gaps_filled).toBeGreaterThanOrEqual(1);
  });

  test('an invite to a configured room is accepted (others are not); its alias was resolved at start', async () => {
    const w = await setup((world) => {
      world.fake.addRoom('hidden', { alias: 'hidden', public: false, members: [world.alice.userId] });
      world.fake.addRoom('elsewhere', { public: false, members: [world.alice.userId] });
      return { access_token: world.bot.token, user_id: world.bot.userId, rooms: { general: '#general:localhost', random: '#hidden:localhost' } };
    });
    const hidden = '!hidden:localhost';
    const elsewhere = '!elsewhere:localhost';
    await w.env.start();
    await waitFor('the first sync', () => (stats(w.env).syncs ?? 0) >= 1);
    expect(w.fake.calls).toContain('GET /directory/room/#hidden:localhost');
    // Invite-only: the join at start was refused.
    expect(w.fake.membershipOf(hidden, w.bot.userId)).toBeUndefined();
    w.fake.invite(elsewhere, w.bot.userId, w.alice.userId);
    w.fake.invite(hidden, w.bot.userId, w.alice.userId);
    await waitFor('joined on invite', () => w.fake.membershipOf(hidden, w.bot.userId) === 'join');
    expect(w.fake.membershipOf(elsewhere, w.bot.userId)).toBe('invite');
    w.fake.say(hidden, w.alice.userId, 'welcome in');
    await waitFor('the line from the invite-only room', async () => (await relayed(w.env, w.reader, 'random')).length === 1);
    expect(await relayed(w.env, w.reader, 'random')).toEqual(['<Alice> welcome in']);
    await post(w.env.svc, 'random', 'bob', 'thanks');
    await waitFor('the answer in the room', () => botPosts(w, hidden).length === 1);
    expect(stats(w.env).invites_joined).toBe(1);
  });

  test('an end-to-end encrypted room gets no plain text: the line is dropped, loudly', async () => {
    const w = await setup((world) => {
      world.fake.addRoom('secret', { members: [world.alice.userId], encrypted: true });
      return { access_token: world.bot.token, user_id: world.bot.userId, rooms: { general: '#general:localhost', random: '!secret:localhost' } };
    });
    await w.env.start();
    await waitFor('the first sync', () => (stats(w.env).syncs ?? 0) >= 1);
    await post(w.env.svc, 'random', 'bob', 'not for an encrypted room in plain text');
    await post(w.env.svc, 'general', 'bob', 'fine here');
    await waitFor('the line dropped', () => stats(w.env).dropped === 1);
    await waitFor('the other line posted', () => botPosts(w, w.general).length === 1);
    expect(botPosts(w, '!secret:localhost')).toHaveLength(0);
    expect(w.env.log.lines.some((line) => line.level === 50 && /end-to-end encrypted/.test(String(line.msg)))).toBe(true);
  });

  test('in a gateway of two rooms: a reply answers the copy of its parent; an edit and a redaction follow the copy', async () => {
    const w = await setup(({ bot }) => ({ access_token: bot.token, user_id: bot.userId }), [
      { name: 'lobby', endpoints: [{ chat: 'general' }, { matrix: '#general:localhost' }, { matrix: '!random:localhost' }] },
    ]);
    await w.env.start();
    await waitFor('the first sync', () => (stats(w.env).syncs ?? 0) >= 1);
    const parent = w.fake.say(w.general, w.alice.userId, 'the plan');
    await waitFor('the copy in random', () => botPosts(w, w.random).length === 1);
    const copy = botPosts(w, w.random)[0]!;
    expect(copy.content.body).toBe('Alice: the plan');

    // A reply as clients used to send it, with the quoted fallback in the body: the fallback goes.
    w.fake.say(w.general, w.dave.userId, `> <${w.alice.userId}> the plan\n\nand a detail`, { 'm.relates_to': { 'm.in_reply_to': { event_id: parent.event_id } } });
    await waitFor('the reply in random', () => botPosts(w, w.random).length === 2);
    expect(botPosts(w, w.random)[1]!.content).toMatchObject({ body: 'dave: and a detail', 'm.relates_to': { 'm.in_reply_to': { event_id: copy.event_id } } });
    await waitFor('the reply in the chat', async () => (await relayed(w.env, w.reader, 'general')).length === 2);
    expect((await relayed(w.env, w.reader, 'general'))[1]).toBe('> Alice: the plan\n<dave> and a detail');

    w.fake.edit(w.general, w.alice.userId, parent.event_id, 'the new plan');
    await waitFor('the copy edited', () => botPosts(w, w.random).length === 3);
    expect(botPosts(w, w.random)[2]!.content).toMatchObject({
      body: '* Alice: the new plan', 'm.new_content': { body: 'Alice: the new plan' }, 'm.relates_to': { rel_type: 'm.replace', event_id: copy.event_id },
    });
    // A reaction taken back is a redaction too, of no message: nothing to relay.
    const reaction = w.fake.send(w.general, w.dave.userId, 'm.reaction', { 'm.relates_to': { rel_type: 'm.annotation', event_id: parent.event_id, key: '👍' } });
    w.fake.redact(w.general, w.dave.userId, reaction.event_id);
    w.fake.redact(w.general, w.alice.userId, parent.event_id);
    await waitFor('the copy redacted', () => w.fake.eventsIn(w.random).some((e) => e.type === 'm.room.redaction' && e.redacts === copy.event_id));
    await waitFor('the chat told', async () => (await relayed(w.env, w.reader, 'general')).length === 4);
    expect((await relayed(w.env, w.reader, 'general')).slice(2)).toEqual(['(edit) <Alice> the new plan', '* Alice deleted a message: "the new plan"']);
    expect(stats(w.env)).toMatchObject({ edited: 1, deleted: 1, dropped: 0 });
  });

  test('a refused token stops the relay only: the status says so, the bot goes on', async () => {
    const w = await setup(({ bot, random }) => ({ access_token: 'syt_not_a_token_the_server_knows', user_id: bot.userId, rooms: { random } }));
    await w.env.start();
    await waitFor('the relay failed', () => report(w.env).status.connection?.state === 'failed');
    expect(report(w.env).status.connection?.detail).toMatch(/M_UNKNOWN_TOKEN/);
    expect(w.env.log.lines.some((line) => line.level === 50 && /Matrix relay stopped/.test(String(line.msg)))).toBe(true);
    expect((await post(w.env.svc, 'random', 'bob', 'still here')).message).toBe('still here');
  });

  test('a password login is kept: a restart uses the kept token, a revoked one is replaced by a new login; a wrong password fails the relay only', async () => {
    const w = await setup(({ random }) => ({ user: 'groupwire', password: 'bot-password', rooms: { random } }));
    await w.env.start();
    await waitFor('the first sync', () => (stats(w.env).syncs ?? 0) >= 1);
    await w.env.supervisor!.stop();
    await w.env.start();
    // From the kept position the first /sync is a long poll: connected once logged in and the rooms joined.
    await waitFor('connected again', () => report(w.env).status.connection?.state === 'connected');
    expect(w.fake.logins).toBe(1);
    w.fake.say(w.random, w.alice.userId, 'after the restart');
    await waitFor('the line', async () => (await relayed(w.env, w.reader, 'random')).length === 1);

    // The token revoked while the relay runs: it logs in with the password again, on the same device, and goes on.
    w.fake.logoutAll(w.bot.userId);
    w.fake.say(w.random, w.alice.userId, 'said as the token was revoked');
    await waitFor('the second line', async () => (await relayed(w.env, w.reader, 'random')).length === 2);
    await post(w.env.svc, 'random', 'bob', 'answered with the new token');
    await waitFor('the post in the room', () => botPosts(w, w.random).length === 1);
    expect(w.fake.logins).toBe(2);
    expect(report(w.env).status.connection?.state).toBe('connected');
    await w.env.supervisor!.stop();

    w.env.writeConfig([{
      chats: [{ chat: 'general' }, { chat: 'random' }],
      plugins: [{ use: 'relay-matrix', with: { homeserver: w.fake.url, user: 'someone-else', password: 'wrong', rooms: { random: w.random } } }],
    }]);
    await w.env.start();
    await waitFor('the relay failed', () => report(w.env).status.connection?.state === 'failed');
    expect(report(w.env).status.connection?.detail).toMatch(/M_FORBIDDEN/);
  });
});

describe('relay-matrix units', () => {
  test('a line renders with every {name}, escaped in HTML, controls dropped, @room defused in any case; an action and a quote', () => {
    const line = renderLine({ template: '[{name}] {text} ({name})', msgtype: 'm.text', name: 'A<b>\u0007', text: 'x & y\nnext @ROOM' });
    expect(line.body).toBe('[A<b>] x & y\nnext @\u200bROOM (A<b>)');
    expect(line.formatted_body).toBe('[<b>A&lt;b&gt;</b>] x &amp; y<br>next @\u200bROOM (<b>A&lt;b&gt;</b>)');
    expect(renderLine({ template: '{name}: {text}', msgtype: 'm.notice', name: 'Bob', text: 'waves', action: true })).toMatchObject({ body: '* Bob waves', formatted_body: '* <b>Bob</b> <em>waves</em>' });
    const quoted = renderLine({ template: '{name}: {text}', msgtype: 'm.notice', name: 'Bob', text: 'yes', quote: { name: 'Carol', text: 'go <now>?' } });
    expect(quoted.body).toBe('> Carol: go <now>?\nBob: yes');
    expect(quoted.formatted_body).toBe('<blockquote><b>Carol</b>: go &lt;now&gt;?</blockquote><b>Bob</b>: yes');
    expect(editContent(quoted, '$x')).toMatchObject({ body: `* ${quoted.body}`, 'm.new_content': quoted, 'm.relates_to': { rel_type: 'm.replace', event_id: '$x' }, 'm.mentions': {} });
  });

  test('a reply\'s fallback quote is dropped from the text; a body that only looks like one is kept', () => {
    expect(plainFromMatrix('> <@a:x> first\n> second\n\nthe answer', true)).toBe('the answer');
    expect(plainFromMatrix('> <@a:x> quoted by hand', false)).toBe('> <@a:x> quoted by hand');
  });

  test('options: a token with its user id, or a user with a password; rooms by id or alias', () => {
    const base = { homeserver: 'https://matrix.example.org', rooms: { general: '#general:example.org', random: '!abc:example.org' } };
    expect(relayMatrixOptions.safeParse({ ...base, access_token: 'syt_secret_token', user_id: '@bot:example.org' }).success).toBe(true);
    expect(relayMatrixOptions.safeParse({ ...base, user: 'bot', password: 'pw' }).data).toMatchObject({ msgtype: 'm.notice', auto_join_invites: true, format: '{name}: {text}' });
    expect(relayMatrixOptions.safeParse(base).success).toBe(false);
    expect(relayMatrixOptions.safeParse({ ...base, access_token: 'syt_secret_token' }).success).toBe(false);
    expect(relayMatrixOptions.safeParse({ ...base, access_token: 'syt_secret_token', user_id: '@bot:example.org', password: 'pw' }).success).toBe(false);
    expect(relayMatrixOptions.safeParse({ ...base, user: 'bot', password: 'pw', rooms: { general: 'general' } }).success).toBe(false);
  });

  test('the txnId of a line is its key\'s, the same every time, and fits a URL path', () => {
    expect(txnIdOf('["k",1]')).toBe(txnIdOf('["k",1]'));
    expect(txnIdOf('["k",1]')).not.toBe(txnIdOf('["k",2]'));
    expect(txnIdOf('["k",1]')).toMatch(/^[\w-]{43}$/);
  });
});
