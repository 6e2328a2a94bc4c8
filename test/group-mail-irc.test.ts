import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EMAILS } from './helpers/service.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { adminOk, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * group-mail in a gateway with an IRC channel on a real ngircd (issue #19, part 3): IRC has no threads,
 * so a new topic is one line under its author's name and each reply in it names the topic it answers
 * ("re: <subject>", with no quote of the announcement before it), once each, in order; nothing said on
 * IRC goes into the group (the endpoint is `in`).
 */

let server: IrcServer;
let env: Env;
let alice: IrcWatcher;

const onIrc = () => alice.said.filter((s) => s.command === 'PRIVMSG' && s.target === '#news' && /^gwbot_?$/.test(s.nick)).map((s) => s.text);
const mailStats = () => (env.supervisor!.stats() as any).bot0.plugins['group-mail'];

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#news']);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [
      relayPlugin(server, { channels: {} }),
      { use: 'group-mail', with: { poll: { min: '100ms', max: '400ms' }, follow: 'messages' } },
    ],
  }], [{ name: 'news', endpoints: [{ mail: 'demo', direction: 'in' }, { chat: 'general' }, { irc: '#news' }] }]);
  await env.start();
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#news/i);
  await waitFor('the first reads of the archive', () => mailStats().polls >= 2);
}, 60_000);

afterAll(async () => {
  alice?.close();
  await env?.close();
  await server?.close();
});

describe('group-mail in a gateway with IRC', () => {
  test('a topic is announced on IRC once; each reply follows once, in order, as "re: <subject>"', async () => {
    const made = await adminOk(env.svc, 'topics', { group: 'demo', user: EMAILS.alice, subject: 'Picnic on Saturday', body: '<p>Bring <b>food</b>!</p><blockquote>an old quote</blockquote>', html: true });
    await adminOk(env.svc, 'messages', { topic: String(made.topic.id), user: EMAILS.bob, body: 'I will bring bread' });
    await adminOk(env.svc, 'messages', { topic: String(made.topic.id), user: EMAILS.carol, body: 'And I some cheese' });
    const lines = () => onIrc().filter((text) => !text.endsWith('marker after the mail'));
    await waitFor('the topic and both replies on IRC', () => lines().length >= 3);
    // A marker said in the chat after them: once it is on IRC, everything before it has arrived too.
    alice.send('PRIVMSG #news :!nothing from IRC into the group');
    const marker = 'marker after the mail';
    await post(env.svc, 'general', 'bob', marker);
    await waitFor('the marker on IRC', () => onIrc().some((text) => text.endsWith(marker)));

    const said = lines();
    expect(said).toHaveLength(3);
    // The author's name is broken with a zero-width space so that it pings nobody on IRC.
    expect(said[0]).toMatch(/^<A\u200blice O\u200bwner> New topic: Picnic on Saturday — Bring food! https:\/\/\S+\/g\/demo\/message\/\d+$/);
    // A reply: IRC has no threads, and the line names its topic, so no quote of the announcement goes first.
    expect(said[1]).toMatch(/^<B\u200bob M\u200bember> re: Picnic on Saturday — I will bring bread https:\/\/\S+\/message\/\d+$/);
    expect(said[2]).toMatch(/^<C\u200barol M\u200bember> re: Picnic on Saturday — And I some cheese /);
    expect(mailStats()).toMatchObject({ announced: 1, replies_relayed: 2, posted_to_group: 0 });
    // The endpoint only speaks: the line said on IRC stays out of the group.
    const newest = (await env.client('carol').getMessages({ group_name: 'demo', limit: 3 })).data;
    expect(newest.map((m) => m.body).join('\n')).not.toContain('nothing from IRC');
  });
});
