import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import { adminOk, chatOf, history, makeEnv, post, probes, waitFor, type Env } from './helpers/supervisor.js';
import { DEMO } from './helpers/service.js';

/**
 * Gateways of service chats only: a chat of one bot in the demo group and a chat of another bot in a
 * second group, joined by bots.yaml's `gateways:`. Every line arrives once on every other side, never
 * back at its origin, and a line never travels on into a gateway it did not enter (two gateways
 * sharing a chat).
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const MO = { email: DEMO.mo[0], password: DEMO.mo[1] };

/** A second group, `other`, owned by mo (the second bot's account), with a chat `lobby` where carol talks. */
async function secondGroup(e: Env): Promise<void> {
  await adminOk(e.svc, 'groups', {
    name: 'other',
    members: [{ email: DEMO.mo[0], role: 'owner' }, { email: DEMO.carol[0], role: 'member' }],
  });
  await adminOk(e.svc, 'chats', { group: 'other', owner: DEMO.mo[0], subject: 'lobby', members: [DEMO.carol[0]] });
}

async function texts(e: Env, who: 'bot' | 'mo', group: string, chat: string): Promise<ChatMessage[]> {
  const client = e.client(who);
  const found = await chatOf(client, chat, group);
  return history(client, found!.id);
}

describe('gateways between chats', () => {
  test('chat ⇄ chat across groups: each line once on the other side, never echoed, in order', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    await secondGroup(env);
    const seenByBot1 = env.probe('seen1', 'record', { ownPosts: true });
    env.writeConfig([
      { name: 'one', chats: [{ chat: 'general' }] },
      { name: 'two', login: MO, chats: [{ group: 'other', chat: 'lobby' }], plugins: [{ use: seenByBot1, with: { key: 'two' } }] },
    ], [{ name: 'bridge', endpoints: [{ bot: 'one', chat: 'general' }, { bot: 'two', chat: 'lobby' }] }]);
    await env.start();

    for (let i = 1; i <= 5; i += 1) await post(env.svc, 'general', 'alice', `from general ${i}`);
    for (let i = 1; i <= 5; i += 1) await post(env.svc, 'lobby', 'carol', `from lobby ${i}`, 1, 'other');

    const lobbyCopies = () => texts(env!, 'mo', 'other', 'lobby').then((m) => m.filter((x) => x.message.startsWith('<Alice Owner> from general')));
    const generalCopies = () => texts(env!, 'bot', 'demo', 'general').then((m) => m.filter((x) => x.message.startsWith('<Carol Member> from lobby')));
    await waitFor('alice\'s lines in lobby', async () => (await lobbyCopies()).length === 5, 30_000);
    await waitFor('carol\'s lines in general', async () => (await generalCopies()).length === 5, 30_000);
    expect((await lobbyCopies()).map((m) => m.message)).toEqual([1, 2, 3, 4, 5].map((i) => `<Alice Owner> from general ${i}`));
    expect((await generalCopies()).map((m) => m.message)).toEqual([1, 2, 3, 4, 5].map((i) => `<Carol Member> from lobby ${i}`));

    // A marker from each side, then: nothing came back to its origin, nothing arrived twice.
    await post(env.svc, 'lobby', 'carol', 'marker', 1, 'other');
    await waitFor('the marker in general', async () => (await texts(env!, 'bot', 'demo', 'general')).some((m) => m.message === '<Carol Member> marker'));
    const general = (await texts(env, 'bot', 'demo', 'general')).map((m) => m.message);
    const lobby = (await texts(env, 'mo', 'other', 'lobby')).map((m) => m.message);
    expect(general.filter((t) => t.includes('from general'))).toEqual([1, 2, 3, 4, 5].map((i) => `from general ${i}`));
    expect(lobby.filter((t) => t.includes('from lobby'))).toEqual([1, 2, 3, 4, 5].map((i) => `from lobby ${i}`));

    // The second bot's chain saw alice's lines as its own relayed posts, with alice as the sender, first heard there.
    const seen = probes().seen.two!;
    const relayed = seen.filter((s) => s.text.startsWith('<Alice Owner>'));
    expect(relayed).toHaveLength(5);
    expect(relayed.every((s) => s.own === 'chat' && s.sender === 'chat:Alice Owner' && s.answerable)).toBe(true);
    const carols = seen.filter((s) => s.text.startsWith('from lobby'));
    expect(carols.every((s) => s.own === undefined && s.sender === 'chat:Carol Member' && s.answerable)).toBe(true);
  });

  test('two gateways sharing a chat: a line goes only to the gateways it entered, never around', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    await secondGroup(env);
    env.writeConfig([
      { name: 'one', chats: [{ chat: 'general' }, { chat: 'random' }] },
      { name: 'two', login: MO, chats: [{ group: 'other', chat: 'lobby' }] },
    ], [
      { name: 'g1', endpoints: [{ bot: 'one', chat: 'general' }, { bot: 'two', chat: 'lobby' }] },
      { name: 'g2', endpoints: [{ bot: 'two', chat: 'lobby' }, { bot: 'one', chat: 'random' }] },
    ]);
    await env.start();

    await post(env.svc, 'general', 'alice', 'said in general');
    await post(env.svc, 'random', 'carol', 'said in random');
    await post(env.svc, 'lobby', 'carol', 'said in lobby', 1, 'other');
    await waitFor('lobby\'s line in general and random', async () =>
      (await texts(env!, 'bot', 'demo', 'general')).some((m) => m.message === '<Carol Member> said in lobby') &&
      (await texts(env!, 'bot', 'demo', 'random')).some((m) => m.message === '<Carol Member> said in lobby'), 30_000);
    await waitFor('general\'s and random\'s lines in lobby', async () => {
      const lobby = (await texts(env!, 'mo', 'other', 'lobby')).map((m) => m.message);
      return lobby.includes('<Alice Owner> said in general') && lobby.includes('<Carol Member> said in random');
    }, 30_000);
    // Let anything that would loop show up, then count.
    await post(env.svc, 'general', 'alice', 'last');
    await waitFor('the last line in lobby', async () => (await texts(env!, 'mo', 'other', 'lobby')).some((m) => m.message === '<Alice Owner> last'));
    const general = (await texts(env, 'bot', 'demo', 'general')).map((m) => m.message);
    const random = (await texts(env, 'bot', 'demo', 'random')).map((m) => m.message);
    const lobby = (await texts(env, 'mo', 'other', 'lobby')).map((m) => m.message);
    // general's line reached lobby (g1) and not random (g2 is not its gateway), random's reached lobby only.
    expect(random.filter((t) => t.includes('said in general'))).toEqual([]);
    expect(general.filter((t) => t.includes('said in random'))).toEqual([]);
    expect(lobby.filter((t) => t.includes('said in'))).toEqual(['<Alice Owner> said in general', '<Carol Member> said in random', 'said in lobby']);
    expect(general.filter((t) => t.includes('said in lobby'))).toEqual(['<Carol Member> said in lobby']);
    expect(random.filter((t) => t.includes('said in lobby'))).toEqual(['<Carol Member> said in lobby']);
  });
});
