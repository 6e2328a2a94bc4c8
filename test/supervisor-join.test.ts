import { afterEach, describe, expect, test } from 'vitest';
import type { Chat } from '../src/api/index.js';
import { ChatDirectory } from '../src/supervisor/chat-directory.js';
import { joinOrReuse } from '../src/supervisor/chat-joiner.js';
import type { Supervisor } from '../src/supervisor/supervisor.js';
import { chatOf, makeEnv, post, probes, serviceStats, type Env, waitFor } from './helpers/supervisor.js';

/** Joining: existing chats are joined, missing ones made, chat_subs reused, closed chats waited for. */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const runner = (supervisor: Supervisor, subject: string) => {
  const found = supervisor.bots[0]!.runners.find((r) => r.info.subject === subject);
  if (!found) throw new Error(`the bot has no runner for ${subject}`);
  return found;
};

/** How many times the activity log says the bot joined `subject` (mo, a moderator, may read it). */
async function joins(e: Env, subject: string): Promise<number> {
  let count = 0;
  const pages = e.client('mo').paginate<{ entry: string }>('getactivitylog', { group_name: 'demo', action: 'chat_joined', limit: 100 });
  for await (const entry of pages) if (entry.entry.includes(`&quot;${subject}&quot;`)) count += 1;
  return count;
}

describe('supervisor: joining chats', () => {
  test('joins a chat it is not in, makes a missing one with create: true, and reuses both chat_subs on the next start', async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{
      chats: [{ chat: 'general' }, { chat: 'standup', create: true, desc: '<p>Daily standup</p>' }],
      plugins: [{ use: recorder, with: { key: 'join-1' } }],
    }]);
    const bot = env.client('bot');
    expect((await chatOf(bot, 'general'))?.chat_sub).toBeNull();
    expect(await chatOf(bot, 'standup')).toBeUndefined();

    let supervisor = await env.start();
    const general = (await chatOf(bot, 'general'))!;
    const standup = (await chatOf(bot, 'standup'))!;
    expect(general.chat_sub?.id).toBeTruthy();
    expect(standup).toMatchObject({ desc: '<p>Daily standup</p>', is_closed: false });
    expect(standup.chat_sub?.id).toBeTruthy();
    expect(runner(supervisor, 'general').info.chatsubId).toBe(general.chat_sub!.id);
    expect(runner(supervisor, 'standup').info.chatsubId).toBe(standup.chat_sub!.id);

    await post(env.svc, 'general', 'carol', 'hello general');
    await post(env.svc, 'standup', 'bob', 'hello standup');
    await waitFor('both messages recorded', () => (probes().seen['join-1'] ?? []).length === 2);

    await supervisor.stop();
    env.supervisor = undefined;
    supervisor = await env.start();
    // The same chat_subs (a second joinchat would have answered `already subscribed`), one standup.
    expect(runner(supervisor, 'general').info.chatsubId).toBe(general.chat_sub!.id);
    expect(runner(supervisor, 'standup').info.chatsubId).toBe(standup.chat_sub!.id);
    expect((await chatOf(bot, 'general'))?.chat_sub?.id).toBe(general.chat_sub!.id);
    const standups = [];
    for await (const chat of bot.paginate<Chat>('getchats', { group_name: 'demo', limit: 100 })) if (chat.subject === 'standup') standups.push(chat);
    expect(standups).toHaveLength(1);
    expect(await joins(env, 'general')).toBe(1);

    await post(env.svc, 'general', 'carol', 'after restart');
    await waitFor('the message after the restart', () => probes().seen['join-1']!.some((s) => s.text === 'after restart'));
    expect(probes().seen['join-1']!.map((s) => s.text)).toEqual(['hello general', 'hello standup', 'after restart']);
  });

  test('a chat name that is not in the group gets a "did you mean" from its chats; the bot\'s other chats go on (#36 item 9)', async () => {
    env = await makeEnv([]);
    env.writeConfig([{ chats: [{ chat: 'genral' }, { chat: 'random' }, { chat: 'nothing-like-it' }] }]);
    const supervisor = await env.start();
    expect(supervisor.bots[0]!.runners.map((r) => r.info.subject)).toEqual(['random']);
    const skipped = env.log.withMessage('chat skipped').map((line) => line.reason);
    expect(skipped).toEqual([
      'group demo has no chat genral: did you mean general? (or set create: true to make it)',
      'group demo has no chat nothing-like-it (its chats: general, random, archive (closed); set create: true to make it)',
    ]);
  });

  test('a chat renamed since the last start (!subject) is followed by its id: no new chat of the old subject, no reset, the conversation goes on', async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{ chats: [{ chat: 'standup', create: true, desc: '<p>Daily standup</p>' }], plugins: [{ use: recorder, with: { key: 'rename-1' } }] }]);
    let supervisor = await env.start();
    const standup = (await chatOf(env.client('bot'), 'standup'))!;
    await post(env.svc, 'standup', 'bob', 'before the rename');
    await waitFor('the first message', () => (probes().seen['rename-1'] ?? []).length === 1);
    await supervisor.bots[0]!.client.updateChat({ chat_id: standup.id, subject: 'standup (renamed)' });
    await supervisor.stop();
    env.supervisor = undefined;

    supervisor = await env.start();
    expect(supervisor.bots[0]!.runners.map((r) => r.info.id)).toEqual([standup.id]);
    expect(await chatOf(env.client('bot'), 'standup')).toBeUndefined();
    expect(env.log.lines.some((line) => line.msg === 'the chat was renamed; following it by its id')).toBe(true);
    expect(env.log.lines.some((line) => String(line.msg).startsWith('chat history reset'))).toBe(false);
    await post(env.svc, 'standup (renamed)', 'bob', 'after the rename');
    await waitFor('the message after the rename', () => probes().seen['rename-1']!.some((s) => s.text === 'after the rename'));
    expect(probes().seen['rename-1']!.map((s) => s.text)).toEqual(['before the rename', 'after the rename']);
  });

  test('lists the group\'s chats once for all its chats: only a chat to join or make costs a call more', async () => {
    env = await makeEnv([{
      chats: [{ chat: 'general' }, { chat: 'random' }, { chat: 'standup', create: true }, { chat: 'archive' }],
      closed_chat_check_seconds: 3600,
    }]);
    const calls = async () => (await serviceStats(env!.svc)).api_calls as Record<string, number>;
    const before = await calls();
    let supervisor = await env.start({ waitConnected: false });
    await supervisor.ready();
    const first = await calls();
    const made = (name: string, from: Record<string, number>, to: Record<string, number>) => (to[name] ?? 0) - (from[name] ?? 0);
    // One page of open chats and one of closed ones (the demo group has a handful).
    expect(made('getchats', before, first)).toBe(2);
    expect(made('joinchat', before, first)).toBe(2);
    expect(made('newchat', before, first)).toBe(1);
    expect(supervisor.bots[0]!.runners.map((r) => r.info.subject)).toEqual(['general', 'random', 'standup', 'archive']);

    await supervisor.stop();
    env.supervisor = undefined;
    supervisor = await env.start({ waitConnected: false });
    await supervisor.ready();
    const second = await calls();
    // Every chat_sub is in the listing now: nothing to join or make.
    expect(made('getchats', first, second)).toBe(2);
    expect(made('joinchat', first, second)).toBe(0);
    expect(made('newchat', first, second)).toBe(0);
  });

  test('a chat_sub made before the start (by another process) is reused', async () => {
    env = await makeEnv([{ chats: [{ chat: 'general' }] }]);
    const other = env.client('bot');
    const general = (await chatOf(other, 'general'))!;
    const sub = await other.joinChat({ chat_id: general.id });
    const supervisor = await env.start();
    expect(runner(supervisor, 'general').info.chatsubId).toBe(sub.id);
    expect(await joins(env, 'general')).toBe(1);
  });

  test('`already subscribed` from joinchat (a join that raced ours) answers the existing chat_sub', async () => {
    env = await makeEnv([{ chats: [{ chat: 'general' }] }]);
    const ours = env.client('bot');
    const stale = (await chatOf(ours, 'general'))!;
    expect(stale.chat_sub).toBeNull();
    const raced = await env.client('bot').joinChat({ chat_id: stale.id });
    await expect(joinOrReuse(ours, stale, await ChatDirectory.open(ours, 'demo'))).resolves.toBe(raced.id);
  });

  test('a closed chat is waited for and joined when it reopens; the bot\'s other chats go on meanwhile', async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{
      chats: [{ chat: 'general' }, { chat: 'archive' }],
      closed_chat_check_seconds: 0.2,
      plugins: [{ use: recorder, with: { key: 'join-closed' } }],
    }]);
    const supervisor = await env.start({ waitConnected: false });
    await supervisor.ready();
    await waitFor('general open', () => runner(supervisor, 'general').connection.state === 'open');
    const archive = runner(supervisor, 'archive');
    expect(archive.connection.state).toBe('idle');
    await expect(supervisor.bots[0]!.send('archive', 'too early')).rejects.toMatchObject({ name: 'PostFailedError' });
    await post(env.svc, 'general', 'carol', 'general while archive is closed');
    await waitFor('the general message', () => probes().seen['join-closed']?.length === 1);

    const mo = env.client('mo');
    const closed = (await chatOf(mo, 'archive'))!;
    expect(closed.is_closed).toBe(true);
    await mo.updateChat({ chat_id: closed.id, is_closed: false });
    // connected() counts a chat waiting to reopen as settled, so wait for the socket itself.
    await waitFor('archive open', () => archive.connection.state === 'open');
    expect((await chatOf(env.client('bot'), 'archive'))?.chat_sub?.id).toBe(archive.info.chatsubId);

    await post(env.svc, 'archive', 'bob', 'archive is open again');
    await waitFor('the archive message', () => probes().seen['join-closed']!.some((s) => s.chat === 'archive'));
    expect(probes().seen['join-closed']!.map((s) => [s.chat, s.text])).toEqual([
      ['general', 'general while archive is closed'],
      ['archive', 'archive is open again'],
    ]);
  });

  test('a chat closed while connected is waited for; after it reopens messages flow again', async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{
      chats: [{ chat: 'general' }, { chat: 'random' }],
      closed_chat_check_seconds: 0.2,
      plugins: [{ use: recorder, with: { key: 'join-reopen' } }],
    }]);
    const supervisor = await env.start();
    const general = runner(supervisor, 'general');
    const mo = env.client('mo');
    const chat = (await chatOf(mo, 'general'))!;
    await post(env.svc, 'general', 'carol', 'before closing');
    await waitFor('the first message', () => probes().seen['join-reopen']?.length === 1);

    await mo.updateChat({ chat_id: chat.id, is_closed: true });
    await waitFor('general waiting as closed', () => general.connection.state === 'closed');
    // The other chat is not affected.
    await post(env.svc, 'random', 'carol', 'random while general is closed');
    await waitFor('the random message', () => probes().seen['join-reopen']!.some((s) => s.chat === 'random'));

    await mo.updateChat({ chat_id: chat.id, is_closed: false });
    await waitFor('general open again', () => general.connection.state === 'open');
    await post(env.svc, 'general', 'bob', 'after reopening');
    await waitFor('the message after reopening', () => probes().seen['join-reopen']!.some((s) => s.text === 'after reopening'));
    const inGeneral = probes().seen['join-reopen']!.filter((s) => s.chat === 'general');
    expect(inGeneral.map((s) => s.text)).toEqual(['before closing', 'This chat has been closed.', 'after reopening']);
    // Every general msg_num once, in order.
    const nums = inGeneral.map((s) => s.msgNum);
    expect(nums).toEqual([...nums].sort((a, b) => a - b));
    expect(new Set(nums).size).toBe(nums.length);
  });
});
