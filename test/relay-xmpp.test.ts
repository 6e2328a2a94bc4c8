import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { originIdOf, renderLine } from '../plugins/relay-xmpp/render.js';
import { HoldingProxy, Prosody, RoomUser } from './helpers/prosody.js';
import { chatOf, history, makeEnv, post, waitFor, type Env, type GatewaySpec } from './helpers/supervisor.js';

/**
 * relay-xmpp in a supervisor against the local service and a real Prosody 0.12 (test/helpers/prosody.ts):
 * STARTTLS verified against the test CA (`tls.ca_file`), rooms with archives (mod_muc_mam), stream
 * management (mod_smacks). One Prosody for the file; each test uses rooms of its own.
 */

const PASSWORDS = { bot: 'bot-secret', alice: 'alice-secret', mallory: 'mallory-secret' };

let prosody: Prosody;
let env: Env | undefined;
const users: RoomUser[] = [];
const proxies: HoldingProxy[] = [];

beforeAll(async () => {
  prosody = await Prosody.start(PASSWORDS);
});
afterAll(async () => {
  await prosody?.close();
});
afterEach(async () => {
  await env?.close();
  await Promise.all(users.splice(0).map((user) => user.close()));
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  env = undefined;
});

let roomCount = 0;
/** A room of this test's own (rooms persist in the one Prosody). */
const newRoom = () => prosody.room(`room${++roomCount}-${Date.now().toString(36)}`);

async function setup(room: string, extra: Record<string, unknown> = {}, gateways?: GatewaySpec[]): Promise<{ env: Env; reader: GroupsClient }> {
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    // Posts into the chat paced for a test that relays bursts, not for people.
    reply_rate: { per_second: 200, burst: 200 },
    plugins: [{
      use: 'relay-xmpp',
      with: {
        service: prosody.service, jid: `bot@${prosody.domain}`, password: PASSWORDS.bot, rooms: gateways ? {} : { general: room },
        tls: { ca_file: prosody.caFile }, reflection_timeout_ms: 5_000, ...extra,
      },
    }],
  }], gateways);
  return { env, reader: env.client('bob') };
}

async function alice(room: string): Promise<RoomUser> {
  const user = await RoomUser.join(prosody, 'alice', PASSWORDS.alice, room);
  users.push(user);
  return user;
}

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-xmpp']!;
const report = (e: Env) => e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-xmpp')!;

/** The bot's posts in the chat (what the relay brought from the room), oldest first. */
async function relayed(e: Env, reader: GroupsClient): Promise<string[]> {
  const chat = (await chatOf(reader, 'general'))!;
  const bot = String((await chatOf(e.client('bot'), 'general'))!.chat_sub!.user_id);
  return (await history(reader, chat.id)).filter((m: ChatMessage) => String(m.user_id) === bot).map((m) => m.message);
}

describe('relay-xmpp text', () => {
  test('a line for a room: XML-forbidden characters dropped, the name on one line, never a /me of the bot; ids from the key', () => {
    expect(renderLine('<{name}> {text}', 'Bob\nEvil', 'a\u0000b\r\nc\uffff\ud800')).toBe('<Bob Evil> ab\nc');
    expect(renderLine('{text}', 'Bob', '/me hacks the bot')).toBe('\u200b/me hacks the bot');
    expect(renderLine('* {name} {text}', 'Bob', 'waves')).toBe('* Bob waves');
    expect(originIdOf('line-1')).toMatch(/^gw-[\w-]{43}$/);
    expect(originIdOf('line-1')).toBe(originIdOf('line-1'));
    expect(originIdOf('line-1')).not.toBe(originIdOf('line-2'));
  });
});

describe('relay-xmpp', () => {
  test('both ways: a chat line in the room as <name> text, control characters gone; a room line in the chat as <alice> text; the bot\'s reflections not relayed back', async () => {
    const room = newRoom();
    const { env: e, reader } = await setup(room);
    await e.start();
    await waitFor('the relay in the room', () => stats(e).sessions === 1 && report(e).status.connection?.state === 'connected');
    const watcher = await alice(room);

    await post(e.svc, 'general', 'bob', 'hello\u0007 from \u0001the chat');
    await waitFor('the line in the room', () => watcher.from('groupwire').length === 1);
    expect(watcher.from('groupwire')).toEqual(['<Bob Member> hello from the chat']);

    await watcher.say('hi from XMPP');
    await watcher.say('/me waves');
    await waitFor('the room lines in the chat', async () => (await relayed(e, reader)).length === 2);
    expect(await relayed(e, reader)).toEqual(['<alice> hi from XMPP', '* alice waves']);
    // The relay's own post came back as a reflection and was not relayed: one line each way.
    await waitFor('the queue to XMPP empty', () => stats(e).queued === 0);
    expect(stats(e)).toMatchObject({ posted: 1, received: 2, dropped: 0 });
    expect(watcher.from('groupwire')).toHaveLength(1);
  });

  test('the bot\'s own answer goes into the room under the name the chat shows for it (<Demo Bot> pong), not its bots.yaml name (#36 item 12)', async () => {
    const room = newRoom();
    env = await makeEnv([]);
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [{ use: 'responder' }, {
        use: 'relay-xmpp',
        with: { service: prosody.service, jid: `bot@${prosody.domain}`, password: PASSWORDS.bot, rooms: { general: room }, tls: { ca_file: prosody.caFile } },
      }],
    }]);
    const e = env;
    await e.start();
    await waitFor('the relay in the room', () => stats(e).sessions === 1 && report(e).status.connection?.state === 'connected');
    const watcher = await alice(room);
    await watcher.say('!ping');
    await waitFor('the pong in the room', () => watcher.from('groupwire').some((line) => line.endsWith('pong')));
    expect(watcher.from('groupwire')).toEqual(['<Demo Bot> pong']);
    // The chat shows the same name for it.
    const reader = e.client('bob');
    const pong = (await history(reader, (await chatOf(reader, 'general'))!.id)).find((m) => m.message === 'pong');
    expect(pong?.display_name).toBe('Demo Bot');
  });

  test('a burst of 50 chat lines: each in the room once, in order', async () => {
    const room = newRoom();
    const { env: e } = await setup(room);
    await e.start();
    await waitFor('the relay in the room', () => report(e).status.connection?.state === 'connected');
    const watcher = await alice(room);
    await post(e.svc, 'general', 'bob', 'burst {n}', 50);
    await waitFor('50 lines in the room', () => watcher.from('groupwire').length >= 50, 30_000);
    await waitFor('the queue to XMPP empty', () => stats(e).queued === 0);
    expect(watcher.from('groupwire')).toEqual(Array.from({ length: 50 }, (_, k) => `<Bob Member> burst ${k + 1}`));
    const archived = (await watcher.archive()).filter((m) => m.nick === 'groupwire').map((m) => m.body);
    expect(archived).toEqual(watcher.from('groupwire'));
    expect(stats(e)).toMatchObject({ posted: 50, retries: 0, dropped: 0 });
  });

  test('what the room said while the relay was stopped comes from the room\'s archive, once each, in order', async () => {
    const room = newRoom();
    const { env: e, reader } = await setup(room);
    await e.start();
    await waitFor('the relay in the room', () => report(e).status.connection?.state === 'connected');
    const speaker = await alice(room);
    await speaker.say('before the stop');
    await waitFor('the first line', async () => (await relayed(e, reader)).length === 1);
    await e.supervisor!.stop();
    for (let n = 1; n <= 5; n += 1) await speaker.say(`while away ${n}`);
    await waitFor('five lines archived', async () => (await speaker.archive()).length >= 6);
    await e.start();
    await waitFor('all six in the chat', async () => (await relayed(e, reader)).length >= 6);
    await waitFor('the relay caught up', () => stats(e).caught_up === 5);
    expect(await relayed(e, reader)).toEqual(['<alice> before the stop', ...[1, 2, 3, 4, 5].map((n) => `<alice> while away ${n}`)]);
    // The join asked for no history: all five came from the archive, none twice.
    expect(stats(e)).toMatchObject({ received: 5, caught_up: 5 });
  });

  test('Prosody killed and started again while lines are queued: every line reaches the room once', { timeout: 60_000 }, async () => {
    const room = newRoom();
    const { env: e, reader } = await setup(room);
    await e.start();
    await waitFor('the relay in the room', () => report(e).status.connection?.state === 'connected');
    await post(e.svc, 'general', 'bob', 'before the crash');
    await waitFor('the first line sent', () => stats(e).posted === 1);
    await prosody.stop('SIGKILL');
    await post(e.svc, 'general', 'bob', 'queued {n}', 5);
    await waitFor('the relay sees the drop', () => report(e).status.connection?.state === 'connecting');
    await prosody.start();
    await waitFor('a new session', () => stats(e).sessions === 2, 20_000);
    await waitFor('the queue to XMPP empty', () => stats(e).queued === 0, 30_000);
    const watcher = await alice(room);
    const archived = (await watcher.archive()).filter((m) => m.nick === 'groupwire').map((m) => m.body);
    expect(archived).toEqual(['<Bob Member> before the crash', ...[1, 2, 3, 4, 5].map((n) => `<Bob Member> queued ${n}`)]);
    // And the room goes on both ways.
    await watcher.say('after the restart');
    await waitFor('the room line in the chat', async () => (await relayed(e, reader)).length === 1);
  });

  test('a refused password stops the relay only: its status says failed, the bot goes on', async () => {
    const { env: e } = await setup(newRoom(), { password: 'not-the-password' });
    await e.start();
    await waitFor('the relay failed', () => report(e).status.connection?.state === 'failed', 20_000);
    expect(report(e).status.connection?.detail).toMatch(/credentials/);
    expect(e.log.lines.some((line) => line.level === 50 && /XMPP relay stopped/.test(String(line.msg)))).toBe(true);
    // The password tried is in no log line.
    expect(JSON.stringify(e.log.lines)).not.toContain('not-the-password');
    const answer = await post(e.svc, 'general', 'bob', 'still here');
    expect(answer.message).toBe('still here');
  });

  test('TLS is verified: a server certificate no trusted CA issued stops the relay with a TLS failure', async () => {
    const { env: e } = await setup(newRoom(), { tls: { allow_self_signed: false } });
    await e.start();
    await waitFor('the relay failed', () => report(e).status.connection?.state === 'failed', 20_000);
    expect(report(e).status.connection?.detail).toMatch(/TLS with groupwire\.test failed/);
  });

  test('xmpps:// (direct TLS) with the same CA: the relay joins and relays', async () => {
    const room = newRoom();
    const { env: e } = await setup(room, { service: `xmpps://127.0.0.1:${prosody.tlsPort}` });
    await e.start();
    await waitFor('the relay in the room', () => stats(e).joins === 1);
    const watcher = await alice(room);
    await post(e.svc, 'general', 'bob', 'over direct TLS');
    await waitFor('the line in the room', () => watcher.from('groupwire').length === 1);
    expect(watcher.from('groupwire')).toEqual(['<Bob Member> over direct TLS']);
  });

  test('a tls.ca_file that cannot be read: the relay is failed from the start, the bot goes on', async () => {
    const { env: e } = await setup(newRoom(), { tls: { ca_file: './no-such-ca.pem' } });
    await e.start();
    expect(report(e).status.connection).toMatchObject({ state: 'failed', detail: expect.stringMatching(/cannot read tls\.ca_file .*no-such-ca\.pem: ENOENT/) });
    expect((await post(e.svc, 'general', 'bob', 'still here')).message).toBe('still here');
  });

  test('in a gateway of two rooms: the author\'s correction in one corrects the copy in the other (XEP-0308), the author\'s retraction retracts it (XEP-0424); someone else\'s do nothing', async () => {
    const one = newRoom();
    const two = newRoom();
    const { env: e } = await setup(one, {}, [{ name: 'lobby', endpoints: [{ chat: 'general' }, { xmpp: one }, { xmpp: two }] }]);
    await e.start();
    await waitFor('the relay in both rooms', () => report(e).status.connection?.state === 'connected');
    const speaker = await alice(one);
    const watcher = await RoomUser.join(prosody, 'alice', PASSWORDS.alice, two, 'alice-watching');
    users.push(watcher);
    const mallory = await RoomUser.join(prosody, 'mallory', PASSWORDS.mallory, one);
    users.push(mallory);
    const id = await speaker.say('the plan');
    await waitFor('the copy in room two', () => watcher.from('groupwire').length === 1);
    const copy = watcher.said.find((line) => line.nick === 'groupwire')!;
    expect(copy.body).toBe('<alice> the plan');
    const original = speaker.said.find((line) => line.id === id)!;
    // Prosody lets anyone send a correction or retraction naming anyone's message: only the author's count.
    await mallory.correct(id, 'mallory\'s plan');
    await mallory.retract(original.stanzaId!);
    await speaker.correct(id, 'the new plan');
    await waitFor('the copy corrected', () => watcher.said.some((line) => line.replaces === copy.id));
    expect(watcher.said.filter((line) => line.replaces === copy.id).map((line) => line.body)).toEqual(['<alice> the new plan']);
    expect(watcher.retracted).toEqual([]);
    await speaker.retract(original.stanzaId!);
    await waitFor('the copy retracted', () => watcher.retracted.includes(copy.stanzaId!));
    expect(stats(e)).toMatchObject({ edited: 1, deleted: 1, dropped: 0 });
  });

  test('kicked out of the room, the relay joins again and lines go on; banned, it stays out and its lines are dropped', async () => {
    const room = newRoom();
    // alice makes the room, so she owns it and may kick and ban.
    const owner = await alice(room);
    const { env: e } = await setup(room);
    await e.start();
    await waitFor('the relay in the room', () => stats(e).joins === 1);
    await owner.kick('groupwire');
    await waitFor('joined again', () => stats(e).joins === 2);
    await post(e.svc, 'general', 'bob', 'after the kick');
    await waitFor('the line in the room', () => owner.from('groupwire').includes('<Bob Member> after the kick'));
    await owner.ban(`bot@${prosody.domain}`);
    await waitFor('the relay out of the room', () => e.log.lines.some((line) => /will not have the relay/.test(String(line.msg)) || /removed from the XMPP room for good/.test(String(line.msg))));
    await post(e.svc, 'general', 'bob', 'while banned');
    await waitFor('the line dropped', () => stats(e).dropped === 1 && stats(e).queued === 0);
    expect(owner.from('groupwire')).toEqual(['<Bob Member> after the kick']);
    expect(stats(e).joins).toBe(2);
  });

  describe('a line in the room whose reflection never reached the relay', () => {
    async function sentButNotSeen(): Promise<{ e: Env; proxy: HoldingProxy; watcher: RoomUser }> {
      const room = newRoom();
      const proxy = await HoldingProxy.start(prosody.port);
      proxies.push(proxy);
      // No resend by timeout during the test: what is checked is the archive and the session, not the clock.
      const { env: e } = await setup(room, { service: proxy.service, reflection_timeout_ms: 120_000 });
      await e.start();
      await waitFor('the relay in the room', () => report(e).status.connection?.state === 'connected');
      const watcher = await alice(room);
      proxy.hold();
      await post(e.svc, 'general', 'bob', 'sent once');
      await waitFor('the line in the room', () => watcher.from('groupwire').length === 1);
      expect(stats(e)).toMatchObject({ sent: 1, posted: 0, queued: 1 });
      return { e, proxy, watcher };
    }

    test('the link drops: the session is resumed (XEP-0198), the reflection arrives, nothing is sent twice', async () => {
      const { e, proxy, watcher } = await sentButNotSeen();
      proxy.cut();
      await waitFor('resumed', () => (stats(e).resumes ?? 0) >= 1);
      await waitFor('the queue to XMPP empty', () => stats(e).queued === 0);
      await post(e.svc, 'general', 'bob', 'and the next');
      await waitFor('the next line', () => watcher.from('groupwire').length === 2);
      expect(watcher.from('groupwire')).toEqual(['<Bob Member> sent once', '<Bob Member> and the next']);
      expect(stats(e)).toMatchObject({ sessions: 1, sent: 2, posted: 2 });
    });

    test('the bot stops before it: on the next start the archive shows the line, which is not sent again', async () => {
      const { e, proxy, watcher } = await sentButNotSeen();
      proxy.cut();
      await e.supervisor!.stop();
      await e.start();
      await waitFor('the queue to XMPP empty', () => stats(e).queued === 0);
      // The new instance found its line in the archive and sent nothing.
      expect(stats(e)).toMatchObject({ sent: 0, posted: 1 });
      await post(e.svc, 'general', 'bob', 'and the next');
      await waitFor('the next line', () => watcher.from('groupwire').length === 2);
      expect(watcher.from('groupwire')).toEqual(['<Bob Member> sent once', '<Bob Member> and the next']);
      expect((await watcher.archive()).filter((m) => m.nick === 'groupwire').map((m) => m.body)).toEqual(watcher.from('groupwire'));
    });
  });
});
