import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompatClient } from './helpers/compat-client.js';
import { startTestService, type TestService } from './helpers/service.js';

/**
 * The compatibility suite (#21): the requests a search tool makes (field notes "Archives and search"):
 * an API token as Bearer, getsubs for the group, then `searcharchives` with `posterid:<user_id>`, paged
 * with `page_token` from `next_page_token` (the first page sent with `page_token=0`), reading
 * msg_num, subject, name, created, body and summary of each hit.
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc.close());

describe('a search tool', () => {
  it("finds every message of one poster, paging to the end, and nothing else", async () => {
    const client = new CompatClient(svc);
    const login = await client.send('POST', 'login', { email: 'carol@example.com', password: 'carol-demo', token: 'true' });
    expect(login.status).toBe(200);
    const { token, user } = login.json();
    client.auth.bearer = token;

    const [sub] = (await client.all('GET', 'getsubs', { limit: 100 })).filter((s) => s.group_name === 'demo');
    // Whose messages: the busiest poster but the caller, found by a message's user_id as the tool would.
    const messages = await client.all('GET', 'getmessages', { group_id: sub.group_id, limit: 100 });
    const byPoster = new Map<number, any[]>();
    for (const m of messages) if (m.user_id !== user.id) byPoster.set(m.user_id, [...(byPoster.get(m.user_id) ?? []), m]);
    const [posterId, bobs] = [...byPoster].sort((a, b) => b[1].length - a[1].length)[0]!;
    expect(bobs.length).toBeGreaterThan(1);
    expect(bobs.length).toBeLessThan(messages.length);

    const hits = await client.all('GET', 'searcharchives', { group_id: sub.group_id, q: `posterid:${posterId}`, limit: 1 }, true);
    expect(hits.map((h) => h.msg_num).sort((a, b) => a - b)).toEqual(bobs.map((m) => m.msg_num).sort((a, b) => a - b));
    for (const hit of hits) {
      for (const field of ['msg_num', 'subject', 'name', 'created', 'body', 'summary']) expect(hit, field).toHaveProperty(field);
      expect(hit.user_id).toBe(posterId);
    }
    // One request per page after the first ones, each with the token the page before gave.
    const pages = client.requests.filter((r) => r.includes('searcharchives'));
    expect(pages).toHaveLength(hits.length);
    expect(pages[0]).toContain('page_token=0');
  });
});
