import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  admin, call, expectError, login, loginAs, ok, send, startTestService, type Session, type TestService,
} from './helpers/service.js';

/**
 * Issue #21, item 2 and 3: the calls public clients make first, our extensions (docs/protocol.md
 * "Extensions"), with the spec's paging, permissions, errors and id styles; `group_not_found` for a group
 * that is not there.
 */

let svc: TestService;
let bob: Session;
let mo: Session;
let outsider: Session;
beforeAll(async () => {
  svc = await startTestService();
  // A subgroup (`parent+sub`), a hidden sibling bob is not in, a public group, and someone in none of them.
  ok(await admin(svc, 'users', { email: 'olga@example.com', password: 'olga-pass', full_name: 'Olga Outsider' }));
  ok(await admin(svc, 'groups', { name: 'demo+events', title: 'Demo events', members: [{ email: 'bob@example.com' }] }));
  ok(await admin(svc, 'groups', { name: 'demo+staff', members: [{ email: 'mo@example.com', role: 'owner' }] }));
  ok(await admin(svc, 'groups', {
    name: 'open', settings: { privacy: 'group_privacy_none', members_visible: 'group_view_members_anyone' },
    members: [{ email: 'alice@example.com', role: 'owner' }],
  }));
  bob = await loginAs(svc, 'bob');
  mo = await loginAs(svc, 'mo');
  outsider = await login(svc, 'olga@example.com', 'olga-pass');
});
afterAll(async () => svc.close());

describe('getsubs', () => {
  it("lists the caller's subscriptions with group_id and group_name, by name, paged to the end", async () => {
    const first = ok(await call(svc, 'getsubs', { limit: 1 }, { auth: bob }));
    expect(first).toMatchObject({ object: 'list', total_count: 2, has_more: true, sort_field: 'group_name' });
    const second = ok(await call(svc, 'getsubs', { limit: 1, page_token: first.next_page_token }, { auth: bob }));
    expect(second).toMatchObject({ has_more: false, next_page_token: 0 });
    const subs = [...first.data, ...second.data];
    expect(subs.map((s: { group_name: string }) => s.group_name)).toEqual(['demo', 'demo+events']);
    const [demo] = subs;
    expect(demo).toMatchObject({ object: 'subscription', user_id: bob.user.id, email: 'bob@example.com', nice_group_name: 'Demo Group' });
    expect(typeof demo.group_id).toBe('number');
    expect(demo.perms).toMatchObject({ object: 'perms', archives_visible: true, members_visible: true });
  });

  it('answers POST with the parameters in the query string and no csrf, as the admin scripts send it', async () => {
    const answer = await send(svc, '/api/v1/getsubs?limit=100', 'POST', { cookie: mo.cookie });
    expect(ok(answer).data.map((s: { group_name: string }) => s.group_name)).toEqual(['demo', 'demo+staff']);
  });

  it('is an empty list for someone subscribed to nothing, and needs a login', async () => {
    expect(ok(await call(svc, 'getsubs', {}, { auth: outsider }))).toMatchObject({ total_count: 0, data: [], has_more: false });
    expectError(await call(svc, 'getsubs', {}), 'authentication');
  });
});

describe('getgroup', () => {
  it('answers the group object by name or id, with the caller\'s perms and its parent', async () => {
    const demo = ok(await call(svc, 'getgroup', { group_name: 'demo' }, { auth: bob }));
    expect(demo).toMatchObject({ object: 'group', name: 'demo', parent_group_id: 0, perms: { can_post: true } });
    const events = ok(await call(svc, 'getgroup', { group_name: 'demo+events' }, { auth: bob }));
    expect(events.parent_group_id).toBe(demo.id);
    expect(ok(await call(svc, 'getgroup', { group_id: demo.id }, { auth: bob })).name).toBe('demo');
  });

  it('is group_not_found for a group that does not exist and for one the caller may not see, alike', async () => {
    expectError(await call(svc, 'getgroup', { group_name: 'nosuch' }, { auth: bob }), 'group_not_found', 'invalid group_name');
    expectError(await call(svc, 'getgroup', { group_name: 'demo+staff' }, { auth: bob }), 'group_not_found', 'invalid group_name');
    expectError(await call(svc, 'getgroup', { group_id: '999999999' }, { auth: bob }), 'group_not_found', 'invalid group_id');
    // Naming no group is a bad request, not a missing group.
    expectError(await call(svc, 'getgroup', {}, { auth: bob }), 'bad_request', 'invalid group_id');
    // The spec's own operations keep the spec's answer.
    expectError(await call(svc, 'getmessages', { group_name: 'nosuch' }, { auth: bob }), 'bad_request', 'invalid group_name');
  });

  it('shows a public group to anyone logged in', async () => {
    expect(ok(await call(svc, 'getgroup', { group_name: 'open' }, { auth: outsider })).name).toBe('open');
  });
});

describe('getmessage', () => {
  it('finds a message by group name and msg_num, and the same by message_id', async () => {
    const byNum = ok(await call(svc, 'getmessage', { group_name: 'demo', msg_num: 1 }, { auth: bob }));
    expect(byNum).toMatchObject({ object: 'message', msg_num: 1 });
    const byId = ok(await call(svc, 'getmessage', { message_id: byNum.id }, { auth: bob }));
    expect(byId).toEqual(byNum);
  });

  it('refuses an unknown msg_num, an unknown id, an unknown group, and a banned member', async () => {
    expectError(await call(svc, 'getmessage', { group_name: 'demo', msg_num: 99999 }, { auth: bob }), 'bad_request', 'invalid msg_num');
    expectError(await call(svc, 'getmessage', { message_id: '123456789012' }, { auth: bob }), 'bad_request', 'invalid message_id');
    expectError(await call(svc, 'getmessage', { group_name: 'nosuch', msg_num: 1 }, { auth: bob }), 'group_not_found', 'invalid group_name');
    expectError(await call(svc, 'getmessage', { group_name: 'demo', msg_num: 0 }, { auth: bob }), 'invalid_value', 'msg_num');
    expectError(await call(svc, 'getmessage', {}, { auth: bob }), 'bad_request', 'invalid message_id');
    const dave = await loginAs(svc, 'dave');
    expectError(await call(svc, 'getmessage', { group_name: 'demo', msg_num: 1 }, { auth: dave }), 'inadequate_permissions', 'archives_visible');
    // A message of a group the caller may not see answers as an unknown one.
    const hidden = ok(await admin(svc, 'topics', { group: 'demo+staff', user: 'mo@example.com', subject: 'Staff only', body: 'x' }));
    const staffMessage = ok(await call(svc, 'getmessage', { group_name: 'demo+staff', msg_num: 1 }, { auth: mo }));
    expect(staffMessage.id).toBe(hidden.message.id);
    expectError(await call(svc, 'getmessage', { message_id: staffMessage.id }, { auth: bob }), 'bad_request', 'invalid message_id');
  });
});

describe('getmembers', () => {
  it('lists the members to those allowed to see them, addresses only for moderators', async () => {
    const forBob = ok(await call(svc, 'getmembers', { group_name: 'demo', limit: 100 }, { auth: bob }));
    expect(forBob.data.every((m: { object: string }) => m.object === 'member_info')).toBe(true);
    const names = forBob.data.map((m: { user_name: string }) => m.user_name);
    expect(names).toEqual(expect.arrayContaining(['alice', 'mo', 'bob', 'carol', 'bot']));
    // The banned member is not among the members for a member; the addresses are not shown but bob's own.
    expect(names).not.toContain('dave');
    const emails = forBob.data.map((m: { user_name: string; email: string }) => [m.user_name, m.email]);
    expect(emails.filter(([, email]: string[]) => email !== '')).toEqual([['bob', 'bob@example.com']]);

    const forMo = ok(await call(svc, 'getmembers', { group_name: 'demo', limit: 100 }, { auth: mo }));
    expect(forMo.data.map((m: { user_name: string }) => m.user_name)).toContain('dave');
    expect(forMo.data.find((m: { user_name: string }) => m.user_name === 'carol').email).toBe('carol@example.com');
  });

  it('pages to the end with next_page_token, each member once', async () => {
    const seen: string[] = [];
    let token: unknown;
    for (let pages = 0; pages < 10; pages += 1) {
      const page = ok(await call(svc, 'getmembers', { group_name: 'demo', limit: 2, ...(token ? { page_token: token } : {}) }, { auth: mo }));
      seen.push(...page.data.map((m: { id: string }) => String(m.id)));
      if (!page.has_more) break;
      token = page.next_page_token;
    }
    expect(seen).toHaveLength(6);
    expect(new Set(seen).size).toBe(6);
  });

  it('is refused where members are hidden, and answers a public group\'s members to anyone', async () => {
    ok(await admin(svc, 'groups', {
      name: 'quiet', settings: { members_visible: 'group_view_members_moderators' },
      members: [{ email: 'alice@example.com', role: 'owner' }, { email: 'bob@example.com' }],
    }));
    expectError(await call(svc, 'getmembers', { group_name: 'quiet' }, { auth: bob }), 'inadequate_permissions', 'members_visible');
    const open = ok(await call(svc, 'getmembers', { group_name: 'open' }, { auth: outsider }));
    expect(open.data.map((m: { user_name: string; email: string }) => [m.user_name, m.email])).toEqual([['alice', '']]);
    expectError(await call(svc, 'getmembers', { group_name: 'nosuch' }, { auth: bob }), 'group_not_found', 'invalid group_name');
  });
});

describe('getmembers type and searchmembers (admin clients)', () => {
  const names = (list: { data: Array<{ user_name: string }> }) => list.data.map((m) => m.user_name).sort();

  it('type picks mods, members, banned (for those who may ban), and no pending or bouncing members', async () => {
    expect(names(ok(await call(svc, 'getmembers', { group_name: 'demo', type: 'mods', limit: 100 }, { auth: mo })))).toEqual(['alice', 'mo']);
    expect(names(ok(await call(svc, 'getmembers', { group_name: 'demo', type: 'members', limit: 100 }, { auth: mo }))))
      .toEqual(['alice', 'bob', 'bot', 'carol', 'mo']);
    expect(names(ok(await call(svc, 'getmembers', { group_name: 'demo', type: 'banned', limit: 100 }, { auth: mo })))).toEqual(['dave']);
    for (const type of ['pending', 'bouncing']) {
      expect(ok(await call(svc, 'getmembers', { group_name: 'demo', type, page_token: 0 }, { auth: mo, method: 'POST', csrf: false }))).toMatchObject({ total_count: 0, data: [] });
    }
    expectError(await call(svc, 'getmembers', { group_name: 'demo', type: 'banned' }, { auth: bob }), 'inadequate_permissions', 'ban_members');
    expectError(await call(svc, 'getmembers', { group_name: 'demo', type: 'everyone' }, { auth: mo }), 'invalid_value', 'type');
  });

  it('searchmembers finds by name for anyone who sees the members, by address only for moderators', async () => {
    const byName = ok(await call(svc, 'searchmembers', { group_name: 'demo', q: 'carol' }, { auth: bob }));
    expect(byName.data).toEqual([expect.objectContaining({ object: 'member_info', user_name: 'carol', email: '', extra_member_data: [] })]);
    expect(ok(await call(svc, 'searchmembers', { group_name: 'demo', q: 'carol@example' }, { auth: bob })).data).toEqual([]);
    const byAddress = ok(await call(svc, 'searchmembers', { group_name: 'demo', q: 'CAROL@example.com' }, { auth: mo, method: 'POST', csrf: false }));
    expect(byAddress.data.map((m: { email: string; user_id: unknown }) => [m.email, typeof m.user_id])).toEqual([['carol@example.com', 'number']]);
    expectError(await call(svc, 'searchmembers', { group_name: 'nosuch', q: 'x' }, { auth: mo }), 'group_not_found', 'invalid group_name');
  });
});

describe('getsubgroups and getdatabases', () => {
  it('lists the subgroups the caller may see', async () => {
    const forBob = ok(await call(svc, 'getsubgroups', { group_name: 'demo' }, { auth: bob }));
    expect(forBob.data.map((g: { name: string }) => g.name)).toEqual(['demo+events']);
    const forMo = ok(await call(svc, 'getsubgroups', { group_name: 'demo' }, { auth: mo }));
    expect(forMo.data.map((g: { name: string }) => g.name)).toEqual(['demo+staff']);
    expect(forMo.data[0]).toMatchObject({ object: 'group', perms: { manage_group_settings: true } });
    expectError(await call(svc, 'getsubgroups', { group_name: 'demo' }, { auth: outsider }), 'group_not_found', 'invalid group_name');
  });

  it('answers an empty list of databases, after the same checks', async () => {
    expect(ok(await call(svc, 'getdatabases', { group_name: 'demo' }, { auth: bob }))).toMatchObject({
      object: 'list', total_count: 0, data: [], has_more: false, next_page_token: 0,
    });
    expectError(await call(svc, 'getdatabases', { group_name: 'nosuch' }, { auth: bob }), 'group_not_found', 'invalid group_name');
  });
});

describe('id styles', () => {
  it('answers ids above 2^53 with every digit and takes them back', async () => {
    const big = await startTestService({ idStyle: 'big' });
    try {
      const session = await loginAs(big, 'bob');
      const subs = ok(await call(big, 'getsubs', {}, { auth: session }));
      const groupId = subs.data[0].group_id;
      expect(BigInt(groupId) > 2n ** 53n).toBe(true);
      const group = ok(await call(big, 'getgroup', { group_id: groupId }, { auth: session }));
      expect(group.id).toBe(groupId);
    } finally {
      await big.close();
    }
  });
});
