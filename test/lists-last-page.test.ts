import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import type { IdStyle } from '../src/service/ids.js';
import { Clients } from './helpers/client.js';
import { CompatClient } from './helpers/compat-client.js';
import { admin, call, ok, startTestService, type TestService } from './helpers/service.js';

/**
 * The end of a list is the number 0 in every id style (#36 item 15, docs/protocol.md "Lists"): public
 * clients of the real service page with `next_page_token` until it `== 0` and look at nothing else, so
 * a last page's `"0"` (a string, as the opaque style sent it) made two of them page on until the rate
 * limit stopped them. Our own client takes either.
 */

const STYLES: IdStyle[] = ['numeric', 'big', 'opaque'];
const services = new Map<IdStyle, { svc: TestService; chatId: string }>();
const clients = new Map<IdStyle, Clients>();

beforeAll(async () => {
  await Promise.all(STYLES.map(async (style) => {
    const svc = await startTestService({ idStyle: style });
    const chat = await admin(svc, 'chats', { group: 'demo', owner: 'mo@example.com', subject: 'last page', members: ['bob@example.com'] });
    const chatId = String(chat.body.id);
    await admin(svc, 'chats/messages', { chat: chatId, user: 'mo@example.com', message: 'line {n}', count: 25 });
    services.set(style, { svc, chatId });
    clients.set(style, new Clients(() => svc));
  }));
});
afterAll(async () => {
  for (const made of clients.values()) await made.closeAll();
  await Promise.all([...services.values()].map(({ svc }) => svc.close()));
});

/** Pages as those public clients do: page_token from next_page_token until it is 0, has_more unread. */
async function pageUntilZero(svc: TestService, bearer: string, chatId: string): Promise<{ pages: number; lastToken: unknown; items: number }> {
  let token: unknown;
  let items = 0;
  for (let pages = 1; pages <= 20; pages += 1) {
    // Parsed keeping every digit (the big style's tokens are past 2^53), as those clients' languages do.
    const page = ok(await call(svc, 'getchathistory', { chat_id: chatId, limit: 10, sort_dir: 'asc', page_token: token }, { auth: { bearer } }));
    items += page.data.length;
    // Their test: the number 0 (in the languages they are written in, a string "0" is not 0).
    if (page.next_page_token === 0) return { pages, lastToken: page.next_page_token, items };
    token = page.next_page_token;
  }
  return { pages: Number.POSITIVE_INFINITY, lastToken: token, items };
}

describe('the last page of a list', () => {
  for (const style of STYLES) {
    it(`is next_page_token 0, a JSON number, in the ${style} id style: a client stopping on 0 stops after the last page`, async () => {
      const { svc, chatId } = services.get(style)!;
      const client = new CompatClient(svc);
      const login = await client.send('POST', 'login', { email: 'bob@example.com', password: 'bob-demo', token: 'true' });
      expect(login.status).toBe(200);
      const paged = await pageUntilZero(svc, login.json().token, chatId);
      expect(paged).toEqual({ pages: 3, lastToken: 0, items: 25 });
      // The other pages' tokens keep the id style's shape (a string in the opaque style).
      const { text } = await call(svc, 'getchathistory', { chat_id: chatId, limit: 10 }, { auth: { bearer: login.json().token } });
      expect(text).toMatch(style === 'opaque' ? /"next_page_token":"[^"]+"/ : /"next_page_token":[1-9]\d*[,}]/);
    });
  }

  it('our client pages every id style to the end', async () => {
    for (const style of STYLES) {
      const bob = clients.get(style)!.make('bob');
      const numbers: number[] = [];
      for await (const message of bob.paginate<ChatMessage>('getchathistory', { chat_id: services.get(style)!.chatId, limit: 10, sort_dir: 'asc' })) {
        numbers.push(message.msg_num);
      }
      expect(numbers).toEqual(Array.from({ length: 25 }, (_, index) => index + 1));
    }
  });
});
