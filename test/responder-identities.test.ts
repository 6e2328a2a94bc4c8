import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, test } from 'vitest';
import type { ChatMessage, PluginContext, Speaker } from '../src/index.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { AccessControl } from '../plugins/responder/access.js';
import { IdentityList, identityProblem, matches, parseIdentity } from '../plugins/responder/identity.js';
import { responderOptions } from '../plugins/responder/options.js';
import { Responder } from '../plugins/responder/responder.js';
import { addRules } from '../plugins/responder/rules.js';

/**
 * Who the responder takes a command from: identities in access rules (chat ids, e-mails, IRC masks,
 * Slack ids), matched against ctx.sender and never against the chat message of a relayed line (the
 * bot's own), and commands only where ctx.answerable says the bot hears them first.
 */

const BOT_ID = '900';
const member: Speaker = { platform: 'chat', id: '1001', name: 'Bob Member', email: 'Bob@Example.com' };
const ircBob: Speaker = { platform: 'irc', id: 'Bob[away]!~bob@host.example.net', name: 'Bob[away]' };
const slackAnn: Speaker = { platform: 'slack', id: 'U012ABCDEF', name: 'ann' };

describe('responder: identities', () => {
  test('the forms an entry may take', () => {
    expect(parseIdentity('1001')).toEqual({ kind: 'chat', id: '1001' });
    expect(parseIdentity('chat:1001')).toEqual({ kind: 'chat', id: '1001' });
    expect(parseIdentity(' mo@example.com ')).toEqual({ kind: 'email', address: 'mo@example.com' });
    expect(parseIdentity('slack:U012ABCDEF')).toEqual({ kind: 'native', platform: 'slack', id: 'U012ABCDEF' });
    expect(parseIdentity('matrix:@ann:example.org')).toEqual({ kind: 'native', platform: 'matrix', id: '@ann:example.org' });
    expect(parseIdentity('irc:bob')).toMatchObject({ kind: 'mask', platform: 'irc', mask: 'bob!*@*' });
    expect(parseIdentity('irc:bob!~bob')).toMatchObject({ mask: 'bob!~bob@*' });
    expect(parseIdentity('irc:bob@host')).toMatchObject({ mask: 'bob!*@host' });
    expect(identityProblem('irc:')).toBe('irc: names nobody (write irc:<id>)');
    expect(identityProblem('  ')).toBe('an empty entry names nobody');
    expect(identityProblem('irc:*!*@*.example.net')).toBeUndefined();
  });

  test('chat ids and e-mail addresses name chat members only', () => {
    expect(matches(parseIdentity('1001'), member)).toBe(true);
    expect(matches(parseIdentity('chat:1001'), member)).toBe(true);
    expect(matches(parseIdentity('bob@example.COM'), member)).toBe(true);
    // The same id or address elsewhere is someone else.
    expect(matches(parseIdentity('1001'), { platform: 'slack', id: '1001', name: 'x' })).toBe(false);
    expect(matches(parseIdentity('bob@example.com'), { ...slackAnn, email: 'bob@example.com' })).toBe(false);
    // A private profile's address is empty: it matches no entry.
    expect(new IdentityList([], ['']).includes({ ...member, email: '' })).toBe(false);
  });

  test('IRC masks: wildcards, case-insensitive with IRC folding, the whole id', () => {
    const yes = (mask: string) => matches(parseIdentity(mask), ircBob);
    expect(yes('irc:Bob[away]!~bob@host.example.net')).toBe(true);
    expect(yes('irc:bob{AWAY}!~BOB@HOST.example.net')).toBe(true); // [] fold to {}
    expect(yes('irc:bob[away]')).toBe(true); // nick!*@*: anyone with the nick
    expect(yes('irc:*!~bob@*.example.net')).toBe(true);
    expect(yes('irc:bob?away?!*@*')).toBe(true);
    expect(yes('irc:bob')).toBe(false); // a mask is the whole id, not a prefix
    expect(yes('irc:*!*@evil.example.net')).toBe(false);
    expect(yes('irc:bob.away.!*@*')).toBe(false); // `.` is a dot, not any character
    expect(yes('slack:Bob[away]!~bob@host.example.net')).toBe(false);
    expect(matches(parseIdentity('irc:*'), member)).toBe(false);
  });

  test('Slack ids exactly', () => {
    expect(matches(parseIdentity('slack:U012ABCDEF'), slackAnn)).toBe(true);
    expect(matches(parseIdentity('slack:u012abcdef'), slackAnn)).toBe(false);
    expect(matches(parseIdentity('U012ABCDEF'), slackAnn)).toBe(false);
  });

  test('bots.yaml: entries are checked where they are written', () => {
    const problems = (value: unknown) => (responderOptions.safeParse(value).error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);
    expect(problems({ moderators: { users: ['irc:mo!*@staff.example.net', 'slack:U1', 1002] } })).toEqual([]);
    expect(problems({ moderators: { users: ['irc:'] } })).toEqual(['moderators.users.0: irc: names nobody (write irc:<id>)']);
    expect(problems({ rules: [{ command: 'x', reply: 'y', allow: { users: ['slack: '] } }] })).toEqual(['rules.0.allow.users.0: slack: names nobody (write slack:<id>)']);
    expect(problems({ rules: [{ command: 'x', reply: 'y', answer_to: 'origin' }], builtins: { ping: { answer_to: 'everywhere' } } })).toEqual([]);
    expect(problems({ rules: [{ command: 'x', reply: 'y', answer_to: 'there' }] })[0]).toMatch(/^rules\.0\.answer_to: /);
  });
});

/** A context as the chain hands it on: the chat message, and who said it where. */
function context(sender: Speaker, text: string, options: { answerable?: boolean; msgNum?: number; store: KeyValueStore; replies: Array<{ text: string; options?: unknown }> }): PluginContext {
  const relayed = sender.platform !== 'chat';
  // A relayed line is the bot's own chat message: its user_id and e-mail are the bot's.
  const message: ChatMessage = {
    id: `m${options.msgNum ?? 1}`, msg_num: options.msgNum ?? 1, chat_id: '55', group_id: '1', type: 'chat_msg_type_normal',
    message: relayed ? `<${sender.name}> ${text}` : text, created: new Date().toISOString(),
    user_id: relayed ? BOT_ID : sender.id, user_name: relayed ? 'bot' : 'bob', display_name: relayed ? 'Bot' : sender.name,
    email: relayed ? 'bot@example.com' : sender.email ?? '',
  } as ChatMessage;
  const ctx = {
    message, text, sender, answerable: options.answerable ?? true, backfilled: false, ageMs: 0,
    own: relayed ? { relayed: { speaker: sender, text } } : undefined,
    chat: { id: '55', subject: 'general', groupId: '1', groupName: 'demo', chatsubId: '7' },
    bot: { name: 'helper', userId: BOT_ID }, log: pino({ level: 'silent' }), store: options.store, signal: new AbortController().signal,
    reply(this: unknown, reply: string, replyOptions?: unknown) {
      if (this !== ctx) throw new Error('reply() called without its context');
      options.replies.push(replyOptions === undefined ? { text: reply } : { text: reply, options: replyOptions });
      return Promise.resolve({ ...message, message: reply });
    },
  };
  return ctx as unknown as PluginContext;
}

describe('responder: commands from every side of a gateway', () => {
  const dir = mkdtempSync(join(tmpdir(), 'responder-identities-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function responderWith(config: unknown): Promise<Responder> {
    const options = responderOptions.parse(config);
    const responder = new Responder({ moderators: options.moderators });
    addRules(responder, options.rules, options.time_zone);
    return responder;
  }

  test('access: ctx.sender decides, never the bot\'s own message of a relayed line', async () => {
    const access = new AccessControl({ users: ['irc:mo!*@staff.example.net', BOT_ID], emails: ['bot@example.com'] });
    const store = await KeyValueStore.open(join(dir, 'access.json'));
    const ctxOf = (sender: Speaker) => context(sender, '!x', { store, replies: [] });
    // The bot's id and address are moderators here, and every relayed line carries them: no matter.
    expect(await access.allows({ moderators: true }, ctxOf(ircBob))).toBe(false);
    expect(await access.allows({ moderators: true }, ctxOf(slackAnn))).toBe(false);
    expect(await access.allows({ moderators: true }, ctxOf({ platform: 'irc', id: 'mo!~mo@staff.example.net', name: 'mo' }))).toBe(true);
    expect(await access.allows({ moderators: true }, ctxOf({ platform: 'irc', id: 'mo!~mo@elsewhere.example.org', name: 'mo' }))).toBe(false);
    // chat_owner is a chat member only: the owner check is not even made for someone on IRC.
    expect(await access.allows({ chat_owner: true }, ctxOf(ircBob))).toBe(false);
    expect(await access.allows({ users: ['slack:U012ABCDEF'] }, ctxOf(slackAnn))).toBe(true);
    expect(await access.allows({ users: ['1001'], emails: ['bob@example.com'] }, ctxOf(ircBob))).toBe(false);
    expect(await access.allows({ emails: ['bob@example.com'] }, ctxOf(member))).toBe(true);
    expect(await access.allows(undefined, ctxOf(ircBob))).toBe(true);
  });

  test('commands are read from ctx.text, answered only where answerable, with the speaker\'s name', async () => {
    const responder = await responderWith({ rules: [{ command: 'hi', reply: 'hello {{user}} on {{platform}} ({{user_id}}, {{user_name}}, "{{email}}", {{message}})' }] });
    const store = await KeyValueStore.open(join(dir, 'text.json'));
    const replies: Array<{ text: string; options?: unknown }> = [];
    let handedOn = 0;
    const next = () => {
      handedOn += 1;
      return Promise.resolve();
    };
    await responder.handle(context(ircBob, '!hi', { store, replies, msgNum: 1 }), next);
    await responder.handle(context(ircBob, '!hi', { store, replies, msgNum: 2, answerable: false }), next);
    await responder.handle(context(member, '!hi', { store, replies, msgNum: 3 }), next);
    expect(replies).toEqual([
      { text: 'hello Bob[away] on irc (irc:Bob[away]!~bob@host.example.net, Bob[away], "", !hi)' },
      { text: 'hello Bob Member on chat (1001, bob, "Bob@Example.com", !hi)' },
    ]);
    expect(handedOn).toBe(3);
  });

  test('refusals and cooldowns are per sender: two people on IRC are not one user', async () => {
    const responder = await responderWith({
      moderators: { users: ['irc:mo!*@staff.example.net'] },
      rules: [
        { command: 'roll', reply: 'rolled for {{user}}', cooldown: { user: '1h' } },
        { command: 'deploy', reply: 'deploying for {{user}}', allow: { moderators: true } },
      ],
    });
    const store = await KeyValueStore.open(join(dir, 'cooldown.json'));
    const replies: Array<{ text: string; options?: unknown }> = [];
    const mo: Speaker = { platform: 'irc', id: 'mo!~mo@staff.example.net', name: 'mo' };
    const next = () => Promise.resolve();
    let msgNum = 0;
    for (const [sender, text] of [[ircBob, '!roll'], [mo, '!roll'], [ircBob, '!roll'], [ircBob, '!deploy'], [mo, '!deploy']] as const) {
      msgNum += 1;
      await responder.handle(context(sender, text, { store, replies, msgNum }), next);
    }
    expect(replies.map((r) => r.text)).toEqual([
      'rolled for Bob[away]',
      'rolled for mo',
      '!roll was used a moment ago; try again in 3600 s.',
      'Sorry, !deploy is only for the group\'s moderators.',
      'deploying for mo',
    ]);
  });

  test('answer_to: origin asks reply() for the origin only, refusals included', async () => {
    const responder = await responderWith({
      rules: [
        { command: 'here', reply: 'just here', answer_to: 'origin' },
        { command: 'all', reply: 'for everyone' },
        { command: 'secret', reply: 'x', answer_to: 'origin', allow: { users: ['slack:U999'] } },
      ],
    });
    const store = await KeyValueStore.open(join(dir, 'origin.json'));
    const replies: Array<{ text: string; options?: unknown }> = [];
    const next = () => Promise.resolve();
    await responder.handle(context(slackAnn, '!here', { store, replies, msgNum: 1 }), next);
    await responder.handle(context(slackAnn, '!all', { store, replies, msgNum: 2 }), next);
    await responder.handle(context(slackAnn, '!secret', { store, replies, msgNum: 3 }), next);
    expect(replies).toEqual([
      { text: 'just here', options: { only: 'origin' } },
      { text: 'for everyone' },
      { text: 'Sorry, !secret is only for a few named people.', options: { only: 'origin' } },
    ]);
  });
});
