import { pino } from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import type { GroupsClient } from '../src/api/index.js';
import { GroupPoster } from '../src/index.js';
import { DEMO_SEED } from '../src/service/demo-seed.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { parseAnnouncement } from '../plugins/responder/builtins/announce.js';
import { adminOk, chatOf, history, kill, makeEnv, post, serviceStats, type Env, waitFor } from './helpers/supervisor.js';

/**
 * `!announce Subject | body`: a new topic in the chat's group through GroupPoster, once per command
 * message whatever happens between its calls (a crash, a lost answer).
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const MODERATORS = { emails: ['mo@example.com'] };

/** The demo group as an announce-only group: only its moderators may post (the bot is a member). */
const ANNOUNCE_ONLY = {
  ...DEMO_SEED,
  groups: DEMO_SEED.groups!.map((g, i) => (i === 0 ? { ...g, settings: { ...g.settings, announce: true } } : g)),
};

async function setUp(serviceOptions: Parameters<typeof makeEnv>[1] = {}) {
  env = await makeEnv([], serviceOptions);
  const current = env;
  current.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'responder', with: { moderators: MODERATORS } }] }]);
  const bot = current.client('bot');
  const botId = String((await bot.login()).id);
  const general = (await chatOf(bot, 'general'))!;
  const groupId = String(general.group_id);
  const botSaid = async () => (await history(bot, general.id)).filter((m) => m.user_id === botId).map((m) => m.message);
  const topicsWith = async (subject: string) =>
    (await bot.getTopics({ group_id: groupId, limit: 50 })).data.filter((t) => t.subject === subject);
  const drafts = async () => (await bot.getDrafts({ group_id: groupId, limit: 100 })).data;
  return { env: current, bot, botId, groupId, botSaid, topicsWith, drafts };
}

/** The one topic with `subject`, and the one confirmation that names it. */
async function expectAnnouncedOnce(
  t: Awaited<ReturnType<typeof setUp>>, subject: string,
): Promise<void> {
  const said = await waitFor(`the confirmation of ${subject}`, async () => {
    const confirmations = (await t.botSaid()).filter((m) => m.startsWith('Announced in'));
    return confirmations.length > 0 ? confirmations : undefined;
  }, 30_000);
  const topics = await t.topicsWith(subject);
  expect(topics).toHaveLength(1);
  expect(said).toHaveLength(1);
  expect(said[0]).toMatch(new RegExp(`^Announced in demo: "${subject}" \\(topic ${topics[0]!.id}, message #\\d+\\)$`));
  expect(await t.drafts()).toEqual([]);
}

describe('responder: !announce', () => {
  test('a moderator\'s !announce makes exactly one topic, with the footer, and the confirmation names it', { timeout: 40_000 }, async () => {
    const t = await setUp();
    await t.env.start();
    await post(t.env.svc, 'general', 'mo', '!announce Picnic on Friday | Bring food.');
    await expectAnnouncedOnce(t, 'Picnic on Friday');
    const [topic] = await t.topicsWith('Picnic on Friday');
    const messages = (await t.bot.getMessages({ group_id: t.groupId, limit: 20 })).data.filter((m) => m.topic_id === topic!.id);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.body).toContain('Bring food.');
    expect(messages[0]!.body).toMatch(/— .+, from general/);
  });

  test('a member\'s !announce is refused: no topic, no draft', { timeout: 40_000 }, async () => {
    const t = await setUp();
    await t.env.start();
    await post(t.env.svc, 'general', 'bob', '!announce Not from bob | hello');
    const refusal = await waitFor('the refusal', async () => (await t.botSaid())[0]);
    expect(refusal).toMatch(/^Sorry, !announce is only for/);
    expect(await t.topicsWith('Not from bob')).toEqual([]);
    expect(await t.drafts()).toEqual([]);
  });

  test('a group where the bot may not post: the service\'s refusal is the answer, no topic', { timeout: 40_000 }, async () => {
    const t = await setUp({ seed: ANNOUNCE_ONLY });
    await t.env.start();
    await post(t.env.svc, 'general', 'mo', '!announce Not allowed | the bot is a member');
    const answer = await waitFor('the answer', async () => (await t.botSaid())[0]);
    expect(answer).toMatch(/^!announce failed: The service refused the bot: .*inadequate_permissions/);
    expect(await t.topicsWith('Not allowed')).toEqual([]);
    // newdraft is refused already (can_post): nothing is left behind.
    expect(await t.drafts()).toEqual([]);
  });

  test('killed between newdraft and postdraft: after the restart exactly one topic, no draft left, one confirmation', { timeout: 90_000 }, async () => {
    const t = await setUp();
    // A 429 is sent again by the client (a server error on a POST is not), so the bot is still trying
    // postdraft, its draft made, when it is killed.
    await adminOk(t.env.svc, 'faults/errors', { count: 1000, type: 'rate_limit', retry_after: 5, operations: ['postdraft'] });
    const first = await t.env.spawn();
    await post(t.env.svc, 'general', 'mo', '!announce After the crash | once only');
    await waitFor('the bot\'s draft', async () => (await t.drafts()).some((d) => d.subject === 'After the crash'), 30_000);
    await kill(first);
    await adminOk(t.env.svc, 'faults/clear');
    await t.env.spawn();
    await expectAnnouncedOnce(t, 'After the crash');
  });

  test('postdraft failing on and on: the failure is the answer, and its draft is deleted (none left to pile up)', { timeout: 60_000 }, async () => {
    const t = await setUp();
    await adminOk(t.env.svc, 'faults/errors', { count: 1000, type: 'server', operations: ['postdraft'] });
    await t.env.start();
    await post(t.env.svc, 'general', 'mo', '!announce Never posted | the service keeps failing');
    const answer = await waitFor('the answer', async () => (await t.botSaid())[0], 40_000);
    expect(answer).toMatch(/^!announce failed: /);
    expect(await t.topicsWith('Never posted')).toEqual([]);
    expect(await t.drafts()).toEqual([]);
    // GroupPoster tried postdraft again itself before giving up (1 + 4 tries).
    expect((await serviceStats(t.env.svc)).faults.errors).toBe(5);
  });

  test('the answer of postdraft lost: one topic, and the confirmation given', { timeout: 40_000 }, async () => {
    const t = await setUp();
    await adminOk(t.env.svc, 'faults/lose-answers', { count: 1, operations: ['postdraft'] });
    await t.env.start();
    await post(t.env.svc, 'general', 'mo', '!announce Lost answer | posted anyway');
    await expectAnnouncedOnce(t, 'Lost answer');
    expect((await serviceStats(t.env.svc)).faults.lost_answers).toBe(1);
  });
});

describe('!announce: reading Subject | body', () => {
  test('the first | splits; without one the text is both; the subject 1..255 characters, the body not empty', () => {
    expect(parseAnnouncement(' Picnic | Bring | food ')).toEqual({ subject: 'Picnic', body: 'Bring | food' });
    expect(parseAnnouncement('Just this')).toEqual({ subject: 'Just this', body: 'Just this' });
    expect(() => parseAnnouncement(' | body')).toThrow('needs a subject');
    expect(() => parseAnnouncement('Subject |  ')).toThrow('needs a body');
    expect(parseAnnouncement(`${'s'.repeat(255)} | b`).subject).toHaveLength(255);
    expect(() => parseAnnouncement(`${'s'.repeat(256)} | b`)).toThrow('at most 255 characters');
  });
});

describe('GroupPoster', () => {
  test('newdraft\'s answer lost: the orphan draft is adopted, one topic, no draft left', { timeout: 30_000 }, async () => {
    const t = await setUp();
    const poster = new GroupPoster(t.bot as GroupsClient, KeyValueStore.memory(), { selfId: () => t.botId, log: pino({ level: 'silent' }) });
    const request = { key: 'unit:1', groupId: t.groupId, subject: 'Orphan draft', body: 'adopted' };
    await adminOk(t.env.svc, 'faults/lose-answers', { count: 1, operations: ['newdraft'] });
    // The lost answer is tried again within the same post(): the draft newdraft made is found and used.
    const posted = await poster.post(request);
    expect(posted.earlier).toBe(false);
    expect((await serviceStats(t.env.svc)).faults.lost_answers).toBe(1);
    const topics = await t.topicsWith('Orphan draft');
    expect(topics.map((topic) => topic.id)).toEqual([posted.topicId]);
    expect(await t.drafts()).toEqual([]);
    expect(poster.posted('unit:1')).toMatchObject({ topicId: posted.topicId });
  });
});
