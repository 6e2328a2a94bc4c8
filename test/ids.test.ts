import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdStyle } from '../src/service/ids.js';
import { admin, call, loginAs, startTestService, type TestService } from './helpers/service.js';

const styles: IdStyle[] = ['numeric', 'big', 'opaque'];

describe.each(styles)('identifiers in the %s style', (idStyle) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ idStyle });
  });
  afterAll(async () => svc.close());

  it('have the promised shape on the wire', async () => {
    const bob = await loginAs(svc, 'bob');
    const response = await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: bob });
    const ids: unknown[] = response.body.data.flatMap((chat: { id: unknown; group_id: unknown }) => [chat.id, chat.group_id]);
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) {
      if (idStyle === 'numeric') expect(Number.isSafeInteger(id)).toBe(true);
      if (idStyle === 'big') {
        // Parsed losslessly into a string of digits; on the wire a bare integer beyond 2^53.
        expect(id).toMatch(/^\d+$/);
        expect(BigInt(id as string) > 2n ** 53n).toBe(true);
        expect(response.text).toMatch(new RegExp(`:${id as string}[,}]`));
      }
      if (idStyle === 'opaque') {
        expect(typeof id).toBe('string');
        expect((id as string).length).toBeLessThanOrEqual(255);
      }
    }
  });

  it('go back exactly as received: join, history, leave', async () => {
    const carol = await loginAs(svc, 'carol');
    const chats = await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: carol });
    const general = chats.body.data.find((chat: { subject: string }) => chat.subject === 'general');
    const history = await call(svc, 'getchathistory', { chat_id: general.id }, { auth: carol });
    expect(history.status).toBe(200);
    expect(history.body.data[0].chat_id).toEqual(general.id);
    const sub = general.chat_sub;
    expect(sub.chat_id).toEqual(general.id);
    const left = await call(svc, 'leavechat', { chatsub_id: sub.id }, { method: 'POST', auth: carol });
    expect(left.status).toBe(200);
    const joined = await call(svc, 'joinchat', { chat_id: general.id }, { method: 'POST', auth: carol });
    expect(joined.status).toBe(200);
    expect(joined.body.chat_id).toEqual(general.id);
    const groupById = await call(svc, 'getchats', { group_id: general.group_id }, { auth: carol });
    expect(groupById.body.total_count).toBe(chats.body.total_count);
  });

  it('keeps the csrf token a string and page tokens usable', async () => {
    const mo = await loginAs(svc, 'mo');
    expect(typeof mo.csrf).toBe('string');
    const chat = await admin(svc, 'chats', { group: 'demo', owner: 'mo@example.com', subject: `ids-${idStyle}` });
    await admin(svc, 'chats/messages', { chat: String(chat.body.id), user: 'bob@example.com', message: 'n{n}', count: 15 });
    const first = await call(svc, 'getchathistory', { chat_id: chat.body.id, limit: 10 }, { auth: mo });
    const second = await call(svc, 'getchathistory', { chat_id: chat.body.id, limit: 10, page_token: first.body.next_page_token }, { auth: mo });
    expect(second.body.data).toHaveLength(5);
    expect(second.body.has_more).toBe(false);
  });
});

describe('opaque identifiers', () => {
  it('include ids of exactly 255 characters with characters that need URL encoding', async () => {
    const svc = await startTestService({ idStyle: 'opaque' });
    try {
      const bob = await loginAs(svc, 'bob');
      const topics = await call(svc, 'gettopics', { group_name: 'demo', limit: 100 }, { auth: bob });
      const ids: string[] = [
        ...topics.body.data.map((t: { id: string }) => t.id),
        ...topics.body.data.map((t: { group_id: string }) => t.group_id),
      ];
      const chats = await call(svc, 'getchats', { group_name: 'demo', show_closed: 'true' }, { auth: bob });
      ids.push(...chats.body.data.map((c: { id: string }) => c.id));
      const users = await admin(svc, 'users', { email: 'x@example.com', password: 'p', full_name: 'X' });
      ids.push(users.body.id);
      expect(ids.every((id) => typeof id === 'string' && id.length <= 255)).toBe(true);
      // The lengths cycle, so a handful of ids always holds one at the maximum.
      const many = await Promise.all(Array.from({ length: 6 }, (_, i) =>
        admin(svc, 'users', { email: `u${i}@example.com`, password: 'p', full_name: `U${i}` })));
      const lengths = many.map((r) => (r.body.id as string).length);
      expect(lengths).toContain(255);
      expect(many.some((r) => /[+/=&%:]/.test(r.body.id))).toBe(true);
    } finally {
      await svc.close();
    }
  });
});
