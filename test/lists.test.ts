import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, expectError, loginAs, startTestService, type Session, type TestService } from './helpers/service.js';

let svc: TestService;
let mo: Session;
let chatId: unknown;

beforeAll(async () => {
  svc = await startTestService();
  mo = await loginAs(svc, 'mo');
  const chat = await admin(svc, 'chats', { group: 'demo', owner: 'mo@example.com', subject: 'paging', members: [] });
  chatId = chat.body.id;
  await admin(svc, 'chats/messages', { chat: String(chatId), user: 'bob@example.com', message: 'line {n}', count: 257 });
});
afterAll(async () => svc.close());

async function history(params: Record<string, unknown>) {
  return call(svc, 'getchathistory', { chat_id: chatId, ...params }, { auth: mo });
}

describe('limit', () => {
  it('defaults to 10 and takes 1 to 100', async () => {
    expect((await history({})).body.data).toHaveLength(10);
    expect((await history({ limit: 1 })).body.data).toHaveLength(1);
    expect((await history({ limit: 100 })).body.data).toHaveLength(100);
  });

  it('answers invalid_value with extra limit outside 1 to 100 or not a number', async () => {
    for (const limit of ['0', '101', '-5', 'ten', '1.5']) expectError(await history({ limit }), 'invalid_value', 'limit');
  });
});

describe('paging', () => {
  it('pages through a long list: every item once, counts and indexes right, 0 as the last token', async () => {
    const seen: number[] = [];
    let token: unknown;
    let pages = 0;
    for (;;) {
      const page = await history({ limit: 100, sort_dir: 'asc', ...(token !== undefined ? { page_token: token } : {}) });
      expect(page.status).toBe(200);
      const body = page.body;
      expect(body).toMatchObject({ object: 'list', total_count: 257, sort_field: 'msg_num', sort_dir: 'asc' });
      expect(body.start_item).toBe(seen.length + 1);
      expect(body.end_item).toBe(seen.length + body.data.length);
      seen.push(...body.data.map((m: { msg_num: number }) => m.msg_num));
      pages += 1;
      if (!body.has_more) {
        expect(body.next_page_token).toBe(0);
        break;
      }
      expect(body.next_page_token).not.toBe(0);
      token = body.next_page_token;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(Array.from({ length: 257 }, (_, i) => i + 1));
  });

  it('neither repeats nor skips when items are added between pages', async () => {
    const chat = await admin(svc, 'chats', { group: 'demo', owner: 'mo@example.com', subject: 'moving', members: [] });
    await admin(svc, 'chats/messages', { chat: String(chat.body.id), user: 'bob@example.com', message: 'm{n}', count: 30 });
    const first = await call(svc, 'getchathistory', { chat_id: chat.body.id, limit: 10 }, { auth: mo });
    expect(first.body.data.map((m: { msg_num: number }) => m.msg_num)).toEqual([30, 29, 28, 27, 26, 25, 24, 23, 22, 21]);
    await admin(svc, 'chats/messages', { chat: String(chat.body.id), user: 'bob@example.com', message: 'late {n}', count: 5 });
    const second = await call(svc, 'getchathistory', { chat_id: chat.body.id, limit: 10, page_token: first.body.next_page_token }, { auth: mo });
    expect(second.body.data.map((m: { msg_num: number }) => m.msg_num)).toEqual([20, 19, 18, 17, 16, 15, 14, 13, 12, 11]);
    expect(second.body.total_count).toBe(35);
  });

  it('rejects an unknown page_token with invalid_value', async () => {
    expectError(await history({ page_token: '987654321' }), 'invalid_value', 'page_token');
  });

  it('does not let one caller use another caller\'s page token', async () => {
    const page = await history({ limit: 5 });
    const bob = await loginAs(svc, 'bob');
    expectError(await call(svc, 'getchathistory', { chat_id: chatId, page_token: page.body.next_page_token }, { auth: bob }),
      'invalid_value', 'page_token');
  });
});

describe('sorting', () => {
  it('sorts by a valid sort_field in either direction', async () => {
    const asc = await history({ sort_field: 'created', sort_dir: 'asc', limit: 3 });
    expect(asc.body.data.map((m: { msg_num: number }) => m.msg_num)).toEqual([1, 2, 3]);
    const desc = await history({ sort_field: 'msg_num', sort_dir: 'desc', limit: 3 });
    expect(desc.body.data.map((m: { msg_num: number }) => m.msg_num)).toEqual([257, 256, 255]);
  });

  it('answers invalid_value for an unknown sort_field or sort_dir', async () => {
    expectError(await history({ sort_field: 'colour' }), 'invalid_value', 'sort_field');
    expectError(await history({ sort_dir: 'up' }), 'invalid_value', 'sort_dir');
  });
});

describe('page tokens belong to their list', () => {
  it('are refused for another group or the other half of getchats', async () => {
    await admin(svc, 'groups', { name: 'second', members: [{ email: 'mo@example.com', role: 'owner' }] });
    for (let i = 0; i < 3; i += 1) await admin(svc, 'chats', { group: 'demo', owner: 'mo@example.com', subject: `extra ${i}` });
    const first = await call(svc, 'getchats', { group_name: 'demo', limit: 2 }, { auth: mo });
    expect(first.body.has_more).toBe(true);
    const token = first.body.next_page_token;
    expectError(await call(svc, 'getchats', { group_name: 'second', page_token: token }, { auth: mo }), 'invalid_value', 'page_token');
    expectError(await call(svc, 'getchats', { group_name: 'demo', show_closed: 'true', page_token: token }, { auth: mo }),
      'invalid_value', 'page_token');
    const next = await call(svc, 'getchats', { group_name: 'demo', limit: 2, page_token: token }, { auth: mo });
    expect(next.status).toBe(200);
  });
});
