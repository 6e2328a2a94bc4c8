import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import type { GroupsClient } from '../src/api/index.js';
import type { DemoUser } from './helpers/service.js';
import { chatOf, history, makeEnv, post, type BotSpec, type Env, waitFor } from './helpers/supervisor.js';

/**
 * bots.yaml rules (command, keyword, regex) with templates, who may use them, cooldowns per rule,
 * user and chat; the code API (a plugin built with defineResponder); failing commands; splitting.
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const RESPONDER = pathToFileURL(resolve(fileURLToPath(new URL('..', import.meta.url)), 'plugins/responder/index.ts')).href;

/** A plugin of a user's own, built on the responder's code API. */
const CUSTOM_PLUGIN = `import { defineResponder, CommandError } from ${JSON.stringify(RESPONDER)};
export default defineResponder({
  name: 'custom',
  setup(r) {
    r.command('boom', { description: 'always fails' }, () => { throw new Error('kaboom'); });
    r.command('nope', () => { throw new CommandError('that cannot be done today.'); });
    r.command('sum', { args: [{ name: 'a', type: 'number' }, { name: 'b', type: 'number' }] }, ({ args }) => String(args.a + args.b));
    r.command('long', { args: [{ name: 'lines', type: 'int', default: 300 }] },
      ({ args }) => Array.from({ length: args.lines }, (_, i) => 'line ' + (i + 1) + ' ' + 'x'.repeat(60)).join('\\n'));
    r.command('emoji', () => 'a' + '\\u{1F600}'.repeat(6000));
    r.hears(/\\bthanks?\\b/i, { name: 'thanks', cooldown: { chat: 3_600_000 } }, ({ user }) => "you're welcome, " + user);
  },
});
`;

interface Talk {
  ask(chat: string, who: DemoUser, text: string, parts?: number): Promise<string[]>;
  silent(chat: string, who: DemoUser, text: string): Promise<void>;
}

async function talk(current: Env, bot: GroupsClient): Promise<Talk> {
  const botId = String((await bot.login()).id);
  const ids = new Map<string, string>();
  const botAfter = async (chat: string, msgNum: number) => {
    if (!ids.has(chat)) ids.set(chat, (await chatOf(bot, chat))!.id);
    return (await history(bot, ids.get(chat)!)).filter((m) => m.msg_num > msgNum && m.user_id === botId);
  };
  return {
    async ask(chat, who, text, parts = 1) {
      const asked = await post(current.svc, chat, who, text);
      const answers = await waitFor(`the answer to ${text}`, async () => {
        const after = await botAfter(chat, asked.msg_num);
        return after.length >= parts ? after : undefined;
      }, 20_000);
      return answers.map((m) => m.message);
    },
    async silent(chat, who, text) {
      const said = await post(current.svc, chat, who, text);
      await post(current.svc, chat, who, '!ping');
      const first = await waitFor(`the pong after ${text}`, async () => (await botAfter(chat, said.msg_num))[0], 20_000);
      expect(first.message, `the bot answered ${text}`).toBe('pong');
    },
  };
}

async function setUp(withOptions: (ids: Record<'alice' | 'carol', string>) => Record<string, unknown>): Promise<Talk & { env: Env }> {
  env = await makeEnv([]);
  const ids = { alice: String((await env.client('alice').login()).id), carol: String((await env.client('carol').login()).id) };
  writeFileSync(join(env.dir, 'custom.mjs'), CUSTOM_PLUGIN);
  const spec: BotSpec = { chats: [{ chat: 'general' }, { chat: 'random' }], plugins: [{ use: './custom.mjs', with: { builtins: true, ...withOptions(ids) } }] };
  env.writeConfig([spec]);
  await env.start();
  return { env, ...(await talk(env, env.client('bot'))) };
}

describe('responder: rules from bots.yaml and the code API', () => {
  test('command, keyword and regex rules with templates; arguments; the code API', { timeout: 40_000 }, async () => {
    const { ask, silent } = await setUp(() => ({
      rules: [
        {
          command: 'greet', args: [{ name: 'who', type: 'rest', optional: true }], description: 'says hello',
          reply: 'Hello {{args.who | default: user}}! You are in {{chat}} ({{group}}); you said "{{args}}". {{"{{"}}literal}}',
        },
        { keyword: ['coffee', 'tea'], reply: '☕ {{match | upper}} for {{user}}' },
        { regex: String.raw`^deploy (?<app>\w+) to (\w+)$`, flags: 'i', reply: 'Deploying {{match.app}} to {{match.2}} for {{user_name}} (msg {{msg_num}})' },
        { command: 'here', chats: ['random'], reply: 'only in {{chat}}' },
      ],
    }));
    expect(await ask('general', 'bob', '!greet')).toEqual(['Hello Bob Member! You are in general (demo); you said "". {{literal}}']);
    expect(await ask('general', 'bob', '!greet  the "whole" world ')).toEqual(['Hello the "whole" world! You are in general (demo); you said "the "whole" world". {{literal}}']);
    expect(await ask('general', 'carol', 'I need COFFEE now')).toEqual(['☕ COFFEE for Carol Member']);
    await silent('general', 'carol', 'my coffeemaker broke');
    expect((await ask('general', 'bob', 'Deploy api to prod'))[0]).toMatch(/^Deploying api to prod for bob \(msg \d+\)$/);
    await silent('general', 'bob', 'deploy api to prod now');
    await silent('general', 'bob', '!here');
    expect(await ask('random', 'carol', '!here')).toEqual(['only in random']);

    // The plugin's own commands, made with command() and hears().
    expect(await ask('general', 'bob', '!sum 1.5 2')).toEqual(['3.5']);
    expect(await ask('general', 'bob', '!sum 1')).toEqual(['b is missing. Usage: !sum <a> <b>']);
    expect(await ask('general', 'bob', '!sum 1 2 3')).toEqual(['too many arguments ("3" is one too many). Usage: !sum <a> <b>']);
    expect(await ask('general', 'bob', '!sum "1 2')).toEqual(['a double quote is not closed. Usage: !sum <a> <b>']);
    expect(await ask('general', 'bob', 'thanks, bot')).toEqual(["you're welcome, Bob Member"]);
    const help = (await ask('general', 'bob', '!help'))[0]!;
    expect(help).toContain('!greet [who…] — says hello');
    expect(help).toContain('!boom — always fails');
    expect(help).not.toContain('!here');
  });

  test('who may use a rule: user ids, e-mail addresses, the chat\'s owner, the moderators', { timeout: 40_000 }, async () => {
    const { ask, silent } = await setUp((ids) => ({
      moderators: { users: [ids.alice], emails: ['MO@example.com'] },
      rules: [
        { command: 'secret', allow: { users: [ids.carol], emails: ['BOB@EXAMPLE.COM'] }, reply: 'the secret is 42' },
        { command: 'owner', allow: { chat_owner: true }, reply: 'hello, owner of {{chat}}' },
        { command: 'mods', allow: { moderators: true }, reply: 'hello, moderator' },
        { keyword: 'psst', allow: { moderators: true }, reply: 'psst yourself' },
      ],
    }));
    expect(await ask('general', 'carol', '!secret')).toEqual(['the secret is 42']);
    expect(await ask('general', 'bob', '!secret')).toEqual(['the secret is 42']);
    expect(await ask('general', 'alice', '!secret')).toEqual(['Sorry, !secret is only for a few named people.']);
    expect(await ask('general', 'mo', '!owner')).toEqual(['hello, owner of general']);
    expect(await ask('random', 'alice', '!owner')).toEqual(['hello, owner of random']);
    expect(await ask('general', 'alice', '!owner')).toEqual(['Sorry, !owner is only for the chat\'s owner.']);
    expect(await ask('general', 'mo', '!mods')).toEqual(['hello, moderator']);
    expect(await ask('general', 'alice', '!mods')).toEqual(['hello, moderator']);
    expect(await ask('general', 'carol', '!mods')).toEqual(['Sorry, !mods is only for the group\'s moderators.']);
    // Patterns a user may not use are ignored quietly.
    await silent('general', 'bob', 'psst');
    expect(await ask('general', 'mo', 'psst')).toEqual(['psst yourself']);
  });

  test('cooldowns per user, per chat and per rule; patterns cool down quietly', { timeout: 40_000 }, async () => {
    const { ask, silent } = await setUp(() => ({
      rules: [
        { command: 'peruser', cooldown: { user: '1h' }, reply: 'once per user' },
        { command: 'perchat', cooldown: { chat: 3600 }, reply: 'once per chat' },
        { command: 'once', cooldown: { rule: '1h' }, reply: 'once for everyone' },
        { keyword: 'spam', cooldown: { chat: '1h' }, reply: 'no spam please' },
      ],
    }));
    expect(await ask('general', 'bob', '!peruser')).toEqual(['once per user']);
    expect((await ask('general', 'bob', '!peruser'))[0]).toMatch(/^!peruser was used a moment ago; try again in 3[56]\d\d s\.$/);
    // Told once, then quiet.
    await silent('general', 'bob', '!peruser');
    expect(await ask('general', 'carol', '!peruser')).toEqual(['once per user']);

    expect(await ask('general', 'bob', '!perchat')).toEqual(['once per chat']);
    expect((await ask('general', 'carol', '!perchat'))[0]).toMatch(/^!perchat was used a moment ago; try again in 3[56]\d\d s\.$/);
    expect(await ask('random', 'carol', '!perchat')).toEqual(['once per chat']);

    expect(await ask('general', 'bob', '!once')).toEqual(['once for everyone']);
    expect((await ask('random', 'carol', '!once'))[0]).toMatch(/^!once was used a moment ago/);

    expect(await ask('general', 'bob', 'spam spam')).toEqual(['no spam please']);
    await silent('general', 'carol', 'more spam');
    expect(await ask('random', 'carol', 'spam in random')).toEqual(['no spam please']);
  });

  test('failing commands answer briefly and log; long answers are split cleanly', { timeout: 40_000 }, async () => {
    const { ask, env } = await setUp(() => ({}));
    expect(await ask('general', 'bob', '!boom')).toEqual(['!boom failed: Something went wrong; the bot\'s log has the details.']);
    const failure = env.log.withMessage('responder: command failed').find((l) => l.rule === '!boom')!;
    expect((failure.err as { message: string }).message).toBe('kaboom');
    expect(await ask('general', 'bob', '!nope')).toEqual(['!nope failed: that cannot be done today.']);

    const expected = Array.from({ length: 300 }, (_, i) => `line ${i + 1} ${'x'.repeat(60)}`);
    const parts = await ask('general', 'carol', '!long', 3);
    expect(parts).toHaveLength(3);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(10_000);
      expect(part).toMatch(/^line \d+ x{60}(\nline \d+ x{60})*$/);
    }
    expect(parts.join('\n')).toBe(expected.join('\n'));

    const emoji = await ask('general', 'carol', '!emoji', 2);
    expect(emoji.map((p) => p.length)).toEqual([9_999, 2_002]);
    // No half of a surrogate pair at either end of a part.
    expect(emoji.some((p) => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(p))).toBe(false);
    expect(emoji.join('')).toBe(`a${'\u{1F600}'.repeat(6000)}`);
  });
});
