import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ChatSocket, openChat, pollUntil } from './helpers/chat-socket.js';
import { admin, call, EMAILS, loginAs, ok, startTestService, type Session, type TestService } from './helpers/service.js';

/**
 * The text rules of docs/protocol.md ("Text fields", #15 items 16-17) where no parameter carries the
 * text: a chat post over the socket (multi-line rules), and a draft body that is HTML because the draft
 * is, whatever the call that sent it said.
 */

const opened: ChatSocket[] = [];
afterEach(() => {
  for (const socket of opened.splice(0)) socket.close();
});

describe('text rules without a parameter', () => {
  let svc: TestService;
  let bob: Session;

  beforeAll(async () => {
    svc = await startTestService();
    bob = await loginAs(svc, 'bob');
  });
  afterAll(async () => svc?.close());

  it('refuses a chat post with a NUL or a lone surrogate, and one with nothing visible, as invalid_value message', async () => {
    const chat = ok(await admin(svc, 'chats', { group: 'demo', owner: EMAILS.bob, subject: 'text rules', desc: 'd' }));
    const socket = await openChat(svc, bob, String(chat.chat_sub.id), { no_history: 'true' });
    opened.push(socket);
    for (const text of ['nul\u0000here', 'half \ud800 pair', '\u200b\u200b']) socket.post(text);
    socket.post('fine\nline two');
    await socket.waitUntil(() => (socket.frames.length >= 3 ? true : undefined), 'three refusals');
    expect(socket.frames.slice(0, 3)).toEqual(Array(3).fill({ object: 'error', type: 'invalid_value', extra: 'message' }));
    const stored = await pollUntil(async () => {
      const data = ok(await call(svc, 'getchathistory', { chat_id: chat.id }, { auth: bob })).data;
      return data.length > 0 ? data.map((m: any) => m.message) : undefined;
    }, 'the fine post');
    expect(stored).toEqual(['fine\nline two']);
  });

  it('sanitises the body of a draft that is HTML, even when the call that sent the body named no body_type', async () => {
    const draft = ok(await call(svc, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post', body_type: 'html', body: '<p>hi</p>' },
      { method: 'POST', auth: bob }));
    const updated = ok(await call(svc, 'updatedraft', { draft_id: draft.id, body: '<p>x</p><script>alert(1)</script>' }, { method: 'POST', auth: bob }));
    expect(updated.body).not.toContain('<script');
    const text = ok(await call(svc, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post', body: '<img src=x onerror=alert(1)>' },
      { method: 'POST', auth: bob }));
    const switched = ok(await call(svc, 'updatedraft', { draft_id: text.id, body_type: 'html' }, { method: 'POST', auth: bob }));
    expect(switched.body).not.toContain('onerror');
  });
});
