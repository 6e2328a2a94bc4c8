import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompatClient } from './helpers/compat-client.js';
import { admin, ok, startTestService, type TestService } from './helpers/service.js';

/**
 * The compatibility suite (#21): the requests the admin report scripts make (field notes "Request forms
 * real clients send"): a login with the fields in the query string and a JSON content type with no
 * body, every read sent as POST with its parameters in the query string and no csrf, `sort_field=updated`
 * on search, and the group calls outside the spec (getsubs, getgroup, getmembers, getsubgroups,
 * getdatabases, getmessage by msg_num).
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
  ok(await admin(svc, 'groups', { name: 'demo+events', members: [{ email: 'mo@example.com', role: 'owner' }] }));
});
afterAll(async () => svc.close());

async function loggedIn(email: string, password: string): Promise<CompatClient> {
  const client = new CompatClient(svc);
  const login = await client.send('POST', 'login', { email, password }, { headers: { 'content-type': 'application/json' } });
  expect(login.status).toBe(200);
  client.auth.cookie = ([] as string[]).concat(login.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
  return client;
}

describe('admin report scripts', () => {
  it('a membership report: groups, members paged to the end, subgroups, databases', async () => {
    const client = await loggedIn('mo@example.com', 'mo-demo');
    const subs = await client.all('POST', 'getsubs', { limit: 100 });
    expect(subs.map((s) => s.group_name)).toEqual(['demo', 'demo+events']);
    for (const sub of subs) {
      const group = await client.ok('POST', 'getgroup', { group_id: sub.group_id });
      const members = await client.all('POST', 'getmembers', { group_id: sub.group_id, limit: 2 });
      // Moderators see everyone, the banned included, with their addresses.
      expect(members.length, sub.group_name).toBeGreaterThanOrEqual(group.subs_count);
      expect(members.every((m) => m.email.includes('@'))).toBe(true);
    }
    const subgroups = await client.all('POST', 'getsubgroups', { group_name: 'demo', limit: 100 });
    expect(subgroups.map((g) => g.name)).toEqual(['demo+events']);
    expect(await client.all('POST', 'getdatabases', { group_name: 'demo' })).toEqual([]);
    // Every request was a POST without csrf.
    expect(client.requests.every((r) => r.startsWith('POST ') && !r.includes('csrf'))).toBe(true);
  });

  it('an activity report: topics and messages to the end, the latest updates first, a message by number', async () => {
    const client = await loggedIn('bob@example.com', 'bob-demo');
    const topics = await client.all('POST', 'gettopics', { group_name: 'demo', limit: 3 });
    const messages = await client.all('POST', 'getmessages', { group_name: 'demo', limit: 4 });
    expect(topics.reduce((sum, t) => sum + t.num_messages, 0)).toBe(messages.length);
    const updated = await client.ok('POST', 'searcharchives', { group_name: 'demo', q: 'the', sort_field: 'updated', sort_dir: 'desc', limit: 100 });
    const times = updated.data.map((hit: { updated: string }) => Date.parse(hit.updated));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const first = await client.ok('POST', 'getmessage', { group_name: 'demo', msg_num: 1 });
    expect(messages.find((m) => m.msg_num === 1).id).toBe(first.id);
  });

  it('a typo in a group name is an error object the script can read, not a crash', async () => {
    const client = await loggedIn('bob@example.com', 'bob-demo');
    const answer = await client.send('POST', 'getgroup', { group_name: 'dmeo' });
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual({ object: 'error', type: 'group_not_found', extra: 'invalid group_name' });
  });
});
