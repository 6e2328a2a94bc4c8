import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * IRCv3 replies (`+draft/reply`) through a gateway of a chat and two channels of one relay, on inspircd
 * with message tags: a reply said on IRC is shown as a reply in the chat (its quote line) and goes to
 * the other channel tagged as a reply to the relay's copy there, and the other way round. The relay's
 * copies are known to the message map by their msgid.
 */

let server: IrcServer;
let env: Env;
let alice: IrcWatcher;

/** The relay's lines in `channel` as alice saw them (raw, tags included). */
const fromRelay = (channel: string) => alice.lines
  .filter((line) => new RegExp(`^@\\S+ :gwbot!\\S+ PRIVMSG ${channel} :`).test(line))
  .map((line) => line.replaceAll('\u200b', '')); // the anti-ping zero-width spaces in names
const tagOf = (line: string, tag: string) => new RegExp(`^@(?:\\S*;)?${tag.replace(/[+/]/g, '\\$&')}=([^; ]+)`).exec(line)?.[1];
const chatTexts = async () => {
  const carol = env.client('carol');
  return (await history(carol, (await chatOf(carol, 'general'))!.id)).map((m) => m.message);
};
/** alice says `text` in `channel` (as a reply to `replyTo`); answers the msgid of her line, from its echo. */
async function say(channel: string, text: string, replyTo?: string): Promise<string> {
  alice.send(`${replyTo ? `@+draft/reply=${replyTo} ` : ''}PRIVMSG ${channel} :${text}`);
  const echo = await alice.waitForLine(new RegExp(`:alice!\\S+ PRIVMSG ${channel} :${text}$`));
  return tagOf(echo, 'msgid')!;
}

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'inspircd', history: true });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#a', '#b'], undefined, ['message-tags', 'echo-message']);
  env = await makeEnv([]);
  env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(server, { channels: {} })] }],
    [{ name: 'lobby', endpoints: [{ chat: 'general' }, { irc: '#a' }, { irc: '#b' }] }]);
  await env.start();
  await alice.waitForLine(/^\S* ?:gwbot!\S+ JOIN :?#b/i);
}, 60_000);

afterAll(async () => {
  alice?.close();
  await env?.close();
  await server?.close();
});

describe('relay-irc: IRCv3 replies through a gateway', () => {
  test('a reply on IRC quotes what it answers in the chat and is a +draft/reply to the relay\'s copy in the other channel, both ways', { timeout: 30_000 }, async () => {
    const question = await say('#a', 'what time is the meeting');
    const copy = await waitFor('the question relayed to #b', () => fromRelay('#b').find((line) => line.endsWith('<alice> what time is the meeting')));
    const copyId = tagOf(copy, 'msgid');
    expect(copyId).toBeTruthy();
    expect(tagOf(copy, '+draft/reply')).toBeUndefined();

    await say('#a', 'at noon', question);
    const answer = await waitFor('the answer relayed to #b', () => fromRelay('#b').find((line) => line.includes('at noon')));
    expect(tagOf(answer, '+draft/reply')).toBe(copyId);
    // IRC clients that do not show replies still see what it answers.
    expect(answer).toMatch(/<alice> \(re alice: what time is the meeting\) at noon$/);
    await waitFor('the answer in the chat, quoting the question', async () =>
      (await chatTexts()).includes('> alice: what time is the meeting\n<alice> at noon'));

    // Answering the relay's copy in #b is answering the question where it was said in #a.
    await say('#b', 'noon works', copyId);
    const back = await waitFor('the reply relayed to #a', () => fromRelay('#a').find((line) => line.includes('noon works')));
    expect(tagOf(back, '+draft/reply')).toBe(question);
  });
});
