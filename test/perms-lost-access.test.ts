import { FormData } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, EMAILS, expectError, login, loginAs, ok, startTestService, type Session, type TestService } from './helpers/service.js';

/**
 * No power without access (#15 item 7): what a member owns in a group (a chat, a draft) gives nothing once
 * the member is banned or removed; nor does a former moderator's role.
 */

let counter = 0;
const unique = (label: string): string => `${label}-${++counter}`;

describe('ownership gives nothing to someone who lost the group', () => {
  let svc: TestService;
  let alice: Session;

  /** A new account subscribed to demo with `role`, logged in. */
  async function member(role: 'member' | 'moderator' = 'member'): Promise<{ email: string; session: Session }> {
    const email = `${unique('lost')}@example.com`;
    ok(await admin(svc, 'users', { email, password: 'pw', full_name: 'Soon Gone' }));
    ok(await admin(svc, 'subscriptions', { group: 'demo', user: email, role }));
    return { email, session: await login(svc, email, 'pw') };
  }

  async function chatOf(email: string): Promise<any> {
    return ok(await admin(svc, 'chats', { group: 'demo', owner: email, subject: unique('owned chat'), desc: 'd', members: [EMAILS.bob] }));
  }

  async function asSeenByAlice(chat: any): Promise<{ chat: any; history: string[] }> {
    const open = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: alice })).data;
    const closed = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100, show_closed: 'true' }, { auth: alice })).data;
    const history = ok(await call(svc, 'getchathistory', { chat_id: chat.id, limit: 100 }, { auth: alice })).data.map((m: any) => m.message);
    return { chat: [...open, ...closed].find((c: any) => String(c.id) === String(chat.id)), history };
  }

  beforeAll(async () => {
    svc = await startTestService();
    alice = await loginAs(svc, 'alice');
  });
  afterAll(async () => svc?.close());

  it('a banned chat owner can neither update (rename, close) nor delete the chat; no notice goes out in the name', async () => {
    const owner = await member();
    const chat = await chatOf(owner.email);
    ok(await admin(svc, 'subscriptions', { group: 'demo', user: owner.email, role: 'banned' }));
    const post = { method: 'POST' as const, auth: owner.session };
    expectError(await call(svc, 'updatechat', { chat_id: chat.id, subject: 'hijacked' }, post), 'inadequate_permissions', 'chat_visible');
    expectError(await call(svc, 'updatechat', { chat_id: chat.id, is_closed: 'true' }, post), 'inadequate_permissions', 'chat_visible');
    expectError(await call(svc, 'deletechat', { chat_id: chat.id }, post), 'inadequate_permissions', 'chat_visible');
    expect(await asSeenByAlice(chat)).toEqual({ chat: expect.objectContaining({ subject: chat.subject, is_closed: false }), history: [] });
  });

  it('a chat owner removed from the group is told the chat is unknown, and it stays', async () => {
    const owner = await member();
    const chat = await chatOf(owner.email);
    ok(await admin(svc, 'subscriptions/remove', { group: 'demo', user: owner.email }));
    const post = { method: 'POST' as const, auth: owner.session };
    expectError(await call(svc, 'updatechat', { chat_id: chat.id, is_closed: 'true' }, post), 'bad_request', 'invalid chat_id');
    expectError(await call(svc, 'deletechat', { chat_id: chat.id }, post), 'bad_request', 'invalid chat_id');
    expect((await asSeenByAlice(chat)).chat).toMatchObject({ subject: chat.subject, is_closed: false });
  });

  it('a banned author can no longer change or add to a draft (nor post it), only delete it', async () => {
    const author = await member();
    const draft = ok(await call(svc, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post', subject: 'mine', body: 'text' },
      { method: 'POST', auth: author.session }));
    ok(await admin(svc, 'subscriptions', { group: 'demo', user: author.email, role: 'banned' }));
    const post = { method: 'POST' as const, auth: author.session };
    expectError(await call(svc, 'updatedraft', { draft_id: draft.id, body: 'changed' }, post), 'inadequate_permissions', 'can_post');
    const form = new FormData();
    form.append('draft_id', String(draft.id));
    form.append('csrf', author.session.csrf);
    form.append('file', new Blob([Buffer.from('payload')], { type: 'text/plain' }), 'payload.txt');
    expectError(await call(svc, 'addattachments', {}, { ...post, csrf: false, body: form as never }), 'inadequate_permissions', 'can_post');
    expectError(await call(svc, 'postdraft', { draft_id: draft.id }, post), 'inadequate_permissions', 'can_post');
    const kept = ok(await call(svc, 'getdrafts', {}, { auth: author.session })).data;
    expect(kept).toEqual([expect.objectContaining({ subject: 'mine', body: 'text', num_attachments: 0 })]);
    expect((await call(svc, 'deletedraft', { draft_id: draft.id }, post)).status).toBe(200);
  });

  it('a moderator removed from the group manages nothing there', async () => {
    const moderator = await member('moderator');
    const chat = await chatOf(moderator.email);
    ok(await admin(svc, 'subscriptions/remove', { group: 'demo', user: moderator.email }));
    const post = { method: 'POST' as const, auth: moderator.session };
    expect((await call(svc, 'newchat', { group_name: 'demo', subject: 'x', desc: 'd' }, post)).body?.object).toBe('error');
    expect((await call(svc, 'getactivitylog', { group_name: 'demo' }, { auth: moderator.session })).body?.object).toBe('error');
    expectError(await call(svc, 'deletechat', { chat_id: chat.id }, post), 'bad_request', 'invalid chat_id');
  });
});
