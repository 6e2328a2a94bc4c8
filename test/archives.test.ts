import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  admin, call, expectError, loginAs, startTestService, type Session, type TestService,
} from './helpers/service.js';

const LIST_MEMBERS = [
  'object', 'total_count', 'start_item', 'end_item', 'has_more', 'next_page_token', 'sort_field', 'second_order',
  'query', 'sort_dir', 'data',
];

// The demo seed's topics, most recent message first.
const DEMO_TOPICS = ['Release planning #announce', 'Meeting notes', 'How do I write a bot? #help #bots', 'Welcome to the demo group #announce'];

let svc: TestService;
let alice: Session;
let bob: Session;
let dave: Session;

beforeAll(async () => {
  svc = await startTestService();
  [alice, bob, dave] = await Promise.all([loginAs(svc, 'alice'), loginAs(svc, 'bob'), loginAs(svc, 'dave')]);
  // A second group bob belongs to, and a public one he does not.
  await admin(svc, 'groups', { name: 'second' });
  await admin(svc, 'subscriptions', { group: 'second', user: 'bob@example.com', role: 'member' });
  await admin(svc, 'topics', { group: 'second', user: 'bob@example.com', subject: 'Second group topic', body: 'hello' });
  await admin(svc, 'groups', { name: 'open', settings: { privacy: 'group_privacy_none' } });
  await admin(svc, 'subscriptions', { group: 'open', user: 'alice@example.com', role: 'owner' });
  await admin(svc, 'topics', { group: 'open', user: 'alice@example.com', subject: 'Public topic', body: 'for everyone' });
});

afterAll(async () => {
  await svc?.close();
});

async function topicId(subject: string): Promise<unknown> {
  const list = await call(svc, 'gettopics', { group_name: 'demo', limit: 100 }, { auth: alice });
  return list.body.data.find((t: { subject: string }) => t.subject === subject).id;
}

describe('gettopics', () => {
  it('lists a group\'s topics, most recent first, with group_perms, group and sub_data', async () => {
    const response = await call(svc, 'gettopics', { group_name: 'demo' }, { auth: bob });
    expect(response.status).toBe(200);
    const list = response.body;
    for (const member of LIST_MEMBERS) expect(list).toHaveProperty(member);
    expect(list.object).toBe('list');
    expect(list.total_count).toBe(4);
    expect(list.sort_field).toBe('most_recent_message');
    expect(list.sort_dir).toBe('desc');
    expect(list.data.map((t: { subject: string }) => t.subject)).toEqual(DEMO_TOPICS);
    expect(list.data[0].object).toBe('topic');
    expect(list.group_perms.object).toBe('perms');
    expect(list.group_perms.archives_visible).toBe(true);
    expect(list.group.object).toBe('group');
    expect(list.group.name).toBe('demo');
    expect(list.sub_data).toHaveLength(1);
    expect(list.sub_data[0].object).toBe('member_info');
    expect(list.sub_data[0].user_id).toBe(bob.user.id);
  });

  it('without a group lists the topics of the groups the caller belongs to', async () => {
    const list = (await call(svc, 'gettopics', { limit: 100 }, { auth: bob })).body;
    const subjects = list.data.map((t: { subject: string }) => t.subject);
    expect(subjects).toHaveLength(5);
    expect(subjects[0]).toBe('Second group topic');
    expect(subjects).not.toContain('Public topic');
    expect(list.sub_data.map((s: { group_name: string }) => s.group_name).sort()).toEqual(['demo', 'second']);
    // The spec's topic list carries its group: the group of the page's first topic.
    expect(list.group.name).toBe('second');
    expect(list.group_perms).toEqual(list.group.perms);

    // dave is banned from demo: nothing to see, and no member_info either.
    const banned = (await call(svc, 'gettopics', {}, { auth: dave })).body;
    expect(banned.total_count).toBe(0);
    expect(banned.data).toEqual([]);
    expect(banned.sub_data).toEqual([]);
    expect(banned.group).toBeNull();
  });

  it('shows public archives to non-members, with an empty sub_data', async () => {
    const list = (await call(svc, 'gettopics', { group_name: 'open' }, { auth: bob })).body;
    expect(list.data.map((t: { subject: string }) => t.subject)).toEqual(['Public topic']);
    expect(list.sub_data).toEqual([]);
  });

  it('sorts by created, updated and id and pages with page tokens', async () => {
    const asc = (await call(svc, 'gettopics', { group_name: 'demo', sort_field: 'created', sort_dir: 'asc' }, { auth: bob })).body;
    expect(asc.data.map((t: { subject: string }) => t.subject)).toEqual([...DEMO_TOPICS].reverse());
    const byId = (await call(svc, 'gettopics', { group_name: 'demo', sort_field: 'id', sort_dir: 'asc' }, { auth: bob })).body;
    expect(byId.data[0].subject).toBe(DEMO_TOPICS[3]);
    const updated = await call(svc, 'gettopics', { group_name: 'demo', sort_field: 'updated' }, { auth: bob });
    expect(updated.body.data[0].subject).toBe(DEMO_TOPICS[0]);

    const first = (await call(svc, 'gettopics', { group_name: 'demo', limit: 3 }, { auth: bob })).body;
    expect([first.start_item, first.end_item, first.has_more]).toEqual([1, 3, true]);
    const second = (await call(svc, 'gettopics', { group_name: 'demo', limit: 3, page_token: first.next_page_token }, { auth: bob })).body;
    expect([second.start_item, second.end_item, second.has_more, second.next_page_token]).toEqual([4, 4, false, 0]);
    expect(second.data[0].subject).toBe(DEMO_TOPICS[3]);
  });

  it('answers the errors of bad parameters and missing permissions', async () => {
    expectError(await call(svc, 'gettopics', { group_name: 'nope' }, { auth: bob }), 'bad_request', 'invalid group_name');
    expectError(await call(svc, 'gettopics', { group_id: '424242' }, { auth: bob }), 'bad_request', 'invalid group_id');
    expectError(await call(svc, 'gettopics', { group_name: 'demo', sort_field: 'subject' }, { auth: bob }), 'invalid_value', 'sort_field');
    expectError(await call(svc, 'gettopics', { group_name: 'demo', sort_dir: 'up' }, { auth: bob }), 'invalid_value', 'sort_dir');
    expectError(await call(svc, 'gettopics', { group_name: 'demo', limit: 101 }, { auth: bob }), 'invalid_value', 'limit');
    expectError(await call(svc, 'gettopics', { group_name: 'demo', page_token: 'forged' }, { auth: bob }), 'invalid_value', 'page_token');
    expectError(await call(svc, 'gettopics', { group_name: 'demo' }, { auth: dave }), 'inadequate_permissions');
    // alice is not in the private group `second`: it answers as one that does not exist (#15 item 8).
    expectError(await call(svc, 'gettopics', { group_name: 'second' }, { auth: alice }), 'bad_request', 'invalid group_name');
    expectError(await call(svc, 'gettopics', { group_name: 'demo' }), 'authentication');
  });

  it('answers the extended form as a two-element array', async () => {
    const response = await call(svc, 'gettopics', { group_name: 'demo', extended: 'true' }, { auth: bob });
    expect(Array.isArray(response.body)).toBe(true);
    expect(response.body[0].object).toBe('list');
    expect(response.body[1].object).toBe('user');
  });
});

describe('gettopic', () => {
  it('lists a topic\'s messages oldest first with the topic and group members', async () => {
    const id = await topicId('How do I write a bot? #help #bots');
    const list = (await call(svc, 'gettopic', { topic_id: id }, { auth: bob })).body;
    expect(list.object).toBe('list');
    expect(list.sort_field).toBe('created');
    expect(list.sort_dir).toBe('asc');
    expect(list.data.map((m: { msg_num: number }) => m.msg_num)).toEqual([3, 4, 5]);
    expect(list.data.every((m: { object: string; topic_id: unknown }) => m.object === 'message' && m.topic_id === id)).toBe(true);
    expect(list.topic.object).toBe('topic');
    expect(list.topic.id).toBe(id);
    expect(list.cover_photo_url).toBe('');
    expect(list.group.name).toBe('demo');
    expect(list.group_perms.object).toBe('perms');
    expect(list.sub_data[0].user_id).toBe(bob.user.id);

    const desc = (await call(svc, 'gettopic', { topic_id: id, sort_field: 'msg_num', sort_dir: 'desc' }, { auth: bob })).body;
    expect(desc.data.map((m: { msg_num: number }) => m.msg_num)).toEqual([5, 4, 3]);
  });

  it('answers invalid topic_id for a missing or unknown topic, and checks archives_visible', async () => {
    expectError(await call(svc, 'gettopic', {}, { auth: bob }), 'bad_request', 'invalid topic_id');
    expectError(await call(svc, 'gettopic', { topic_id: '' }, { auth: bob }), 'bad_request', 'invalid topic_id');
    expectError(await call(svc, 'gettopic', { topic_id: '987654321' }, { auth: bob }), 'bad_request', 'invalid topic_id');
    expectError(await call(svc, 'gettopic', { topic_id: 'x'.repeat(256) }, { auth: bob }), 'bad_request', 'invalid topic_id');
    expectError(await call(svc, 'gettopic', { topic_id: await topicId('Meeting notes') }, { auth: dave }), 'inadequate_permissions');
  });
});

describe('getmessages', () => {
  it('lists a group\'s messages newest first with the topic of the first', async () => {
    const list = (await call(svc, 'getmessages', { group_name: 'demo', limit: 100 }, { auth: bob })).body;
    expect(list.total_count).toBe(8);
    expect(list.sort_field).toBe('created');
    expect(list.sort_dir).toBe('desc');
    expect(list.data[0].msg_num).toBe(8);
    expect(list.topic).toMatchObject({ object: 'topic', id: list.data[0].topic_id });
    expect(list.cover_photo_url).toBe('');
    expect(list.group.name).toBe('demo');
    expect(list.group_perms.archives_visible).toBe(true);
    expect(list.sub_data).toHaveLength(1);

    const byNum = (await call(svc, 'getmessages', { group_name: 'demo', sort_field: 'msg_num', sort_dir: 'asc', limit: 3 }, { auth: bob })).body;
    expect(byNum.data.map((m: { msg_num: number }) => m.msg_num)).toEqual([1, 2, 3]);
  });

  it('needs a group and archives_visible', async () => {
    expectError(await call(svc, 'getmessages', {}, { auth: bob }), 'bad_request', 'invalid group_id');
    expectError(await call(svc, 'getmessages', { group_name: 'nope' }, { auth: bob }), 'bad_request', 'invalid group_name');
    expectError(await call(svc, 'getmessages', { group_name: 'demo' }, { auth: dave }), 'inadequate_permissions');
    expectError(await call(svc, 'getmessages', { group_name: 'demo', sort_field: 'relevance' }, { auth: bob }), 'invalid_value', 'sort_field');
  });
});

describe('with opaque identifiers', () => {
  let opaque: TestService;
  let carol: Session;

  beforeAll(async () => {
    opaque = await startTestService({ idStyle: 'opaque' });
    carol = await loginAs(opaque, 'carol');
  });

  afterAll(async () => {
    await opaque?.close();
  });

  it('round-trips topic and group ids as given', async () => {
    const topics = (await call(opaque, 'gettopics', { group_name: 'demo' }, { auth: carol })).body;
    const topic = topics.data.find((t: { subject: string }) => t.subject === 'Meeting notes');
    expect(typeof topic.id).toBe('string');
    const list = (await call(opaque, 'gettopic', { topic_id: topic.id }, { auth: carol })).body;
    expect(list.data).toHaveLength(1);
    expect(list.topic.id).toBe(topic.id);
    const byId = (await call(opaque, 'getmessages', { group_id: topics.group.id }, { auth: carol })).body;
    expect(byId.total_count).toBe(8);
  });
});
