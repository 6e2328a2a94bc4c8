import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The commands that read the group's content (#31 item 5), said on IRC (a real ngircd) through the
 * bot's chat `general` and `#general`: the bot reads with its own access, so someone on IRC, who is no
 * member of the group, gets a short refusal and nothing of the archive unless bots.yaml's
 * `reads_group` opens IRC; a member in the chat is answered as before.
 */

let server: IrcServer;
let alice: IrcWatcher;
let env: Env | undefined;

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
}, 60_000);

afterEach(async () => {
  await env?.close();
  env = undefined;
});

afterAll(async () => {
  alice?.close();
  await server?.close();
});

/** The bot with the IRC relay and a responder with these options; resolves once the bot is in #general. */
async function start(responder: Record<string, unknown>): Promise<Env> {
  const joinsBefore = alice.lines.filter((l) => /^:gwbot!\S+ JOIN :?#general/i.test(l)).length;
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [relayPlugin(server, { channels: { general: '#general' } }), { use: 'responder', with: responder }],
  }]);
  await env.start();
  await waitFor('the bot in #general', () => alice.lines.filter((l) => /^:gwbot!\S+ JOIN :?#general/i.test(l)).length > joinsBefore, 30_000);
  return env;
}

const chatLines = async (current: Env) => {
  const carol = current.client('carol');
  return (await history(carol, (await chatOf(carol, 'general'))!.id)).map((m) => m.message);
};

/** What the seeded archive would show: a topic's subject, a search hit's text. */
const ARCHIVE = /Release planning|Meeting notes|Looking forward to the relay|result/;

describe('commands that read the group, said on IRC', () => {
  test('refused by default with a short reason (once per cooldown); nothing of the archive shown; a member is answered', { timeout: 90_000 }, async () => {
    const current = await start({});
    const refusal = (command: string) => `Sorry, !${command} shows what only members of demo may read; it is not answered to irc here.`;

    alice.send('PRIVMSG #general :!search relay');
    await waitFor('the !search refusal', async () => (await chatLines(current)).includes(refusal('search')), 30_000);
    alice.send('PRIVMSG #general :!topics');
    await waitFor('the !topics refusal', async () => (await chatLines(current)).includes(refusal('topics')), 30_000);
    // Asked again at once: no second refusal (and no answer).
    alice.send('PRIVMSG #general :!search relay');
    await waitFor('the second !search in the chat', async () => (await chatLines(current)).filter((t) => t === '<alice> !search relay').length === 2, 30_000);
    // A member in the chat is answered as before.
    await post(current.svc, 'general', 'bob', '!search relay');
    await waitFor('bob\'s answer', async () => (await chatLines(current)).some((t) => t.startsWith('2 results for relay:')), 30_000);
    await post(current.svc, 'general', 'bob', '!topics 1');
    await waitFor('bob\'s topics', async () => (await chatLines(current)).some((t) => t.startsWith('Latest topics in demo:')), 30_000);
    // !help on IRC does not offer them.
    alice.send('PRIVMSG #general :!help');
    const help = await waitFor('the help for alice', async () => (await chatLines(current)).find((t) => t.startsWith('Commands you may use here:')), 30_000);
    expect(help).not.toMatch(/!search|!topics/);

    const lines = await chatLines(current);
    expect(lines.filter((t) => t.startsWith('Sorry, !search'))).toEqual([refusal('search')]);
    // The only answers with archive content are bob's.
    const answers = lines.filter((t) => ARCHIVE.test(t) && !t.startsWith('<'));
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatch(/^2 results for relay:/);
    expect(answers[1]).toMatch(/^Latest topics in demo:\n1\. /);
    expect(current.log.withMessage('responder: reads the group, not answered on this side').map((l) => l.side)).toEqual(['irc', 'irc', 'irc']);
  });

  test('answered on IRC when reads_group lists it', { timeout: 90_000 }, async () => {
    const current = await start({ reads_group: ['irc'], builtins: { search: { cooldown: {} } } });
    alice.send('PRIVMSG #general :!search relay');
    await waitFor('the hits in the chat', async () => (await chatLines(current)).some((t) => t.startsWith('2 results for relay:')), 30_000);
    await waitFor('the hits on IRC', () => alice.texts('#general', 'gwbot').some((t) => t.includes('2 results for relay')), 30_000);
    alice.send('PRIVMSG #general :!topics 1');
    await waitFor('the topics', async () => (await chatLines(current)).some((t) => /^Latest topics in demo:\n1\. /.test(t)), 30_000);
    expect((await chatLines(current)).filter((t) => t.startsWith('Sorry'))).toEqual([]);
  });
});
