import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, post, probes, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The relay against ngircd (no IRCv3 echo-message there: lines are confirmed by a PING sent after
 * them): both directions, names, formatting, multi-line and long messages, injection attempts, what is
 * never relayed, a kick, and a burst of 200. One server, one watcher (alice, first in the channels, so
 * an operator there) and one supervisor for the whole file; each test says something new.
 */

let server: IrcServer;
let env: Env;
let alice: IrcWatcher;
let squatter: IrcWatcher;

const CAROL = '<C\u200barol M\u200bember>';
const texts = async (subject: string) => {
  const carol = env.client('carol');
  return (await history(carol, (await chatOf(carol, subject))!.id)).map((m) => m.message);
};
const relayStats = () => (env.supervisor!.stats() as any).bot0.plugins['relay-irc'] as Record<string, number>;
/** What the relay (gwbot or gwbot_) said in a channel, as alice saw it. */
const onIrc = (channel: string) => alice.said.filter((s) => s.command === 'PRIVMSG' && s.target === channel && /^gwbot_?$/.test(s.nick)).map((s) => s.text);

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general', '#ops']);
  // Someone already has the relay's nick when it connects.
  squatter = await IrcWatcher.connect(server.port, 'gwbot', ['#general']);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    plugins: [
      relayPlugin(server, { channels: { general: '#general', random: '#ops' }, ignore_nicks: ['OtherBot'] }),
      { use: 'responder' },
      { use: env.probe('after') },
    ],
  }]);
  await env.start();
  await alice.waitForLine(/^:gwbot_!\S+ JOIN :?#ops/i);
}, 60_000);

afterAll(async () => {
  alice?.close();
  squatter?.close();
  await env?.close();
  await server?.close();
});

describe('relay-irc on ngircd', () => {
  test('nick in use: the relay takes "gwbot_", relays under it, and takes "gwbot" back once it is free', async () => {
    await post(env.svc, 'general', 'carol', 'while I am gwbot_');
    await waitFor('the line from gwbot_', () => alice.said.some((s) => s.nick === 'gwbot_' && s.text === `${CAROL} while I am gwbot_`));
    squatter.close();
    await alice.waitForLine(/^:gwbot_!\S+ NICK :?gwbot$/);
    await post(env.svc, 'general', 'carol', 'hello IRC');
    await waitFor('the line from gwbot', () => alice.said.some((s) => s.nick === 'gwbot' && s.text === `${CAROL} hello IRC`));
  });

  test('each chat goes to its own channel', async () => {
    await post(env.svc, 'random', 'bob', 'over in random');
    await waitFor('the line in #ops', () => onIrc('#ops').includes('<B\u200bob M\u200bember> over in random'));
    expect(onIrc('#general')).not.toContain('<B\u200bob M\u200bember> over in random');
  });

  test('IRC to chat: "<nick> text", ACTION as "* nick text", colour and formatting codes stripped', async () => {
    alice.send('PRIVMSG #general :hi from IRC');
    alice.send('PRIVMSG #general :\x01ACTION waves\x01');
    alice.send('PRIVMSG #general :\x0304,12red on blue\x03 and \x02bold\x02 \x1ditalic\x1d \x1funder\x1f \x16rev\x16 \x11mono\x11 \x1estrike\x1e \x04ff0000hex\x04\x0f done');
    alice.send('PRIVMSG #ops :in ops');
    await waitFor('the lines in the chats', async () => (await texts('general')).includes('<alice> red on blue and bold italic under rev mono strike hex done') &&
      (await texts('random')).includes('<alice> in ops'));
    const general = await texts('general');
    expect(general).toContain('<alice> hi from IRC');
    expect(general).toContain('* alice waves');
    // A gateway never sends a line back to where it was said.
    expect(onIrc('#general').filter((text) => text.includes('alice'))).toEqual([]);
  });

  test('not relayed: NOTICEs, CTCP, private messages, ignore_nicks (nor seen by the chain)', async () => {
    const other = await IrcWatcher.connect(server.port, 'OtherBot', ['#general']);
    alice.send('NOTICE #general :a notice');
    alice.send('PRIVMSG #general :\x01VERSION\x01');
    alice.send('PRIVMSG #general :\x01PING 12345\x01');
    alice.send('PRIVMSG gwbot :a private word');
    other.send('PRIVMSG #general :from the other bot');
    alice.send('PRIVMSG #general :marker after the ignored ones');
    await waitFor('the marker', async () => (await texts('general')).includes('<alice> marker after the ignored ones'));
    const general = (await texts('general')).join('\n');
    for (const ignored of ['a notice', 'VERSION', '12345', 'a private word', 'from the other bot']) expect(general).not.toContain(ignored);
    // ngircd does not answer CTCP itself, and the relay sends nothing back for it either.
    expect(alice.said.filter((s) => s.command === 'NOTICE' && s.nick.startsWith('gwbot'))).toEqual([]);
    other.close();
    const seen = probes().seen.after!.map((entry) => entry.text).join('\n');
    for (const ignored of ['a notice', 'VERSION', '12345', 'a private word', 'from the other bot']) expect(seen).not.toContain(ignored);
  });

  test('commands from IRC are answered once, on both sides, by the access rules: "!ping" is, "!close" is not allowed', async () => {
    alice.send('PRIVMSG #general :!close');
    alice.send('PRIVMSG #general :!ping');
    await waitFor('the relayed !ping', async () => (await texts('general')).includes('<alice> !ping'));
    expect(await texts('general')).toContain('<alice> !close');
    await waitFor('a pong for alice', async () => (await texts('general')).includes('pong'));
    await post(env.svc, 'general', 'carol', '!ping');
    await waitFor('a pong for carol', async () => (await texts('general')).filter((text) => text === 'pong').length === 2);
    // A marker through the whole chain: nothing else is on its way.
    const marker = await post(env.svc, 'general', 'bob', 'marker after the pings');
    await waitFor('the marker seen by the last plugin', () => probes().seen.after!.some((s) => s.msgNum === marker.msg_num));
    await waitFor('the marker on IRC', () => onIrc('#general').includes('<B\u200bob M\u200bember> marker after the pings'));
    expect((await texts('general')).filter((text) => text === 'pong')).toHaveLength(2);
    // The bot's own voice goes to IRC like a member's; carol's command too (alice's stays on IRC, where she said it).
    expect(onIrc('#general').filter((text) => / pong$/.test(text))).toHaveLength(2);
    expect(onIrc('#general')).toContain(`${CAROL} !ping`);
    expect((await chatOf(env.client('carol'), 'general'))!.is_closed).toBe(false);
  });

  test('multi-line messages become one IRC line each, blank lines left out; HTML becomes text', async () => {
    await post(env.svc, 'general', 'carol', 'first line\nsecond line\r\n\r\n  indented third\ttabbed');
    await post(env.svc, 'general', 'carol', '<p>Hello <b>world</b> &amp; all</p><p>see <a href="https://example.com/x">the docs</a><br>bye</p>');
    await waitFor('the HTML lines', () => onIrc('#general').includes(`${CAROL} bye`));
    const lines = onIrc('#general');
    const at = lines.indexOf(`${CAROL} first line`);
    expect(lines.slice(at, at + 6)).toEqual([
      `${CAROL} first line`, `${CAROL} second line`, `${CAROL}   indented third tabbed`,
      `${CAROL} Hello world & all`, `${CAROL} see the docs (https://example.com/x)`, `${CAROL} bye`,
    ]);
  });

  test('a long message is cut into lines within IRC\'s limit, never inside a UTF-8 character or an emoji', async () => {
    const words = Array.from({ length: 150 }, (_, i) => `wörd${i}👍🏽`);
    const long = `${words.join(' ')} ${'x'.repeat(600)}ü${'€'.repeat(300)}`;
    await post(env.svc, 'general', 'carol', long);
    await waitFor('the end of the long message', () => onIrc('#general').some((text) => text.endsWith('€€€')));
    const lines = onIrc('#general').filter((text) => text.startsWith(`${CAROL} wörd`) || /^<C\u200barol M\u200bember> [x€ü]/.test(text));
    const pieces = lines.map((text) => text.slice(CAROL.length + 1));
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) {
      // What ngircd passed on: at most 512 bytes with its prefix, so the text stayed within our room.
      expect(Buffer.byteLength(`:gwbot!~groupwire@127.0.0.1 PRIVMSG #general :${line}\r\n`)).toBeLessThanOrEqual(512);
      expect(line).not.toContain('\ufffd');
    }
    // Cut at spaces where there are any, else anywhere between characters: nothing lost or changed.
    expect(pieces.join(' ').replace(/ /g, '')).toBe(long.replace(/ /g, ''));
    expect(pieces.filter((piece) => piece.includes('👍')).every((piece) => !/👍(?!🏽)/.test(piece))).toBe(true);
  });

  test('CR, LF, NUL and CTCP markers from the chat never become IRC commands: they arrive as text lines', async () => {
    const attack = 'innocent\r\nQUIT :pwned\rPRIVMSG #ops :injected\u0000NICK evil\u2028JOIN #evil\n\u0001VERSION\u0001 \u0007bell';
    await post(env.svc, 'general', 'carol', attack);
    await waitFor('the last line of it', () => onIrc('#general').includes(`${CAROL} VERSION bell`));
    const lines = onIrc('#general');
    const at = lines.indexOf(`${CAROL} innocent`);
    expect(lines.slice(at, at + 5)).toEqual([
      `${CAROL} innocent`, `${CAROL} QUIT :pwned`, `${CAROL} PRIVMSG #ops :injectedNICK evil`, `${CAROL} JOIN #evil`, `${CAROL} VERSION bell`,
    ]);
    // Still there, still gwbot, nothing said in #ops, #evil never joined.
    expect(onIrc('#ops').join('\n')).not.toContain('injected');
    expect(alice.lines.filter((line) => /^:gwbot!~?groupwire@\S+ (QUIT|NICK)/.test(line))).toEqual([]);
    expect(relayStats().irc_connected).toBe(1);
    expect(relayStats().unsafe_lines_guarded).toBe(0);
  });

  test('kicked from the channel: the relay joins again and what was said meanwhile arrives, in order', async () => {
    alice.send('KICK #general gwbot :out you go');
    await alice.waitForLine(/^:alice!\S+ KICK #general gwbot/);
    for (let i = 1; i <= 3; i += 1) await post(env.svc, 'general', 'carol', `after the kick ${i}`);
    await waitFor('the lines after the rejoin', () => onIrc('#general').includes(`${CAROL} after the kick 3`));
    const lines = onIrc('#general').filter((text) => text.includes('after the kick'));
    expect(lines).toEqual([1, 2, 3].map((i) => `${CAROL} after the kick ${i}`));
    expect(alice.lines.filter((line) => /^:gwbot!\S+ JOIN :?#general/i.test(line)).length).toBeGreaterThanOrEqual(1);
  });

  test('a burst of 200 chat messages arrives complete and in order, without the relay being thrown out', async () => {
    const before = relayStats();
    await post(env.svc, 'general', 'bob', 'burst {n}', 200);
    await waitFor('all 200 on IRC', () => onIrc('#general').includes('<B\u200bob M\u200bember> burst 200'), 30_000);
    const burst = onIrc('#general').filter((text) => text.startsWith('<B\u200bob M\u200bember> burst '));
    expect(burst).toEqual(Array.from({ length: 200 }, (_, i) => `<B\u200bob M\u200bember> burst ${i + 1}`));
    const after = relayStats();
    expect(after.irc_disconnects).toBe(before.irc_disconnects);
    await waitFor('the queue empty', () => relayStats().queued_lines === 0);
    expect(relayStats().to_irc_dropped_refused).toBe(0);
  });
});
