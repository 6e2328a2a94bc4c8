import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ChatSocket, expectRefused, openChat } from './helpers/chat-socket.js';
import { admin, call, EMAILS, expectError, loginAs, ok, startTestService, type Session, type TestService } from './helpers/service.js';

/**
 * One visibility for every chat operation (#15 item 6): in a group with `chat_access:
 * group_access_limited` only moderators see chats, and getchathistory, the socket (its upgrade, its
 * posts, what it delivers), updatechat, deletechat and leavechat refuse a member as getchats and
 * joinchat do.
 */

const opened: ChatSocket[] = [];
afterEach(() => {
  for (const socket of opened.splice(0)) socket.close();
});

describe('chat_access: group_access_limited holds for every chat operation', () => {
  let svc: TestService;
  let mo: Session;
  let bob: Session;
  let carol: Session;
  /** The moderators' chat; bob and carol hold chat_subs of it (made before the group was limited, say). */
  let modsChat: any;
  /** A chat bob owns from when he could see chats. */
  let bobsChat: any;

  const chatNamed = async (subject: string): Promise<any> => {
    const list = ok(await call(svc, 'getchats', { group_name: 'limited', limit: 100 }, { auth: mo })).data;
    return list.find((c: any) => c.subject === subject);
  };
  const chatSubOf = (who: string, chat: any): string => {
    const sub = svc.service.core.store.chatSubOf(svc.service.core.store.usersByEmail.get(who)!.id, String(chat.id));
    return sub!.id;
  };
  const historyTexts = async (chat: any): Promise<string[]> =>
    ok(await call(svc, 'getchathistory', { chat_id: chat.id, limit: 100, sort_dir: 'asc' }, { auth: mo })).data.map((m: any) => m.message);

  beforeAll(async () => {
    svc = await startTestService();
    ok(await admin(svc, 'groups', {
      name: 'limited',
      settings: { chat_access: 'group_access_limited' },
      members: [
        { email: EMAILS.alice, role: 'owner' }, { email: EMAILS.mo, role: 'moderator' },
        { email: EMAILS.bob, role: 'member' }, { email: EMAILS.carol, role: 'moderator' },
      ],
      chats: [
        { subject: 'mods only', owner: EMAILS.mo, members: [EMAILS.bob, EMAILS.carol], history: [{ from: EMAILS.mo, message: 'the plan' }] },
        { subject: 'bob old room', owner: EMAILS.bob },
      ],
    }));
    [mo, bob, carol] = [await loginAs(svc, 'mo'), await loginAs(svc, 'bob'), await loginAs(svc, 'carol')];
    modsChat = await chatNamed('mods only');
    bobsChat = await chatNamed('bob old room');
  });
  afterAll(async () => svc?.close());

  it('refuses a member getchats and joinchat (as before) and getchathistory alike', async () => {
    expectError(await call(svc, 'getchats', { group_name: 'limited' }, { auth: bob }), 'inadequate_permissions', 'chat_visible');
    expectError(await call(svc, 'joinchat', { chat_id: modsChat.id }, { method: 'POST', auth: bob }), 'inadequate_permissions', 'chat_visible');
    expectError(await call(svc, 'getchathistory', { chat_id: modsChat.id }, { auth: bob }), 'inadequate_permissions', 'chat_visible');
    expect(await historyTexts(modsChat)).toEqual(['the plan']);
  });

  it('refuses a member\'s socket upgrade with his own chat_sub', async () => {
    const refused = await expectRefused(svc, { chatsub_id: chatSubOf(EMAILS.bob, modsChat), csrf: bob.csrf }, bob);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ object: 'error', type: 'inadequate_permissions', extra: 'chat_visible' });
  });

  it('refuses a member updatechat, deletechat and leavechat, even of what he owns', async () => {
    expectError(await call(svc, 'updatechat', { chat_id: bobsChat.id, subject: 'renamed', is_closed: 'true' }, { method: 'POST', auth: bob }),
      'inadequate_permissions', 'chat_visible');
    expectError(await call(svc, 'deletechat', { chat_id: bobsChat.id }, { method: 'POST', auth: bob }), 'inadequate_permissions', 'chat_visible');
    expectError(await call(svc, 'leavechat', { chatsub_id: chatSubOf(EMAILS.bob, modsChat) }, { method: 'POST', auth: bob }),
      'inadequate_permissions', 'chat_visible');
    expect(await chatNamed('bob old room')).toMatchObject({ subject: 'bob old room', is_closed: false });
    expect(svc.service.core.store.chatSubOf(svc.service.core.store.usersByEmail.get(EMAILS.bob)!.id, String(modsChat.id))).toBeDefined();
  });

  it('an open socket of a moderator made member: its posts are refused, and it is closed (4003) instead of delivered to', async () => {
    const socket = await openChat(svc, carol, chatSubOf(EMAILS.carol, modsChat), { no_history: 'true' });
    opened.push(socket);
    ok(await admin(svc, 'subscriptions', { group: 'limited', user: EMAILS.carol, role: 'member' }));
    socket.post('after the demotion');
    const refusal = await socket.waitForFrame((f) => f?.object === 'error', 'the refusal');
    expect(refusal).toMatchObject({ type: 'inadequate_permissions', extra: 'chat_visible' });
    ok(await admin(svc, 'chats/messages', { chat: String(modsChat.id), user: EMAILS.mo, message: 'mods only, again' }));
    expect((await socket.waitForClose()).code).toBe(4003);
    expect(socket.messages).toEqual([]);
    expect(await historyTexts(modsChat)).toEqual(['the plan', 'mods only, again']);
  });

  it('leaves a moderator every operation', async () => {
    expect(await historyTexts(modsChat)).toContain('the plan');
    const socket = await openChat(svc, mo, chatSubOf(EMAILS.mo, modsChat), { no_history: 'true' });
    opened.push(socket);
    expect(socket.isOpen).toBe(true);
  });
});
