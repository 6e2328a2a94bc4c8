import { afterAll, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { Paginator, ResponseFormatError, type ChatMessage, type List } from '../src/api/index.js';
import { Clients, recordSends } from './helpers/client.js';
import { admin, startTestService, type TestService } from './helpers/service.js';

describe('paging', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  let chatId: string;
  beforeAll(async () => {
    svc = await startTestService();
    const chat = await admin(svc, 'chats', { group: 'demo', owner: 'mo@example.com', subject: 'paging', members: ['bob@example.com'] });
    chatId = String(chat.body.id);
    await admin(svc, 'chats/messages', { chat: chatId, user: 'mo@example.com', message: 'message {n}', count: 450 });
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
  });

  it('yields every one of 450 chat messages once, in order', async () => {
    const bob = clients.make('bob');
    const sent = recordSends(bob);
    const pager = bob.paginate<ChatMessage>('getchathistory', { chat_id: chatId, limit: 100, sort_dir: 'asc' });
    expectTypeOf(pager).toEqualTypeOf<Paginator<ChatMessage>>();
    const numbers: number[] = [];
    for await (const message of pager) {
      expect(message.message).toBe(`message ${message.msg_num}`);
      numbers.push(message.msg_num);
    }
    expect(numbers).toEqual(Array.from({ length: 450 }, (_, index) => index + 1));
    expect(sent.filter((operation) => operation === 'getchathistory')).toHaveLength(5);
  });

  it('.pages() yields five pages and .all() every item', async () => {
    const bob = clients.make('bob');
    const pager = bob.paginate<ChatMessage>('getchathistory', { chat_id: chatId, limit: 100, sort_dir: 'asc' });
    const pages: Array<List<ChatMessage>> = [];
    for await (const page of pager.pages()) pages.push(page);
    expect(pages.map((page) => [page.data.length, page.start_item, page.end_item, page.has_more])).toEqual([
      [100, 1, 100, true], [100, 101, 200, true], [100, 201, 300, true], [100, 301, 400, true], [50, 401, 450, false],
    ]);
    expect(pages.every((page) => page.total_count === 450)).toBe(true);
    expect(pages.at(-1)!.next_page_token).toBe('0');

    const all = await bob.paginate<ChatMessage>('getchathistory', { chat_id: chatId, limit: 100, sort_dir: 'desc' }).all();
    expectTypeOf(all).toEqualTypeOf<ChatMessage[]>();
    expect(all.map((message) => message.msg_num)).toEqual(Array.from({ length: 450 }, (_, index) => 450 - index));
  });

  it('follows start_msg_num and the other filters on every page', async () => {
    const bob = clients.make('bob');
    const rest = await bob.paginate<ChatMessage>('getchathistory', { chat_id: chatId, limit: 30, sort_dir: 'asc', start_msg_num: 400 }).all();
    expect(rest.map((message) => message.msg_num)).toEqual(Array.from({ length: 50 }, (_, index) => 401 + index));
  });

  it.each([0, 101, 1.5, -1, Number.NaN])('limit %s is a RangeError before any request', async (limit) => {
    const bob = clients.make('bob');
    const send = vi.spyOn(bob.transport, 'send');
    expect(() => bob.paginate('getchathistory', { chat_id: chatId, limit })).toThrow(RangeError);
    await expect(bob.call('getchathistory', { chat_id: chatId, limit })).rejects.toThrow(RangeError);
    await expect(bob.getChatHistory({ chat_id: chatId, limit })).rejects.toThrow(RangeError);
    await expect(bob.getChats({ group_name: 'demo', limit })).rejects.toThrow(/limit must be an integer from 1 to 100/);
    await expect(bob.getTopics({ limit })).rejects.toThrow(RangeError);
    expect(send).not.toHaveBeenCalled();
  });

  it('limits 1 and 100 are accepted', async () => {
    const bob = clients.make('bob');
    expect((await bob.getChatHistory({ chat_id: chatId, limit: 1 })).data).toHaveLength(1);
    expect((await bob.getChatHistory({ chat_id: chatId, limit: 100 })).data).toHaveLength(100);
  });

  it('a list saying has_more without a usable next_page_token stops with ResponseFormatError', async () => {
    const page = (token: string): List<number> => ({
      object: 'list', total_count: 9, start_item: 1, end_item: 1, has_more: true, next_page_token: token, data: [1],
    });
    const fetches: unknown[] = [];
    const looping = new Paginator<number>('getchats', { limit: 1 }, async (params) => {
      fetches.push(params.page_token);
      return page('7');
    });
    await expect(looping.all()).rejects.toBeInstanceOf(ResponseFormatError);
    expect(fetches).toEqual([undefined, '7']);
    const zero = new Paginator<number>('getchats', {}, async () => page('0'));
    await expect(zero.all()).rejects.toThrow(/next_page_token/);
  });

  it('an empty list from the real service (data: null) reads as []', async () => {
    const bob = clients.make('bob');
    await bob.login();
    vi.spyOn(bob.transport, 'readJson').mockResolvedValueOnce({
      object: 'list', total_count: 0, start_item: 0, end_item: 0, has_more: false, next_page_token: '0', data: null,
    });
    expect(await bob.paginate('getdrafts').all()).toEqual([]);
  });
});
