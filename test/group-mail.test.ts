import { afterEach, describe, expect, test } from 'vitest';
import type { GroupsClient, Message } from '../src/api/index.js';
import { adminOk, chatOf, history, makeEnv, waitFor, type Env, type GatewaySpec, type PluginSpec } from './helpers/supervisor.js';
import { EMAILS } from './helpers/service.js';

/**
 * group-mail against the local service: new topics (and messages) of the demo group's archive reach the
 * bot's chat once, in order, from a durable cursor; its options (topics / messages, hashtags, templates,
 * moderation entries, posting into the group).
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const FAST = { min: '100ms', max: '400ms' };

async function setup(mail: Record<string, unknown>, extra: { plugins?: PluginSpec[]; gateways?: GatewaySpec[] } = {}): Promise<{ env: Env; reader: GroupsClient }> {
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    reply_rate: { per_second: 500, burst: 500 },
    plugins: [...(extra.plugins ?? []), { use: 'group-mail', with: { poll: FAST, ...mail } }],
  }], extra.gateways);
  return { env, reader: env.client('bob') };
}

/** The bot's lines in `general` after `from` (msg_num), oldest first. */
async function botLines(e: Env, reader: GroupsClient, from = 0): Promise<string[]> {
  const chat = (await chatOf(reader, 'general'))!;
  return (await history(reader, chat.id)).filter((m) => m.msg_num > from && m.email === EMAILS.bot).map((m) => m.message);
}

const topic = (e: Env, who: string, subject: string, body: string, hashtags: string[] = []): Promise<{ topic: { id: string }; message: Message }> =>
  adminOk(e.svc, 'topics', { group: 'demo', user: who, subject, body, hashtags });
const reply = (e: Env, topicId: string, who: string, body: string): Promise<Message> => adminOk(e.svc, 'messages', { topic: String(topicId), user: who, body });

describe('group-mail: the archive into the chat', () => {
  test('a new topic is announced once with its subject, author, snippet and link; replies are not (follow: topics); the past is not', async () => {
    const { env: e, reader } = await setup({ groups: { general: 'demo' } });
    await e.start();
    await waitFor('the first read', () => (e.supervisor!.stats() as any).bot0.plugins['group-mail'].polls >= 2);
    const made = await topic(e, EMAILS.alice, 'Picnic on Saturday', 'Bring food!\n\nOn Fri, Bob wrote:\n> old text\n\n-- \nAlice\nsignature');
    await reply(e, made.topic.id, EMAILS.bob, 'I will bring bread');
    const lines = await waitFor('the announcement', async () => {
      const found = await botLines(e, reader);
      return found.length >= 1 ? found : undefined;
    });
    expect(lines[0]).toMatch(/^<Alice Owner> New topic: Picnic on Saturday — Bring food! https:\/\/\S+\/g\/demo\/message\/\d+$/);
    // A second topic goes after it; the reply never shows (topics only).
    await topic(e, EMAILS.carol, 'Second one', 'Hello');
    await waitFor('the second announcement', async () => (await botLines(e, reader)).length >= 2);
    const all = await botLines(e, reader);
    expect(all).toHaveLength(2);
    expect(all[1]).toMatch(/^<Carol Member> New topic: Second one — Hello/);
    expect(all.join('\n')).not.toContain('Welcome to the demo group');
  });
});
