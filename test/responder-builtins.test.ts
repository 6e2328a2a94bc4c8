import { afterEach, describe, expect, test } from 'vitest';
import { talk as startTalk, type Talk } from './helpers/responder-talk.js';
import { adminOk, chatOf, post, type BotSpec, type Env, waitFor } from './helpers/supervisor.js';

/** The responder's built-in commands with `use: responder` against the local service. */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

async function talk(bots: BotSpec[]): Promise<Talk> {
  const started = await startTalk(bots);
  env = started.env;
  return started;
}

const MODERATORS = { emails: ['mo@example.com'] };

describe('responder: built-in commands', () => {
  test('!ping, !help (what the caller may use), !topics, !search, and arguments checked', { timeout: 40_000 }, async () => {
    const { ask, silent, env } = await talk([{ chats: [{ chat: 'general' }], plugins: [{ use: 'responder', with: { moderators: MODERATORS } }] }]);
    expect(await ask('general', 'bob', '!ping')).toBe('pong');
    expect(await ask('general', 'bob', '!PING')).toBe('pong');

    const memberHelp = await ask('general', 'bob', '!help');
    expect(memberHelp.split('\n')).toEqual([
      'Commands you may use here:',
      '!help [command] — lists the commands you may use here',
      '!ping — answers pong',
      '!topics [n] — the latest topics of the group',
      '!search <query…> — searches the group\'s archive ("exact words", #hashtag, posterid:<id>)',
    ]);
    const moderatorHelp = await ask('general', 'mo', '!help');
    for (const command of ['!activity [n]', '!close [chat…]', '!reopen <chat…>', '!subject <text…>']) expect(moderatorHelp).toContain(command);
    expect(await ask('general', 'bob', '!help topics')).toBe('!topics [n] — the latest topics of the group\n  n: how many (from 1 to 20), optional');
    expect(await ask('general', 'bob', '!help activity')).toBe('There is no command !activity that you may use here.');

    const topics = await ask('general', 'carol', '!topics 2');
    expect(topics).toMatch(/^Latest topics in demo:\n1\. Release planning #announce — 2 messages, last \d{4}-\d\d-\d\d \d\d:\d\d\n2\. Meeting notes — 1 message, last .+$/);
    expect(await ask('general', 'bob', '!topics many')).toBe('n must be a whole number, not "many". Usage: !topics [n]');
    expect(await ask('general', 'bob', '!topics 50')).toBe('n must be at most 20. Usage: !topics [n]');

    const search = await ask('general', 'bob', '!search relay');
    expect(search.split('\n')[0]).toBe('2 results for relay:');
    expect(search).toMatch(/^1\. Re: Release planning #announce — Carol Member, .*: Looking forward to the relay!\n2\. Release planning #announce — Alice Owner, .*: The next release ships the IRC relay\.$/m);
    const phrase = await ask('general', 'alice', '!search "weekly meeting" #nothing');
    expect(phrase).toBe('Nothing in demo\'s archive matches "weekly meeting" #nothing.');
    expect(await ask('general', 'mo', '!search "weekly meeting"')).toMatch(/^1 result for "weekly meeting":\n1\. Meeting notes — Mo Moderator, .*: Notes from the weekly meeting\./);
    expect(await ask('general', 'carol', '!search')).toBe('query is missing. Usage: !search <query…>');
    // A service error is a short answer; the detail is logged.
    expect(await ask('general', 'carol', '!search -#announce'))
      .toBe('!search failed: The service refused: excluding a hashtag (-#tag) is not supported yet (bad_request: -#tag (exclude hashtag) is not yet implemented).');
    expect(env.log.withMessage('responder: command refused').some((l) => l.rule === '!search')).toBe(true);

    // Unknown commands, other prefixes and the bot's own words (from another session) get nothing.
    await silent('general', 'bob', '!nosuchcommand');
    await silent('general', 'bob', 'ping');
    await post(env.svc, 'general', 'bot', '!ping');
    await silent('general', 'carol', 'after the bot\'s own !ping');
  });

  test('!activity: only for moderators, and only when the bot may read the log', { timeout: 40_000 }, async () => {
    const { ask, env } = await talk([{ chats: [{ chat: 'general' }], plugins: [{ use: 'responder', with: { moderators: MODERATORS, builtins: { activity: { cooldown: {} } } } }] }]);
    expect(await ask('general', 'bob', '!activity')).toBe('Sorry, !activity is only for the group\'s moderators.');
    // The demo seed lets the bot read the log; without view_activity the answer says what is missing.
    await adminOk(env.svc, 'subscriptions', { group: 'demo', user: 'bot@example.com', role: 'member', grants: ['manage_chats'] });
    expect(await ask('general', 'mo', '!activity'))
      .toBe('!activity failed: The service refused the bot: only moderators can read the activity log (inadequate_permissions: view_activity).');
    await adminOk(env.svc, 'subscriptions', { group: 'demo', user: 'bot@example.com', role: 'member', grants: ['manage_chats', 'view_activity'] });
    const activity = await ask('general', 'mo', '!activity 3');
    const lines = activity.split('\n');
    expect(lines[0]).toBe('Recent activity in demo:');
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d member_joined: Demo Bot had the subscription changed$/);
  });

  test('!close, !reopen and !subject in a chat the bot owns; refused elsewhere and for others', { timeout: 40_000 }, async () => {
    const { ask, silent, env, bot } = await talk([{
      chats: [{ chat: 'general' }, { chat: 'standup', create: true, desc: '<p>Daily</p>' }],
      closed_chat_check_seconds: 1,
      plugins: [{ use: 'responder', with: { moderators: MODERATORS } }],
    }]);
    const standup = (await chatOf(bot, 'standup'))!;
    for (const who of ['mo', 'bob'] as const) await env.client(who).joinChat({ chat_id: standup.id });

    expect(await ask(standup.id, 'bob', '!close')).toBe('Sorry, !close is only for the owner of standup and the group\'s moderators.');
    expect(await ask('general', 'mo', '!close')).toBe('!close failed: only the owner of general may change it (the service allows no one else), and the bot does not own it.');
    expect(await ask('general', 'mo', '!reopen general')).toBe('general is open.');
    expect(await ask('general', 'mo', '!reopen nowhere')).toBe('!reopen failed: there is no chat nowhere in demo.');

    expect(await ask(standup.id, 'mo', '!subject Daily standup, 9:30')).toBe('The subject is now: Daily standup, 9:30');
    expect((await chatOf(bot, 'Daily standup, 9:30'))?.id).toBe(standup.id);

    expect(await ask(standup.id, 'mo', '!close')).toBe('Closing this chat, as Mo Moderator asked. !reopen Daily standup, 9:30 in another chat opens it again.');
    await waitFor('standup closed', async () => (await chatOf(bot, 'Daily standup, 9:30'))?.is_closed);
    const runner = env.supervisor!.bots[0]!.runners.find((r) => r.info.id === standup.id)!;
    await waitFor('the bot to see it closed', () => runner.connection.state === 'closed');
    expect(await ask('general', 'mo', '!close Daily standup, 9:30')).toBe('Daily standup, 9:30 is already closed.');

    expect(await ask('general', 'mo', `!reopen ${standup.id}`)).toBe('Reopened Daily standup, 9:30.');
    await waitFor('the bot back in standup', () => runner.connection.state === 'open', 20_000);
    await silent(standup.id, 'bob', 'back again');
  });
});
