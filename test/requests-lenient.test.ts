import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompatClient, parseMbox, unzipAll } from './helpers/compat-client.js';
import { call, loginAs, send, startTestService, type Session, type TestService } from './helpers/service.js';

/**
 * Issue #21, item 1: where the real service is more lenient than our reading of the spec, so are we
 * (docs/protocol.md "Request forms real clients send"). Each test sends the exact shape a public client
 * sends (the field notes) and checks the answer that client needs.
 */

let svc: TestService;
let bob: Session;
beforeAll(async () => {
  svc = await startTestService();
  bob = await loginAs(svc, 'bob');
});
afterAll(async () => svc.close());

describe('read operations by POST', () => {
  it('a read answers POST with its parameters in the query string and no csrf (admin report scripts)', async () => {
    const answer = await send(svc, '/api/v1/gettopics?group_name=demo&limit=2', 'POST', { cookie: bob.cookie });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ object: 'list', has_more: true });
    expect(answer.body.data).toHaveLength(2);
  });

  it('and with its parameters in a form body, also without csrf; the answer is the one GET gives', async () => {
    const form = await send(svc, '/api/v1/getmessages', 'POST', { cookie: bob.cookie, 'content-type': 'application/x-www-form-urlencoded' }, 'group_name=demo&limit=3');
    const get = await call(svc, 'getmessages', { group_name: 'demo', limit: 3 }, { auth: bob });
    expect(form.status).toBe(200);
    expect(form.body.data.map((m: { id: string }) => m.id)).toEqual(get.body.data.map((m: { id: string }) => m.id));
    const search = await send(svc, '/api/v1/searcharchives?group_name=demo&q=bot', 'POST', { cookie: bob.cookie });
    expect(search.status).toBe(200);
    expect(search.body.object).toBe('list');
  });

  it('a write by GET is still refused: only reads are lenient', async () => {
    const answer = await call(svc, 'newchat', { group_name: 'demo', subject: 'x', desc: '' }, { auth: bob });
    expect(answer.body).toEqual({ object: 'error', type: 'bad_request', extra: 'newchat takes POST, not GET' });
  });
});

describe('an empty body is an empty body', () => {
  it('login with the fields in the query string, Content-Type JSON and no body at all', async () => {
    const answer = await send(svc, '/api/v1/login?email=bob%40example.com&password=bob-demo', 'POST', { 'content-type': 'application/json' }, '');
    expect(answer.status).toBe(200);
    expect(answer.body.user.email).toBe('bob@example.com');
  });

  it('a read by POST with a form content type and an empty body', async () => {
    const answer = await send(svc, '/api/v1/getchats?group_name=demo', 'POST', { cookie: bob.cookie, 'content-type': 'application/x-www-form-urlencoded' }, '');
    expect(answer.status).toBe(200);
    expect(answer.body.object).toBe('list');
  });
});

describe('times with a numeric offset and fractions of a second', () => {
  it('downloadarchives start_time as the archive-mining tool sends it (+00:00), and with fractions and -07:00', async () => {
    for (const [who, startTime] of [['bob', '1970-01-01T00:00:00+00:00'], ['carol', '2026-01-01T00:00:00.123456789-07:00']] as const) {
      const session = who === 'bob' ? bob : await loginAs(svc, who);
      const answer = await send(svc, `/api/v1/downloadarchives?group_name=demo&start_time=${encodeURIComponent(startTime)}`, 'GET', { cookie: session.cookie });
      expect(answer.status, startTime).toBe(200);
      expect(String(answer.headers['content-type'])).toMatch(/^application\/zip/);
    }
  });

  it('the activity log\'s and search\'s dates take them too', async () => {
    const alice = await loginAs(svc, 'alice');
    const activity = await call(svc, 'getactivitylog', {
      group_name: 'demo', restrict_date: 'between', start_date: '2000-01-01T00:00:00.5+02:00', end_date: '2100-01-01T00:00:00-07:00', limit: 5,
    }, { auth: alice });
    expect(activity.status).toBe(200);
    expect(activity.body.data.length).toBeGreaterThan(0);
    const search = await call(svc, 'searcharchives', { group_name: 'demo', q: 'bot', start_date: '2000-01-01T00:00:00.000+00:00', end_date: '2100-01-01T00:00:00Z' }, { auth: bob });
    expect(search.status).toBe(200);
    expect(search.body.data.length).toBeGreaterThan(0);
  });
});

describe('sort_field=updated where a list has an update time', () => {
  it('searcharchives (as a report script sends it), getmessages and gettopic', async () => {
    const search = await send(svc, '/api/v1/searcharchives?group_name=demo&q=the&sort_field=updated&sort_dir=desc&limit=100', 'POST', { cookie: bob.cookie });
    expect(search.status).toBe(200);
    const updated = search.body.data.map((hit: { updated: string }) => Date.parse(hit.updated));
    expect(updated).toEqual([...updated].sort((a, b) => b - a));
    const messages = await call(svc, 'getmessages', { group_name: 'demo', sort_field: 'updated', sort_dir: 'asc', limit: 100 }, { auth: bob });
    expect(messages.status).toBe(200);
    const times = messages.body.data.map((m: { updated: string }) => Date.parse(m.updated));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const topic = await call(svc, 'gettopic', { topic_id: String(messages.body.data[0].topic_id), sort_field: 'updated' }, { auth: bob });
    expect(topic.status).toBe(200);
  });
});

describe('a Cookie header made of whole Set-Cookie strings', () => {
  it('still authenticates (attributes and all)', async () => {
    const login = await send(svc, '/api/v1/login', 'POST', { 'content-type': 'application/x-www-form-urlencoded' }, 'email=bob%40example.com&password=bob-demo');
    const setCookies = ([] as string[]).concat(login.headers['set-cookie'] ?? []);
    expect(setCookies.length).toBeGreaterThan(0);
    // One client joins the Set-Cookie strings as they came: `name=value; Path=/; HttpOnly; Secure; SameSite=Lax, ...`.
    for (const cookie of [setCookies.join('; '), setCookies.join(', ')]) {
      const answer = await send(svc, '/api/v1/getchats?group_name=demo', 'GET', { cookie });
      expect(answer.status, cookie).toBe(200);
      expect(answer.body.object).toBe('list');
    }
  });
});

describe('what public clients send or read that our first reading did not expect', () => {
  it('sort_field=activity for topics (a digest client) and sort_field=group for subscriptions (a report script)', async () => {
    const topics = await send(svc, '/api/v1/gettopics?group_name=demo&limit=100&sort_field=activity', 'GET', { cookie: bob.cookie });
    expect(topics.status).toBe(200);
    const byActivity = await call(svc, 'gettopics', { group_name: 'demo', limit: 100, sort_field: 'most_recent_message' }, { auth: bob });
    expect(topics.body.data.map((t: { id: unknown }) => t.id)).toEqual(byActivity.body.data.map((t: { id: unknown }) => t.id));
    const subs = await send(svc, '/api/v1/getsubs?limit=100&sort_field=group&page_token=0', 'POST', { cookie: bob.cookie });
    expect(subs.status).toBe(200);
    expect(subs.body.data.map((s: { group_name: string }) => s.group_name)).toEqual(['demo']);
  });

  it('times are written with nanoseconds and a numeric offset, as the real service writes them', async () => {
    const messages = await call(svc, 'getmessages', { group_name: 'demo', limit: 1 }, { auth: bob });
    const created: string = messages.body.data[0].created;
    expect(created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}\+00:00$/);
    // What a client that reads the offset from the last six characters gets.
    expect(created.slice(-6)).toBe('+00:00');
    expect(Date.parse(created)).toBe(Date.parse(`${created.slice(0, 23)}Z`));
  });

  it('downloadarchives takes an end_time (a connector sends it) and keeps the messages up to it', async () => {
    const all = await call(svc, 'getmessages', { group_name: 'demo', limit: 100, sort_dir: 'asc' }, { auth: bob });
    const cut = all.body.data[2].created;
    // The zip is bytes: read through the compatibility suite's client, as alice (bob and carol used their day above).
    const client = new CompatClient(svc);
    client.auth.cookie = (await loginAs(svc, 'alice')).cookie;
    const answer = await client.send('GET', 'downloadarchives', { group_name: 'demo', end_time: cut });
    expect(answer.status).toBe(200);
    const mbox = parseMbox((await unzipAll(answer.body)).get('messages.mbox')!.toString('utf8'));
    expect(mbox.map((entry) => entry.headers.get('subject'))).toEqual(all.body.data.slice(0, 3).map((m: { subject: string }) => m.subject));
    const mo = await loginAs(svc, 'mo');
    const bad = await send(svc, '/api/v1/downloadarchives?group_name=demo&end_time=yesterday', 'GET', { cookie: mo.cookie });
    expect(bad.body).toEqual({ object: 'error', type: 'bad_request', extra: 'invalid end_time format' });
  });
});
