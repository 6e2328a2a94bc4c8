import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompatClient, parseMbox, unzipAll } from './helpers/compat-client.js';
import { admin, ok, startTestService, type TestService } from './helpers/service.js';

/**
 * The compatibility suite (#21): the requests an archive-mining tool makes (field notes: in production
 * since 2020), replayed against the local service. It logs in, keeps the whole Set-Cookie strings as
 * its Cookie header, finds its group in getsubs, downloads the archive since the epoch with a numeric
 * offset, parses the mbox with its own reader, and the next day fetches what is new since the last
 * message's date.
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc.close());

async function download(client: CompatClient, groupId: number, startTime: string) {
  const answer = await client.send('GET', 'downloadarchives', { group_id: groupId, start_time: startTime });
  expect(answer.status, answer.body.toString('utf8').slice(0, 200)).toBe(200);
  const files = await unzipAll(answer.body);
  expect([...files.keys()]).toEqual(['messages.mbox']);
  return parseMbox(files.get('messages.mbox')!.toString('utf8'));
}

describe('an archive-mining tool', () => {
  it('reaches the end of its job: every message of the group, then only the new ones', async () => {
    const client = new CompatClient(svc);
    const login = await client.send('POST', 'login', {}, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=bob%40example.com&password=bob-demo',
    });
    expect(login.status).toBe(200);
    client.auth.cookie = ([] as string[]).concat(login.headers['set-cookie'] ?? []).join('; ');

    const subs = await client.all('GET', 'getsubs', { limit: 100 });
    const sub = subs.find((s) => s.group_name === 'demo');
    expect(typeof sub.group_id).toBe('number');

    const everything = await download(client, sub.group_id, '1970-01-01T00:00:00+00:00');
    const messages = await client.all('GET', 'getmessages', { group_id: sub.group_id, limit: 100 });
    expect(everything).toHaveLength(messages.length);
    for (const entry of everything) {
      for (const header of ['date', 'subject', 'from', 'message-id']) expect(entry.headers.get(header), header).toBeTruthy();
      expect(entry.fromLine).toMatch(/^From \S+ \w{3} \w{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/);
    }
    const subjects = new Set(messages.map((m) => m.subject));
    for (const entry of everything) expect(subjects.has(entry.headers.get('subject'))).toBe(true);

    // The next run: new messages arrive, a day passes (one download per group per 24 hours), and the
    // tool asks from the last message's date, written with an offset as it keeps dates.
    const lastDate = new Date(everything.at(-1)!.headers.get('date')!);
    const topic = ok(await admin(svc, 'topics', { group: 'demo', user: 'carol@example.com', subject: 'Mining run two', body: 'new since last time' }));
    ok(await admin(svc, 'messages', { topic: String(topic.topic.id), user: 'bob@example.com', body: 'and a reply' }));
    ok(await admin(svc, 'clock/advance', { seconds: 24 * 3600 + 60 }));
    const since = lastDate.toISOString().replace('Z', '+00:00');
    const fresh = await download(client, sub.group_id, since);
    const freshSubjects = fresh.map((entry) => entry.headers.get('subject'));
    expect(freshSubjects).toEqual(expect.arrayContaining(['Mining run two', 'Re: Mining run two']));
    expect(fresh.length).toBeLessThan(everything.length);

    expect(client.requests.map((r) => r.split('?')[0])).toEqual([
      'POST /api/v1/login', 'GET /api/v1/getsubs', 'GET /api/v1/downloadarchives', 'GET /api/v1/getmessages', 'GET /api/v1/downloadarchives',
    ]);
  });
});
