import { afterEach, describe, expect, test } from 'vitest';
import type { PluginEnv } from '../src/index.js';
import { addBuiltins } from '../plugins/responder/define.js';
import { Responder } from '../plugins/responder/responder.js';
import { talk as startTalk, type Talk } from './helpers/responder-talk.js';
import { chatOf, type BotSpec, type Env, waitFor } from './helpers/supervisor.js';

/**
 * A built-in that acts on a chat it names checks the caller's rights on that chat, not on the chat
 * where the command is said (#31 item 4): alice owns `random`, the bot owns `botowned`, and alice's
 * ownership of `random` must not let her close `botowned` from there.
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const MODERATORS = { emails: ['mo@example.com'] };

/** The bot in general (mo's), random (alice's) and botowned (its own); alice and mo also in botowned. */
async function setUp(): Promise<Talk> {
  const bots: BotSpec[] = [{
    chats: [{ chat: 'general' }, { chat: 'random' }, { chat: 'botowned', create: true }],
    closed_chat_check_seconds: 1,
    plugins: [{ use: 'responder', with: { moderators: MODERATORS } }],
  }];
  const started = await startTalk(bots);
  env = started.env;
  const botowned = (await chatOf(started.bot, 'botowned'))!;
  for (const who of ['alice', 'mo'] as const) await started.env.client(who).joinChat({ chat_id: botowned.id });
  return started;
}

describe('responder: a command that names a chat checks the caller\'s rights on that chat', () => {
  test('!close and !reopen: the owner of the chat where it is said may not act on another chat', { timeout: 60_000 }, async () => {
    const { ask, bot } = await setUp();
    const state = async () => (await chatOf(bot, 'botowned'))!.is_closed;

    // alice owns random, not botowned: refused, and botowned stays open.
    expect(await ask('random', 'alice', '!close botowned')).toBe('Sorry, !close is only for the owner of botowned and the group\'s moderators.');
    expect(await state()).toBe(false);
    // The owner of the chat named passes the check (the service then refuses the bot, which does not own random).
    expect(await ask('botowned', 'alice', '!close random'))
      .toBe('!close failed: only the owner of random may change it (the service allows no one else), and the bot does not own it.');
    // A moderator may.
    expect(await ask('random', 'mo', '!close botowned')).toBe('Closed botowned.');
    await waitFor('botowned closed', state);

    expect(await ask('random', 'alice', '!reopen botowned')).toBe('Sorry, !reopen is only for the owner of botowned and the group\'s moderators.');
    expect(await state()).toBe(true);
    // Said in mo's general, about alice's own random: her rights on random count.
    expect(await ask('general', 'alice', '!reopen random')).toBe('random is open.');
    expect(await ask('random', 'mo', '!reopen botowned')).toBe('Reopened botowned.');
    expect(await state()).toBe(false);
  });

  test('every built-in that takes a target refuses a caller without rights on that target', { timeout: 90_000 }, async () => {
    // The built-ins as the plugin adds them (the announce poster is made, never used here).
    const listing = new Responder();
    addBuiltins(listing, true, { client: undefined, store: undefined, log: undefined, bot: undefined, storage: undefined } as unknown as PluginEnv, 'UTC');
    const targeted = listing.commands().filter((c) => c.spec.target);
    expect(targeted.map((c) => c.name)).toEqual(expect.arrayContaining(['close', 'reopen', 'subject']));

    const { ask, bot } = await setUp();
    const before = await chatOf(bot, 'botowned');
    for (const { name, spec } of targeted) {
      const chatArg = spec.target!.chatArg;
      // Named: said in alice's own random. Not named (this chat): said in botowned, where alice is a member only.
      const where = chatArg ? 'random' : 'botowned';
      const args = (spec.args ?? []).filter((a) => a.name === chatArg || !(a.optional || a.default !== undefined))
        .map((a) => (a.name === chatArg ? 'botowned' : a.type === 'int' || a.type === 'number' ? '1' : 'x'));
      const said = [`!${name}`, ...args].join(' ');
      expect(await ask(where, 'alice', said), said).toMatch(new RegExp(`^Sorry, !${name} is only for the owner of botowned`));
      const after = await chatOf(bot, 'botowned');
      expect({ subject: after?.subject, closed: after?.is_closed }, said).toEqual({ subject: before?.subject, closed: before?.is_closed });
    }
  });
});
