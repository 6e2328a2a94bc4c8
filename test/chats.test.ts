import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  admin, call, EMAILS, expectError, login, loginAs, ok, startTestService, type ApiResponse, type DemoUser, type Session, type TestService,
} from './helpers/service.js';

/**
 * The chat operations of spec 4.3 (newchat, updatechat, getchats, deletechat, joinchat, leavechat,
 * getchathistory) against the local service over HTTPS, with the demo seed: group "demo" (alice owner,
 * mo moderator, bob and carol members, bot a member with a manage_chats grant, dave banned).
 */

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
type Who = DemoUser;

let counter = 0;
const uniqueSubject = (label: string): string => `${label} ${++counter}`;


/** A chat made through the admin API, owned by `owner`, with `members` subscribed. */
async function adminChat(svc: TestService, owner: Who, members: Who[] = [], subject = uniqueSubject('chat'), group = 'demo'): Promise<any> {
  const response = await admin(svc, 'chats', { group, owner: EMAILS[owner], subject, desc: `<p>${subject}</p>`, members: members.map((m) => EMAILS[m]) });
  return ok(response);
}

async function adminPost(svc: TestService, chatId: unknown, who: Who, message: string, count = 1): Promise<any> {
  return ok(await admin(svc, 'chats/messages', { chat: String(chatId), user: EMAILS[who], message, count }));
}

async function listAll(svc: TestService, operation: string, params: Record<string, unknown>, auth: Session): Promise<{ pages: any[]; items: any[] }> {
  const pages: any[] = [];
  const items: any[] = [];
  let token: unknown;
  for (let guard = 0; guard < 100; guard += 1) {
    const page = ok(await call(svc, operation, { ...params, page_token: token === undefined ? undefined : String(token) }, { auth }));
    pages.push(page);
    items.push(...page.data);
    if (!page.has_more) return { pages, items };
    token = page.next_page_token;
  }
  throw new Error('paging did not end');
}

async function chatsOf(svc: TestService, auth: Session, params: Record<string, unknown> = { group_name: 'demo' }): Promise<any[]> {
  return (await listAll(svc, 'getchats', { limit: 100, ...params }, auth)).items;
}

describe('chat operations (numeric ids)', () => {
  let svc: TestService;
  const s = {} as Record<Who, Session>;
  let outsider: Session;
  let demoGroupId: unknown;

  beforeAll(async () => {
    svc = await startTestService();
    for (const who of Object.keys(EMAILS) as Who[]) s[who] = await loginAs(svc, who);
    ok(await admin(svc, 'users', { email: 'outsider@example.com', password: 'outsider-pw', full_name: 'Out Sider' }));
    outsider = await login(svc, 'outsider@example.com', 'outsider-pw');
    const general = (await chatsOf(svc, s.alice)).find((c) => c.subject === 'general');
    demoGroupId = general.group_id;
    expect(demoGroupId).toBeDefined();
  });

  afterAll(async () => {
    await svc?.close();
  });

  describe('newchat', () => {
    it('creates a chat owned by the caller, with the caller subscribed, and lists it in getchats', async () => {
      const subject = uniqueSubject('team room');
      const response = await call(svc, 'newchat', { group_name: 'demo', subject, desc: '<p>Our <b>team</b> room</p>' }, { method: 'POST', auth: s.mo });
      const chat = ok(response);
      expect(chat).toMatchObject({
        object: 'chat', subject, desc: '<p>Our <b>team</b> room</p>', is_closed: false, num_messages: 0,
        user_id: s.mo.user.id, group_id: demoGroupId,
      });
      expect(chat.id).toBeDefined();
      expect(chat.created).toMatch(ISO_WITH_OFFSET);
      expect(chat.updated).toMatch(ISO_WITH_OFFSET);
      expect(chat.chat_sub).toMatchObject({
        object: 'chat_sub', user_id: s.mo.user.id, group_id: demoGroupId, chat_id: chat.id, last_msg_seen: 0,
      });
      expect(chat.chat_sub.id).toBeDefined();
      expect(chat.chat_sub.created).toMatch(ISO_WITH_OFFSET);

      const listed = (await chatsOf(svc, s.mo)).find((c) => c.id === chat.id);
      expect(listed).toMatchObject({ subject, user_id: s.mo.user.id, is_closed: false });
      expect(listed.chat_sub.id).toBe(chat.chat_sub.id);

      // Another member sees the chat too, without a chat_sub of their own.
      const seenByBob = (await chatsOf(svc, s.bob)).find((c) => c.id === chat.id);
      expect(seenByBob).toBeDefined();
      expect(seenByBob.chat_sub ?? null).toBeNull();
    });

    it('takes the group by group_id as well', async () => {
      const subject = uniqueSubject('by id');
      const chat = ok(await call(svc, 'newchat', { group_id: demoGroupId, subject, desc: '' }, { method: 'POST', auth: s.alice }));
      expect(chat).toMatchObject({ subject, group_id: demoGroupId, user_id: s.alice.user.id });
      expect((await chatsOf(svc, s.alice, { group_id: demoGroupId })).some((c) => c.id === chat.id)).toBe(true);
    });

    it('accepts a subject of exactly 255 characters', async () => {
      const subject = 'x'.repeat(255);
      const chat = ok(await call(svc, 'newchat', { group_name: 'demo', subject, desc: 'd' }, { method: 'POST', auth: s.mo }));
      expect(chat.subject).toBe(subject);
    });

    it('accepts a desc of 65,536 characters and refuses a longer one', async () => {
      const chat = ok(await call(svc, 'newchat', { group_name: 'demo', subject: uniqueSubject('long desc'), desc: 'd'.repeat(65_536) }, { method: 'POST', auth: s.mo }));
      expect(chat.desc.length).toBe(65_536);
      expectError(await call(svc, 'newchat', { group_name: 'demo', subject: uniqueSubject('too long desc'), desc: 'd'.repeat(65_537) }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid desc');
      expectError(await call(svc, 'updatechat', { chat_id: chat.id, desc: 'e'.repeat(65_537) }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid desc');
    });

    it.each([
      ['group missing', { subject: 'x', desc: 'd' }, 'invalid group_id'],
      ['group_id unknown', { group_id: '987654321', subject: 'x', desc: 'd' }, 'invalid group_id'],
      ['group_name unknown', { group_name: 'no-such-group', subject: 'x', desc: 'd' }, 'invalid group_name'],
      ['subject missing', { group_name: 'demo', desc: 'd' }, 'invalid subject'],
      ['subject empty', { group_name: 'demo', subject: '', desc: 'd' }, 'invalid subject'],
      ['subject blank', { group_name: 'demo', subject: '   \t ', desc: 'd' }, 'invalid subject'],
      ['subject of 256 characters', { group_name: 'demo', subject: 'y'.repeat(256), desc: 'd' }, 'invalid subject'],
      ['desc missing', { group_name: 'demo', subject: 'no desc' }, 'invalid desc'],
    ])('refuses %s with bad_request', async (_label, params, extra) => {
      const before = (await chatsOf(svc, s.mo)).length;
      expectError(await call(svc, 'newchat', params, { method: 'POST', auth: s.mo }), 'bad_request', extra);
      expect((await chatsOf(svc, s.mo)).length).toBe(before);
    });

    it('refuses a member without manage_chats, a banned member and a non-member', async () => {
      for (const who of [s.bob, s.carol, s.dave, outsider]) {
        const subject = uniqueSubject('not allowed');
        // A non-member of a private group is told what an unknown group gets (docs/protocol.md "What an outsider can tell").
        const [type, extra] = who === outsider ? ['bad_request', 'invalid group_name'] : ['inadequate_permissions', undefined];
        expectError(await call(svc, 'newchat', { group_name: 'demo', subject, desc: 'd' }, { method: 'POST', auth: who }), type, extra);
        expect((await chatsOf(svc, s.alice)).some((c) => c.subject === subject)).toBe(false);
      }
    });

    it('lets a member with a manage_chats grant (bot) create a chat', async () => {
      const subject = uniqueSubject('bot room');
      const chat = ok(await call(svc, 'newchat', { group_name: 'demo', subject, desc: 'made by a bot' }, { method: 'POST', auth: s.bot }));
      expect(chat).toMatchObject({ subject, user_id: s.bot.user.id });
      expect(chat.chat_sub.user_id).toBe(s.bot.user.id);
    });

    it('needs authentication', async () => {
      expectError(await call(svc, 'newchat', { group_name: 'demo', subject: 'anon', desc: 'd', csrf: s.mo.csrf }, { method: 'POST', auth: null }), 'authentication');
    });
  });

  describe('updatechat', () => {
    it('lets the owner rename the chat and change its desc', async () => {
      const chat = await adminChat(svc, 'mo');
      const subject = uniqueSubject('renamed');
      const updated = ok(await call(svc, 'updatechat', { chat_id: chat.id, subject, desc: '<p>new desc</p>' }, { method: 'POST', auth: s.mo }));
      expect(updated).toMatchObject({ object: 'chat', id: chat.id, subject, desc: '<p>new desc</p>', is_closed: false });
      expect(updated.chat_sub.id).toBe(chat.chat_sub.id);
      const listed = (await chatsOf(svc, s.mo)).find((c) => c.id === chat.id);
      expect(listed).toMatchObject({ subject, desc: '<p>new desc</p>' });

      // Only the subject: the desc stays.
      const again = ok(await call(svc, 'updatechat', { chat_id: chat.id, subject: `${subject} 2` }, { method: 'POST', auth: s.mo }));
      expect(again).toMatchObject({ subject: `${subject} 2`, desc: '<p>new desc</p>' });
    });

    it('closes and reopens the chat; getchats follows', async () => {
      const chat = await adminChat(svc, 'mo', ['bob']);
      const closed = ok(await call(svc, 'updatechat', { chat_id: chat.id, is_closed: 'true' }, { method: 'POST', auth: s.mo }));
      expect(closed).toMatchObject({ id: chat.id, is_closed: true });
      expect((await chatsOf(svc, s.bob)).some((c) => c.id === chat.id)).toBe(false);
      const closedList = await chatsOf(svc, s.bob, { group_name: 'demo', show_closed: 'true' });
      expect(closedList.find((c) => c.id === chat.id)).toMatchObject({ is_closed: true });
      // The closing notice ends the history.
      const history = ok(await call(svc, 'getchathistory', { chat_id: chat.id }, { auth: s.bob }));
      expect(history.data[0]).toMatchObject({ type: 'chat_msg_type_closed', chat_id: chat.id });

      const reopened = ok(await call(svc, 'updatechat', { chat_id: chat.id, is_closed: 'false' }, { method: 'POST', auth: s.mo }));
      expect(reopened).toMatchObject({ id: chat.id, is_closed: false });
      expect((await chatsOf(svc, s.bob)).some((c) => c.id === chat.id)).toBe(true);
      expect((await chatsOf(svc, s.bob, { group_name: 'demo', show_closed: 'true' })).some((c) => c.id === chat.id)).toBe(false);
    });

    it('refuses anyone but the chat owner, the group owner included', async () => {
      const chat = await adminChat(svc, 'mo', ['bob']);
      for (const who of [s.alice, s.bob, s.bot, s.carol, s.dave]) {
        expectError(await call(svc, 'updatechat', { chat_id: chat.id, subject: 'hijacked', is_closed: 'true' }, { method: 'POST', auth: who }), 'inadequate_permissions');
      }
      // A non-member of a private group is told what an unknown id gets (docs/protocol.md "What an outsider can tell").
      expectError(await call(svc, 'updatechat', { chat_id: chat.id, subject: 'hijacked', is_closed: 'true' }, { method: 'POST', auth: outsider }), 'bad_request', 'invalid chat_id');
      const listed = (await chatsOf(svc, s.mo)).find((c) => c.id === chat.id);
      expect(listed).toMatchObject({ subject: chat.subject, is_closed: false });
    });

    it('answers invalid chat_id for a missing or unknown chat_id', async () => {
      expectError(await call(svc, 'updatechat', { subject: 'x' }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid chat_id');
      expectError(await call(svc, 'updatechat', { chat_id: '', subject: 'x' }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid chat_id');
      expectError(await call(svc, 'updatechat', { chat_id: '987654321', subject: 'x' }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid chat_id');
    });

    it('refuses is_closed=maybe with invalid_value and changes nothing', async () => {
      const chat = await adminChat(svc, 'mo');
      const response = await call(svc, 'updatechat', { chat_id: chat.id, subject: 'should not stick', is_closed: 'maybe' }, { method: 'POST', auth: s.mo });
      expectError(response, 'invalid_value', 'is_closed');
      expect((await chatsOf(svc, s.mo)).find((c) => c.id === chat.id)).toMatchObject({ subject: chat.subject, is_closed: false });
    });

    it('refuses a blank or too long subject', async () => {
      const chat = await adminChat(svc, 'mo');
      expectError(await call(svc, 'updatechat', { chat_id: chat.id, subject: '  ' }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid subject');
      expectError(await call(svc, 'updatechat', { chat_id: chat.id, subject: 'z'.repeat(256) }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid subject');
      expect((await chatsOf(svc, s.mo)).find((c) => c.id === chat.id)?.subject).toBe(chat.subject);
    });
  });

  describe('getchats', () => {
    it('lists open chats by default and closed ones with show_closed=true', async () => {
      const open = await chatsOf(svc, s.bob);
      const closed = await chatsOf(svc, s.bob, { group_name: 'demo', show_closed: 'true' });
      expect(open.map((c) => c.subject)).toEqual(expect.arrayContaining(['general', 'random']));
      expect(open.some((c) => c.subject === 'archive')).toBe(false);
      expect(open.every((c) => c.is_closed === false)).toBe(true);
      expect(closed.map((c) => c.subject)).toContain('archive');
      expect(closed.every((c) => c.is_closed === true)).toBe(true);
      const explicitOpen = await chatsOf(svc, s.bob, { group_name: 'demo', show_closed: 'false' });
      expect(explicitOpen.map((c) => c.id).sort()).toEqual(open.map((c) => c.id).sort());

      const general = open.find((c) => c.subject === 'general');
      expect(general).toMatchObject({ object: 'chat', desc: '<p>Anything goes</p>', num_messages: 3, user_id: s.mo.user.id });
      expect(general.chat_sub).toMatchObject({ object: 'chat_sub', user_id: s.bob.user.id, chat_id: general.id });
    });

    it('answers a list object', async () => {
      const list = ok(await call(svc, 'getchats', { group_name: 'demo' }, { auth: s.carol }));
      expect(list).toMatchObject({ object: 'list', has_more: expect.any(Boolean), start_item: expect.any(Number), end_item: expect.any(Number) });
      expect(list.total_count).toBeGreaterThanOrEqual(list.data.length);
      expect(list.data.length).toBeLessThanOrEqual(10);
    });

    it('refuses a banned member and a non-member', async () => {
      expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: s.dave }), 'inadequate_permissions');
      // A non-member of a private group is told what an unknown id gets (docs/protocol.md "What an outsider can tell").
      expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: outsider }), 'bad_request', 'invalid group_name');
      expectError(await call(svc, 'getchats', { group_id: demoGroupId }, { auth: outsider }), 'bad_request', 'invalid group_id');
    });

    it('refuses a missing or unknown group and an out-of-range limit', async () => {
      expectError(await call(svc, 'getchats', {}, { auth: s.bob }), 'bad_request', 'invalid group_id');
      expectError(await call(svc, 'getchats', { group_id: '987654321' }, { auth: s.bob }), 'bad_request', 'invalid group_id');
      expectError(await call(svc, 'getchats', { group_name: 'nope' }, { auth: s.bob }), 'bad_request', 'invalid group_name');
      expectError(await call(svc, 'getchats', { group_name: 'demo', limit: 0 }, { auth: s.bob }), 'invalid_value', 'limit');
      expectError(await call(svc, 'getchats', { group_name: 'demo', limit: 101 }, { auth: s.bob }), 'invalid_value', 'limit');
      expectError(await call(svc, 'getchats', { group_name: 'demo', show_closed: 'perhaps' }, { auth: s.bob }), 'invalid_value', 'show_closed');
    });

    it('pages through 120 chats 50 at a time, each exactly once', async () => {
      ok(await admin(svc, 'groups', { name: 'pager', title: 'Paging group' }));
      ok(await admin(svc, 'subscriptions', { group: 'pager', user: EMAILS.alice, role: 'owner' }));
      ok(await admin(svc, 'subscriptions', { group: 'pager', user: EMAILS.carol, role: 'member' }));
      const created = new Set<unknown>();
      for (let i = 1; i <= 120; i += 1) created.add((await adminChat(svc, 'alice', [], `pager chat ${i}`, 'pager')).id);
      expect(created.size).toBe(120);

      const { pages, items } = await listAll(svc, 'getchats', { group_name: 'pager', limit: 50 }, s.carol);
      expect(pages.map((p) => p.data.length)).toEqual([50, 50, 20]);
      expect(pages.map((p) => p.total_count)).toEqual([120, 120, 120]);
      expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
      expect(pages.map((p) => [p.start_item, p.end_item])).toEqual([[1, 50], [51, 100], [101, 120]]);
      expect(String(pages[2].next_page_token)).toBe('0');
      expect(String(pages[0].next_page_token)).not.toBe('0');
      const ids = items.map((c) => c.id);
      expect(new Set(ids).size).toBe(120);
      expect(new Set(ids)).toEqual(created);
      // A member of another group sees none of them, nor that the group exists.
      expectError(await call(svc, 'getchats', { group_name: 'pager' }, { auth: s.bob }), 'bad_request', 'invalid group_name');
    });
  });

  describe('deletechat', () => {
    it('is for the owner only', async () => {
      const chat = await adminChat(svc, 'mo', ['bob']);
      for (const who of [s.alice, s.bob, s.bot, s.dave]) {
        expectError(await call(svc, 'deletechat', { chat_id: chat.id }, { method: 'POST', auth: who }), 'inadequate_permissions');
      }
      // A non-member of a private group is told what an unknown id gets (docs/protocol.md "What an outsider can tell").
      expectError(await call(svc, 'deletechat', { chat_id: chat.id }, { method: 'POST', auth: outsider }), 'bad_request', 'invalid chat_id');
      expect((await chatsOf(svc, s.mo)).some((c) => c.id === chat.id)).toBe(true);
    });

    it('answers 200 with an empty body, and the chat is gone', async () => {
      const chat = await adminChat(svc, 'mo', ['bob']);
      await adminPost(svc, chat.id, 'bob', 'soon gone');
      const response = await call(svc, 'deletechat', { chat_id: chat.id }, { method: 'POST', auth: s.mo });
      expect(response.status).toBe(200);
      expect(response.text).toBe('');
      expect((await chatsOf(svc, s.mo)).some((c) => c.id === chat.id)).toBe(false);
      expect((await chatsOf(svc, s.mo, { group_name: 'demo', show_closed: 'true' })).some((c) => c.id === chat.id)).toBe(false);
      expectError(await call(svc, 'updatechat', { chat_id: chat.id, subject: 'zombie' }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid chat_id');
      expectError(await call(svc, 'deletechat', { chat_id: chat.id }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid chat_id');
      expectError(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.carol }), 'bad_request', 'invalid chat_id');
      expectError(await call(svc, 'getchathistory', { chat_id: chat.id }, { auth: s.bob }), 'bad_request', 'invalid chat_id');
      // The subscriptions went with it.
      expectError(await call(svc, 'leavechat', { chatsub_id: chat.chat_sub.id }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid chatsub_id');
    });

    it('answers invalid chat_id for a missing or unknown chat_id', async () => {
      expectError(await call(svc, 'deletechat', {}, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid chat_id');
      expectError(await call(svc, 'deletechat', { chat_id: '987654321' }, { method: 'POST', auth: s.mo }), 'bad_request', 'invalid chat_id');
    });

    it('deletes a closed chat too', async () => {
      const chat = await adminChat(svc, 'mo');
      ok(await call(svc, 'updatechat', { chat_id: chat.id, is_closed: 'true' }, { method: 'POST', auth: s.mo }));
      const response = await call(svc, 'deletechat', { chat_id: chat.id }, { method: 'POST', auth: s.mo });
      expect(response.status).toBe(200);
      expect((await chatsOf(svc, s.mo, { group_name: 'demo', show_closed: 'true' })).some((c) => c.id === chat.id)).toBe(false);
    });
  });

  describe('joinchat', () => {
    it('subscribes the caller and answers the chat_sub', async () => {
      const chat = await adminChat(svc, 'mo');
      const sub = ok(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.bob }));
      expect(sub).toMatchObject({ object: 'chat_sub', user_id: s.bob.user.id, chat_id: chat.id, group_id: demoGroupId, last_msg_seen: 0 });
      expect(sub.id).toBeDefined();
      expect(sub.id).not.toBe(chat.chat_sub.id);
      expect(sub.created).toMatch(ISO_WITH_OFFSET);
      const listed = (await chatsOf(svc, s.bob)).find((c) => c.id === chat.id);
      expect(listed.chat_sub.id).toBe(sub.id);
    });

    it('answers already subscribed the second time (and for the owner)', async () => {
      const chat = await adminChat(svc, 'mo');
      ok(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.carol }));
      expectError(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.carol }), 'bad_request', 'already subscribed');
      expectError(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.mo }), 'bad_request', 'already subscribed');
    });

    it('answers closed chat for a closed chat', async () => {
      const archive = (await chatsOf(svc, s.mo, { group_name: 'demo', show_closed: 'true' })).find((c) => c.subject === 'archive');
      expect(archive).toBeDefined();
      expectError(await call(svc, 'joinchat', { chat_id: archive.id }, { method: 'POST', auth: s.carol }), 'bad_request', 'closed chat');
      expect((await chatsOf(svc, s.carol, { group_name: 'demo', show_closed: 'true' })).find((c) => c.id === archive.id).chat_sub ?? null).toBeNull();
    });

    it('answers invalid chat_id for a missing or unknown chat_id', async () => {
      expectError(await call(svc, 'joinchat', {}, { method: 'POST', auth: s.bob }), 'bad_request', 'invalid chat_id');
      expectError(await call(svc, 'joinchat', { chat_id: '987654321' }, { method: 'POST', auth: s.bob }), 'bad_request', 'invalid chat_id');
    });

    it('refuses a banned member and a non-member', async () => {
      const chat = await adminChat(svc, 'mo');
      expectError(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.dave }), 'inadequate_permissions');
      // A non-member of a private group is told what an unknown id gets (docs/protocol.md "What an outsider can tell").
      expectError(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: outsider }), 'bad_request', 'invalid chat_id');
    });
  });

  describe('leavechat', () => {
    it('removes the caller\'s chat_sub: 200 with an empty body', async () => {
      const chat = await adminChat(svc, 'mo', ['carol']);
      const sub = ok(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.bob }));
      const response = await call(svc, 'leavechat', { chatsub_id: sub.id }, { method: 'POST', auth: s.bob });
      expect(response.status).toBe(200);
      expect(response.text).toBe('');
      expect((await chatsOf(svc, s.bob)).find((c) => c.id === chat.id).chat_sub ?? null).toBeNull();
      expectError(await call(svc, 'leavechat', { chatsub_id: sub.id }, { method: 'POST', auth: s.bob }), 'bad_request', 'invalid chatsub_id');
      // Joining again makes a new chat_sub.
      const again = ok(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.bob }));
      expect(again.id).not.toBe(sub.id);
      expect(again.chat_id).toBe(chat.id);
    });

    it('answers invalid chatsub_id for a missing or unknown chatsub_id', async () => {
      expectError(await call(svc, 'leavechat', {}, { method: 'POST', auth: s.bob }), 'bad_request', 'invalid chatsub_id');
      expectError(await call(svc, 'leavechat', { chatsub_id: '' }, { method: 'POST', auth: s.bob }), 'bad_request', 'invalid chatsub_id');
      expectError(await call(svc, 'leavechat', { chatsub_id: '987654321' }, { method: 'POST', auth: s.bob }), 'bad_request', 'invalid chatsub_id');
    });

    it('refuses someone else\'s chat_sub with inadequate_permissions', async () => {
      const chat = await adminChat(svc, 'mo');
      const carolSub = ok(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.carol }));
      for (const who of [s.bob, s.mo, s.alice]) {
        expectError(await call(svc, 'leavechat', { chatsub_id: carolSub.id }, { method: 'POST', auth: who }), 'inadequate_permissions');
      }
      expect((await chatsOf(svc, s.carol)).find((c) => c.id === chat.id).chat_sub.id).toBe(carolSub.id);
    });
  });

  describe('getchathistory', () => {
    it('answers chat_message objects, newest first by default', async () => {
      const chat = await adminChat(svc, 'mo', ['bob']);
      await adminPost(svc, chat.id, 'bob', 'line {n}', 5);
      const list = ok(await call(svc, 'getchathistory', { chat_id: chat.id }, { auth: s.bob }));
      expect(list).toMatchObject({ object: 'list', total_count: 5, has_more: false });
      expect(list.data.map((m: any) => m.msg_num)).toEqual([5, 4, 3, 2, 1]);
      expect(list.data.map((m: any) => m.message)).toEqual(['line 5', 'line 4', 'line 3', 'line 2', 'line 1']);
      const first = list.data[0];
      expect(first).toMatchObject({
        object: 'chat_message', user_id: s.bob.user.id, chat_id: chat.id, group_id: demoGroupId, type: 'chat_msg_type_normal',
        version: expect.any(Number), display_name: 'Bob Member', user_name: 'bob',
      });
      expect(first.id).toBeDefined();
      expect(first.created).toMatch(ISO_WITH_OFFSET);
      expect(new Set(list.data.map((m: any) => String(m.id))).size).toBe(5);
    });

    it('sorts ascending with sort_dir=asc', async () => {
      const chat = await adminChat(svc, 'mo');
      await adminPost(svc, chat.id, 'mo', 'asc {n}', 4);
      const list = ok(await call(svc, 'getchathistory', { chat_id: chat.id, sort_dir: 'asc' }, { auth: s.mo }));
      expect(list.data.map((m: any) => m.msg_num)).toEqual([1, 2, 3, 4]);
      expect(list.sort_dir).toBe('asc');
      expectError(await call(svc, 'getchathistory', { chat_id: chat.id, sort_dir: 'sideways' }, { auth: s.mo }), 'invalid_value', 'sort_dir');
    });

    it('with start_msg_num returns only messages with greater msg_nums', async () => {
      const chat = await adminChat(svc, 'mo');
      await adminPost(svc, chat.id, 'mo', 'since {n}', 10);
      const list = ok(await call(svc, 'getchathistory', { chat_id: chat.id, start_msg_num: 7 }, { auth: s.mo }));
      expect(list.data.map((m: any) => m.msg_num)).toEqual([10, 9, 8]);
      expect(list.total_count).toBe(3);
      const asc = ok(await call(svc, 'getchathistory', { chat_id: chat.id, start_msg_num: 7, sort_dir: 'asc' }, { auth: s.mo }));
      expect(asc.data.map((m: any) => m.msg_num)).toEqual([8, 9, 10]);
      const none = ok(await call(svc, 'getchathistory', { chat_id: chat.id, start_msg_num: 10 }, { auth: s.mo }));
      expect(none.data).toEqual([]);
      expect(none.total_count).toBe(0);
      const all = ok(await call(svc, 'getchathistory', { chat_id: chat.id, start_msg_num: 0 }, { auth: s.mo }));
      expect(all.total_count).toBe(10);
    });

    it('pages through 250 messages 100 at a time, each exactly once', async () => {
      const chat = await adminChat(svc, 'mo', ['carol']);
      const last = await adminPost(svc, chat.id, 'carol', 'bulk {n}', 250);
      expect(last).toMatchObject({ msg_num: 250, message: 'bulk 250' });
      const { pages, items } = await listAll(svc, 'getchathistory', { chat_id: chat.id, limit: 100 }, s.carol);
      expect(pages.map((p) => p.data.length)).toEqual([100, 100, 50]);
      expect(pages.map((p) => p.total_count)).toEqual([250, 250, 250]);
      expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
      expect(String(pages[2].next_page_token)).toBe('0');
      expect(items.map((m) => m.msg_num)).toEqual(Array.from({ length: 250 }, (_, i) => 250 - i));
      expect(items.every((m) => m.message === `bulk ${m.msg_num}`)).toBe(true);

      const ascending = await listAll(svc, 'getchathistory', { chat_id: chat.id, limit: 100, sort_dir: 'asc' }, s.carol);
      expect(ascending.items.map((m) => m.msg_num)).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
    });

    it('is open to group members who have not joined the chat', async () => {
      const chat = await adminChat(svc, 'mo');
      await adminPost(svc, chat.id, 'mo', 'visible to the group');
      const list = ok(await call(svc, 'getchathistory', { chat_id: chat.id }, { auth: s.carol }));
      expect(list.data.map((m: any) => m.message)).toEqual(['visible to the group']);
    });

    it('refuses a banned member and a non-member', async () => {
      const chat = await adminChat(svc, 'mo');
      await adminPost(svc, chat.id, 'mo', 'secret');
      expectError(await call(svc, 'getchathistory', { chat_id: chat.id }, { auth: s.dave }), 'inadequate_permissions');
      // A non-member of a private group is told what an unknown id gets (docs/protocol.md "What an outsider can tell").
      expectError(await call(svc, 'getchathistory', { chat_id: chat.id }, { auth: outsider }), 'bad_request', 'invalid chat_id');
    });

    it('answers invalid chat_id for a missing or unknown chat_id', async () => {
      expectError(await call(svc, 'getchathistory', {}, { auth: s.bob }), 'bad_request', 'invalid chat_id');
      expectError(await call(svc, 'getchathistory', { chat_id: '987654321' }, { auth: s.bob }), 'bad_request', 'invalid chat_id');
    });
  });

  describe('csrf on every POST', () => {
    type Setup = () => Promise<{ params: Record<string, unknown>; auth: Session; unchanged: () => Promise<void> }>;
    const cases: Array<[string, Setup]> = [
      ['newchat', async () => {
        const subject = uniqueSubject('csrf newchat');
        return {
          params: { group_name: 'demo', subject, desc: 'd' },
          auth: s.mo,
          unchanged: async () => expect((await chatsOf(svc, s.mo)).some((c) => c.subject === subject)).toBe(false),
        };
      }],
      ['updatechat', async () => {
        const chat = await adminChat(svc, 'mo');
        return {
          params: { chat_id: chat.id, subject: 'csrf rename', is_closed: 'true' },
          auth: s.mo,
          unchanged: async () => expect((await chatsOf(svc, s.mo)).find((c) => c.id === chat.id)).toMatchObject({ subject: chat.subject, is_closed: false }),
        };
      }],
      ['deletechat', async () => {
        const chat = await adminChat(svc, 'mo');
        return {
          params: { chat_id: chat.id },
          auth: s.mo,
          unchanged: async () => expect((await chatsOf(svc, s.mo)).some((c) => c.id === chat.id)).toBe(true),
        };
      }],
      ['joinchat', async () => {
        const chat = await adminChat(svc, 'mo');
        return {
          params: { chat_id: chat.id },
          auth: s.bob,
          unchanged: async () => expect((await chatsOf(svc, s.bob)).find((c) => c.id === chat.id).chat_sub ?? null).toBeNull(),
        };
      }],
      ['leavechat', async () => {
        const chat = await adminChat(svc, 'mo', ['bob']);
        const sub = (await chatsOf(svc, s.bob)).find((c) => c.id === chat.id).chat_sub;
        return {
          params: { chatsub_id: sub.id },
          auth: s.bob,
          unchanged: async () => expect((await chatsOf(svc, s.bob)).find((c) => c.id === chat.id).chat_sub.id).toBe(sub.id),
        };
      }],
    ];

    it.each(cases)('%s: missing, wrong and another session\'s csrf are bad_csrf', async (operation, setup) => {
      const { params, auth, unchanged } = await setup();
      expectError(await call(svc, operation, params, { method: 'POST', auth, csrf: false }), 'bad_csrf');
      expectError(await call(svc, operation, params, { method: 'POST', auth, csrf: '' }), 'bad_csrf');
      expectError(await call(svc, operation, params, { method: 'POST', auth, csrf: `${auth.csrf}1` }), 'bad_csrf');
      expectError(await call(svc, operation, params, { method: 'POST', auth, csrf: 'not-the-token' }), 'bad_csrf');
      const other = auth === s.mo ? s.alice : s.carol;
      expectError(await call(svc, operation, params, { method: 'POST', auth, csrf: other.csrf }), 'bad_csrf');
      await unchanged();
      // And with the right csrf the same call works.
      const response = await call(svc, operation, params, { method: 'POST', auth });
      expect(response.status).toBe(200);
    });

    it('a second login of the same user has its own csrf', async () => {
      const second = await loginAs(svc, 'mo');
      expect(second.csrf).not.toBe(s.mo.csrf);
      const subject = uniqueSubject('second session');
      expectError(await call(svc, 'newchat', { group_name: 'demo', subject, desc: 'd' }, { method: 'POST', auth: second, csrf: s.mo.csrf }), 'bad_csrf');
      ok(await call(svc, 'newchat', { group_name: 'demo', subject, desc: 'd' }, { method: 'POST', auth: second }));
    });
  });
});

describe.each(['opaque', 'big'] as const)('chat operations with %s ids', (idStyle) => {
  let svc: TestService;
  let mo: Session;
  let bob: Session;
  let carol: Session;

  beforeAll(async () => {
    svc = await startTestService({ idStyle });
    mo = await loginAs(svc, 'mo');
    bob = await loginAs(svc, 'bob');
    carol = await loginAs(svc, 'carol');
  });

  afterAll(async () => {
    await svc?.close();
  });

  /** The id is in this style's shape, and the raw response text carries it as the style demands. */
  function checkId(response: ApiResponse, id: unknown, field = 'id'): void {
    expect(typeof id).toBe('string');
    const value = id as string;
    if (idStyle === 'big') {
      expect(value).toMatch(/^[1-9][0-9]*$/);
      expect(BigInt(value) > 2n ** 53n).toBe(true);
      // Unquoted: a bare JSON integer with every digit.
      expect(response.text).toMatch(new RegExp(`"${field}":${value}[,}\\]]`));
      expect(response.text).not.toContain(`"${value}"`);
    } else {
      expect(value.length).toBeGreaterThan(0);
      expect(value.length).toBeLessThanOrEqual(255);
      expect(response.text).toContain(`"${field}":${JSON.stringify(value)}`);
    }
  }

  it('create, list, join, post, page history, update, leave and delete, sending ids back exactly', async () => {
    const created = await call(svc, 'newchat', { group_name: 'demo', subject: `${idStyle} room`, desc: 'ids' }, { method: 'POST', auth: mo });
    const chat = ok(created);
    checkId(created, chat.id);
    checkId(created, chat.group_id, 'group_id');
    expect(chat.chat_sub.chat_id).toBe(chat.id);

    // The group id as received names the group.
    const listResponse = await call(svc, 'getchats', { group_id: chat.group_id, limit: 100 }, { auth: bob });
    const listed = ok(listResponse).data.find((c: any) => c.id === chat.id);
    expect(listed).toMatchObject({ subject: `${idStyle} room`, group_id: chat.group_id });

    const joined = await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: bob });
    const sub = ok(joined);
    checkId(joined, sub.id);
    checkId(joined, sub.chat_id, 'chat_id');
    expect(sub.chat_id).toBe(chat.id);
    expectError(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: bob }), 'bad_request', 'already subscribed');

    ok(await admin(svc, 'chats/messages', { chat: chat.id, user: 'bob@example.com', message: 'msg {n}', count: 12 }));
    const history = await listAll(svc, 'getchathistory', { chat_id: chat.id, limit: 5 }, carol);
    expect(history.pages.map((p) => p.data.length)).toEqual([5, 5, 2]);
    expect(history.items.map((m) => m.msg_num)).toEqual(Array.from({ length: 12 }, (_, i) => 12 - i));
    expect(history.items.every((m) => m.chat_id === chat.id && m.user_id === bob.user.id)).toBe(true);
    expect(new Set(history.items.map((m) => m.id)).size).toBe(12);
    const firstPage = await call(svc, 'getchathistory', { chat_id: chat.id, limit: 5 }, { auth: carol });
    checkId(firstPage, ok(firstPage).data[0].id);
    if (idStyle === 'big') {
      const token = ok(firstPage).next_page_token;
      expect(firstPage.text).toContain(`"next_page_token":${String(token)}`);
    }
    const since = ok(await call(svc, 'getchathistory', { chat_id: chat.id, start_msg_num: 10, sort_dir: 'asc' }, { auth: carol }));
    expect(since.data.map((m: any) => m.msg_num)).toEqual([11, 12]);

    const renamed = ok(await call(svc, 'updatechat', { chat_id: chat.id, subject: `${idStyle} renamed` }, { method: 'POST', auth: mo }));
    expect(renamed).toMatchObject({ id: chat.id, subject: `${idStyle} renamed` });

    const left = await call(svc, 'leavechat', { chatsub_id: sub.id }, { method: 'POST', auth: bob });
    expect(left.status).toBe(200);
    expect(left.text).toBe('');

    const deleted = await call(svc, 'deletechat', { chat_id: chat.id }, { method: 'POST', auth: mo });
    expect(deleted.status).toBe(200);
    expectError(await call(svc, 'updatechat', { chat_id: chat.id, subject: 'gone' }, { method: 'POST', auth: mo }), 'bad_request', 'invalid chat_id');
  });

  it('does not confuse an id with a near miss of it', async () => {
    const chat = ok(await call(svc, 'newchat', { group_name: 'demo', subject: `${idStyle} near miss`, desc: 'ids' }, { method: 'POST', auth: mo }));
    const id = chat.id as string;
    const nearMisses = idStyle === 'big'
      // What a client that parsed the id as a double would send back.
      ? [String(Number(id)), (BigInt(id) + 1n).toString()]
      : [id.toUpperCase() === id ? id.toLowerCase() : id.toUpperCase(), `${id}x`, id.slice(0, -1)];
    for (const wrong of nearMisses) {
      expect(wrong).not.toBe(id);
      expectError(await call(svc, 'updatechat', { chat_id: wrong, subject: 'wrong' }, { method: 'POST', auth: mo }), 'bad_request', 'invalid chat_id');
      expectError(await call(svc, 'joinchat', { chat_id: wrong }, { method: 'POST', auth: bob }), 'bad_request', 'invalid chat_id');
    }
    expect(ok(await call(svc, 'joinchat', { chat_id: id }, { method: 'POST', auth: bob })).chat_id).toBe(id);
  });

  it('pages through getchats with tokens sent back exactly', async () => {
    for (let i = 0; i < 7; i += 1) {
      ok(await admin(svc, 'chats', { group: 'demo', owner: 'mo@example.com', subject: `${idStyle} list ${i}` }));
    }
    const { pages, items } = await listAll(svc, 'getchats', { group_name: 'demo', limit: 3 }, carol);
    expect(pages.at(-1).has_more).toBe(false);
    expect(new Set(items.map((c) => c.id)).size).toBe(items.length);
    expect(items.length).toBe(pages[0].total_count);
    for (let i = 0; i < 7; i += 1) expect(items.some((c) => c.subject === `${idStyle} list ${i}`)).toBe(true);
  });
});
