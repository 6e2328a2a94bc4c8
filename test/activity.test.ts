import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SEED } from '../src/service/demo-seed.js';
import type { Seed } from '../src/service/seed.js';
import { admin, call, expectError, login, loginAs, startTestService, type Session, type TestService } from './helpers/service.js';

const DAY = 86_400_000;
const MEMBER_ACTIONS = ['member_joined', 'member_left', 'member_banned'];
const MESSAGE_ACTIONS = ['topic_created', 'message_posted'];

const demoGroup = DEMO_SEED.groups![0]!;
/** The demo seed plus two moderators in different zones, a member who will leave, one who will join, and a second group. */
const SEED: Seed = {
  users: [
    ...DEMO_SEED.users!,
    { email: 'uma@example.com', password: 'uma-pw', full_name: 'Uma Utc', timezone: 'UTC' },
    { email: 'taro@example.com', password: 'taro-pw', full_name: 'Taro Tokyo', timezone: 'Asia/Tokyo' },
    { email: 'erin@example.com', password: 'erin-pw', full_name: 'Erin Former' },
    { email: 'frank@example.com', password: 'frank-pw', full_name: 'Frank Late' },
  ],
  groups: [
    {
      ...demoGroup,
      members: [
        ...demoGroup.members!,
        { email: 'uma@example.com', role: 'moderator' },
        { email: 'taro@example.com', role: 'moderator' },
        { email: 'erin@example.com', role: 'member' },
      ],
    },
    { name: 'other', members: [{ email: 'alice@example.com', role: 'owner' }, { email: 'bob@example.com', role: 'member' }] },
  ],
};

interface Entry {
  id: string;
  created: string;
  group_id: string;
  action: string;
  member_info_id: string;
  entry: string;
  via: string;
}

let svc: TestService;
let alice: Session;
let uma: Session;
let taro: Session;
/** 23:00 UTC on the day of the last entry; the service's "now" is 90 minutes later, past midnight UTC. */
let lastEntryAt: number;
let all: Entry[];

const iso = (ms: number): string => new Date(ms).toISOString();
const ids = (entries: Entry[]): string[] => entries.map((e) => String(e.id));

async function activity(session: Session, params: Record<string, unknown> = {}) {
  return call(svc, 'getactivitylog', { group_name: 'demo', limit: 100, ...params }, { auth: session });
}

async function entries(session: Session, params: Record<string, unknown> = {}): Promise<Entry[]> {
  const response = await activity(session, params);
  expect(response.status, response.text).toBe(200);
  expect(response.body.object).toBe('list');
  return response.body.data as Entry[];
}

function entriesWhere(predicate: (entry: Entry) => boolean): string[] {
  return ids(all.filter(predicate));
}

beforeAll(async () => {
  // Big ids: every id is above 2^53, so a filter that went through a JS number would miss.
  svc = await startTestService({ idStyle: 'big', seed: SEED });
  await admin(svc, 'subscriptions/remove', { group: 'demo', user: 'erin@example.com' });

  // A timeline: the seed (over 40 days ago), a topic 20 days ago, a reply 3 days ago, a join at 23:00 UTC.
  let now = Date.parse((await admin(svc, 'clock/advance', { seconds: 0 })).body.now);
  const day = new Date(now + 40 * DAY);
  lastEntryAt = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), 23, 0, 0);
  const advanceTo = async (target: number) => {
    now = Date.parse((await admin(svc, 'clock/advance', { seconds: (target - now) / 1000 })).body.now);
  };
  await advanceTo(lastEntryAt - 20 * DAY);
  const topic = await admin(svc, 'topics', { group: 'demo', user: 'alice@example.com', subject: 'Planning', body: 'Plans.' });
  await advanceTo(lastEntryAt - 3 * DAY);
  await admin(svc, 'messages', { topic: String(topic.body.topic.id), user: 'bob@example.com', body: 'Agreed.' });
  await advanceTo(lastEntryAt);
  await admin(svc, 'subscriptions', { group: 'demo', user: 'frank@example.com' });
  await advanceTo(lastEntryAt + 90 * 60_000);

  // Sessions last two weeks, so log in only now.
  alice = await loginAs(svc, 'alice');
  uma = await login(svc, 'uma@example.com', 'uma-pw');
  taro = await login(svc, 'taro@example.com', 'taro-pw');
  all = await entries(alice);
});

afterAll(async () => {
  await svc?.close();
});

describe('getactivitylog: access', () => {
  it('lists the group entries as activity_log objects, newest first', () => {
    // 9 joined or banned by the seed, erin leaving, the topic, the reply, frank joining.
    expect(all.length).toBe(13);
    for (const entry of all) {
      expect(entry).toMatchObject({ object: 'activity_log', group_id: all[0]!.group_id });
      expect(typeof entry.entry).toBe('string');
      expect(entry.via).toMatch(/^via_/);
    }
    const times = all.map((e) => Date.parse(e.created));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('needs view_activity: moderators pass; members and banned members are refused, non-members do not see the group', async () => {
    expect((await activity(await loginAs(svc, 'mo'))).status).toBe(200);
    expectError(await activity(await loginAs(svc, 'bob')), 'inadequate_permissions', 'view_activity');
    expectError(await activity(await loginAs(svc, 'dave')), 'inadequate_permissions', 'view_activity');
    // Not a member of the private group: it answers as a group that does not exist (#15 item 8).
    expectError(await activity(await login(svc, 'erin@example.com', 'erin-pw')), 'bad_request', 'invalid group_name');
  });

  it('needs a caller and exactly one known group', async () => {
    expectError(await call(svc, 'getactivitylog', { group_name: 'demo' }), 'authentication');
    expectError(await call(svc, 'getactivitylog', {}, { auth: alice }), 'bad_request', 'invalid group_id');
    expectError(await call(svc, 'getactivitylog', { group_id: '123' }, { auth: alice }), 'bad_request', 'invalid group_id');
    expectError(await call(svc, 'getactivitylog', { group_name: 'nope' }, { auth: alice }), 'bad_request', 'invalid group_name');
  });

  it('accepts group_id as well as group_name, and only shows that group', async () => {
    const byId = await entries(alice, { group_name: undefined, group_id: all[0]!.group_id });
    expect(ids(byId)).toEqual(ids(all));
    const other = await entries(alice, { group_name: 'other' });
    expect(other.length).toBe(2);
    expect(other.every((e) => e.group_id !== all[0]!.group_id)).toBe(true);
  });

  it('answers the extended form', async () => {
    const response = await activity(alice, { extended: 1, limit: 1 });
    expect(response.status).toBe(200);
    expect(response.body[0].object).toBe('list');
    expect(response.body[1].object).toBe('user');
  });
});

describe('getactivitylog: filters', () => {
  it('filter_by selects a family of actions', async () => {
    expect(ids(await entries(alice, { filter_by: 'member' }))).toEqual(entriesWhere((e) => MEMBER_ACTIONS.includes(e.action)));
    const messages = await entries(alice, { filter_by: 'message' });
    expect(ids(messages)).toEqual(entriesWhere((e) => MESSAGE_ACTIONS.includes(e.action)));
    expect(messages.map((e) => e.action)).toEqual(['message_posted', 'topic_created']);
    expect(await entries(alice, { filter_by: 'mod' })).toEqual([]);
    expect(await entries(alice, { filter_by: 'pay' })).toEqual([]);
    expectError(await activity(alice, { filter_by: 'members' }), 'bad_request', 'invalid filter_by');
  });

  it('action selects one activity type, and combines with filter_by', async () => {
    const banned = await entries(alice, { action: 'member_banned' });
    expect(banned.length).toBe(1);
    expect(ids(await entries(alice, { action: 'member_left' }))).toEqual(entriesWhere((e) => e.action === 'member_left'));
    expect(await entries(alice, { action: 'member_joined', filter_by: 'message' })).toEqual([]);
    expectError(await activity(alice, { action: 'nope' }), 'bad_request', 'invalid action');
    expectError(await activity(alice, { action: 'toString' }), 'bad_request', 'invalid action');
  });

  it('member_info_id selects the entries about a current member', async () => {
    const reply = all.find((e) => e.action === 'message_posted')!;
    const bobSub = String(reply.member_info_id);
    const aboutBob = await entries(alice, { member_info_id: bobSub });
    expect(aboutBob.map((e) => e.action)).toEqual(['message_posted', 'member_joined']);
    expect(aboutBob.every((e) => String(e.member_info_id) === bobSub)).toBe(true);
    // A banned member is still a member.
    const daveSub = String(all.find((e) => e.action === 'member_banned')!.member_info_id);
    expect((await entries(alice, { member_info_id: daveSub })).length).toBe(1);
    // 0 is how the service writes "nobody": no filter.
    expect((await entries(alice, { member_info_id: 0 })).length).toBe(all.length);
  });

  it('past_member_info_id selects the entries about a member who left', async () => {
    const erinSub = String(all.find((e) => e.action === 'member_left')!.member_info_id);
    const aboutErin = await entries(alice, { past_member_info_id: erinSub });
    expect(aboutErin.map((e) => e.action)).toEqual(['member_left', 'member_joined']);
    // A past member is not a member, and a member is not a past member.
    expectError(await activity(alice, { member_info_id: erinSub }), 'bad_request', 'invalid member_info_id');
    const bobSub = String(all.find((e) => e.action === 'message_posted')!.member_info_id);
    expectError(await activity(alice, { past_member_info_id: bobSub }), 'bad_request', 'invalid past_member_info_id');
  });

  it('refuses member ids that are unknown or of another group, and both filters at once', async () => {
    const otherSub = String((await entries(alice, { group_name: 'other' }))[0]!.member_info_id);
    expectError(await activity(alice, { member_info_id: otherSub }), 'bad_request', 'invalid member_info_id');
    expectError(await activity(alice, { member_info_id: 'nope' }), 'bad_request', 'invalid member_info_id');
    expectError(await activity(alice, { past_member_info_id: 'nope' }), 'bad_request', 'invalid past_member_info_id');
    const erinSub = String(all.find((e) => e.action === 'member_left')!.member_info_id);
    const bobSub = String(all.find((e) => e.action === 'message_posted')!.member_info_id);
    expectError(await activity(alice, { member_info_id: bobSub, past_member_info_id: erinSub }), 'bad_request',
      'give one of member_info_id and past_member_info_id, not both');
  });
});

describe('getactivitylog: restrict_date', () => {
  it('today starts at midnight in the caller\'s timezone', async () => {
    // The last entry is at 23:00 UTC, now is 00:30 UTC the next day: yesterday in UTC, today in Tokyo.
    expect(await entries(uma, { restrict_date: 'today' })).toEqual([]);
    const tokyoToday = await entries(taro, { restrict_date: 'today' });
    expect(tokyoToday).toHaveLength(1);
    // The clock is moved by HTTP calls, so the entry lands a few milliseconds after the target.
    expect(Date.parse(tokyoToday[0]!.created) - lastEntryAt).toBeLessThan(10_000);
  });

  it('last_week and last_30_days count back from now', async () => {
    expect((await entries(uma, { restrict_date: 'last_week' })).map((e) => e.action)).toEqual(['member_joined', 'message_posted']);
    expect((await entries(uma, { restrict_date: 'last_30_days' })).map((e) => e.action))
      .toEqual(['member_joined', 'message_posted', 'topic_created']);
  });

  it('after takes start_date and excludes that instant', async () => {
    const after = await entries(uma, { restrict_date: 'after', start_date: iso(lastEntryAt - 10 * DAY) });
    expect(after.map((e) => e.action)).toEqual(['member_joined', 'message_posted']);
    const reply = all.find((e) => e.action === 'message_posted')!;
    expect((await entries(uma, { restrict_date: 'after', start_date: reply.created })).map((e) => e.action))
      .toEqual(['member_joined']);
    expectError(await activity(uma, { restrict_date: 'after' }), 'bad_request', 'invalid start_date');
    expectError(await activity(uma, { restrict_date: 'after', start_date: 'last tuesday' }), 'bad_request', 'invalid start_date');
  });

  it('before takes end_date, or start_date when end_date is absent', async () => {
    const cut = iso(lastEntryAt - 10 * DAY);
    const expected = entriesWhere((e) => Date.parse(e.created) < lastEntryAt - 10 * DAY);
    expect(expected.length).toBe(all.length - 2);
    expect(ids(await entries(uma, { restrict_date: 'before', end_date: cut }))).toEqual(expected);
    expect(ids(await entries(uma, { restrict_date: 'before', start_date: cut }))).toEqual(expected);
    expectError(await activity(uma, { restrict_date: 'before' }), 'bad_request', 'invalid end_date');
    expectError(await activity(uma, { restrict_date: 'before', end_date: '2024-13-01' }), 'bad_request', 'invalid end_date');
    expectError(await activity(uma, { restrict_date: 'before', start_date: 'soon' }), 'bad_request', 'invalid start_date');
  });

  it('between takes both dates, inclusive', async () => {
    const topic = all.find((e) => e.action === 'topic_created')!;
    const reply = all.find((e) => e.action === 'message_posted')!;
    const exact = await entries(uma, { restrict_date: 'between', start_date: topic.created, end_date: reply.created });
    expect(exact.map((e) => e.action)).toEqual(['message_posted', 'topic_created']);
    expectError(await activity(uma, { restrict_date: 'between', start_date: topic.created }), 'bad_request', 'invalid end_date');
    expectError(await activity(uma, { restrict_date: 'between', end_date: reply.created }), 'bad_request', 'invalid start_date');
    expectError(await activity(uma, { restrict_date: 'between', start_date: reply.created, end_date: topic.created }),
      'bad_request', 'invalid end_date');
    expectError(await activity(uma, { restrict_date: 'between', start_date: topic.created, end_date: 'x' }),
      'bad_request', 'invalid end_date');
  });

  it('reads dates without an offset in the caller\'s timezone; a bare end date covers its whole day', async () => {
    // The reply is at 23:00 UTC: on its UTC date, but already the next day in Tokyo.
    const replyDay = iso(lastEntryAt - 3 * DAY).slice(0, 10);
    const params = { restrict_date: 'between', start_date: replyDay, end_date: replyDay };
    expect((await entries(uma, params)).map((e) => e.action)).toEqual(['message_posted']);
    expect(await entries(taro, params)).toEqual([]);
    expect((await entries(uma, { ...params, start_date: `${replyDay}T22:59:00` })).map((e) => e.action)).toEqual(['message_posted']);
    expect(await entries(uma, { ...params, start_date: `${replyDay}T23:01:00` })).toEqual([]);
  });

  it('refuses other values', async () => {
    expectError(await activity(uma, { restrict_date: 'yesterday' }), 'bad_request', 'invalid restrict_date');
  });
});

describe('getactivitylog: paging and sorting', () => {
  it('pages through every entry once, in id order', async () => {
    const byId = await entries(alice, { sort_field: 'id', sort_dir: 'asc' });
    const seen: string[] = [];
    let params: Record<string, unknown> = { limit: 3, sort_field: 'id', sort_dir: 'asc' };
    for (let pages = 0; pages < 10; pages += 1) {
      const response = await activity(alice, params);
      expect(response.status, response.text).toBe(200);
      const page = response.body;
      expect(page).toMatchObject({ total_count: all.length, start_item: seen.length + 1, sort_field: 'id', sort_dir: 'asc' });
      seen.push(...ids(page.data));
      expect(page.end_item).toBe(seen.length);
      if (!page.has_more) {
        expect(page.next_page_token).toBe(0);
        break;
      }
      params = { limit: 3, page_token: String(page.next_page_token) };
    }
    expect(seen).toEqual(ids(byId));
    expect(ids(await entries(alice, { sort_field: 'id', sort_dir: 'desc' }))).toEqual(ids(byId).reverse());
  });

  it('pages a filtered list and sorts by created', async () => {
    const first = await activity(alice, { filter_by: 'member', limit: 5, sort_field: 'created', sort_dir: 'asc' });
    const second = await activity(alice, { filter_by: 'member', limit: 5, page_token: String(first.body.next_page_token) });
    const members = [...first.body.data, ...second.body.data] as Entry[];
    expect(members.every((e) => MEMBER_ACTIONS.includes(e.action))).toBe(true);
    const times = members.map((e) => Date.parse(e.created));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(new Set(ids(members)).size).toBe(members.length);
  });

  it('refuses unknown sort fields, bad limits and foreign page tokens', async () => {
    expectError(await activity(alice, { sort_field: 'action' }), 'invalid_value', 'sort_field');
    expectError(await activity(alice, { sort_dir: 'up' }), 'invalid_value', 'sort_dir');
    expectError(await activity(alice, { limit: 0 }), 'invalid_value', 'limit');
    expectError(await activity(alice, { limit: 101 }), 'invalid_value', 'limit');
    const page = await activity(alice, { limit: 1 });
    expectError(await activity(uma, { page_token: String(page.body.next_page_token) }), 'invalid_value', 'page_token');
  });
});
