import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Seed } from '../src/service/seed.js';
import { call, expectError, login, startTestService, type Session, type TestService } from './helpers/service.js';

const LONG_LEAD = 'lorem ipsum dolor sit amet '.repeat(20);

const SEED: Seed = {
  users: [
    { email: 'ann@example.com', password: 'ann-pw', full_name: 'Ann Owner' },
    { email: 'ben@example.com', password: 'ben-pw', full_name: 'Ben Bennett' },
    { email: 'cal@example.com', password: 'cal-pw', full_name: 'Cal Tokyo', timezone: 'Asia/Tokyo' },
    { email: 'out@example.com', password: 'out-pw', full_name: 'Out Sider' },
    { email: 'ban@example.com', password: 'ban-pw', full_name: 'Ban Ned' },
  ],
  groups: [{
    name: 'search',
    members: [
      { email: 'ann@example.com', role: 'owner' },
      { email: 'ben@example.com', signature: 'Ben Bennett\nAcme Widgets' },
      { email: 'cal@example.com' },
      { email: 'ban@example.com', role: 'banned' },
    ],
    hashtags: [{ name: 'urgent' }, { name: 'misc' }],
    topics: [
      {
        subject: 'Server outage #urgent',
        messages: [
          { from: 'ann@example.com', ago: '5d', body: 'The database server crashed at midnight.' },
          { from: 'ben@example.com', ago: '4d', body: 'Restarted the database. All good now.\n-- \nBen Bennett\nAcme Widgets' },
        ],
      },
      {
        subject: 'Widget pricing',
        messages: [
          { from: 'ben@example.com', ago: '3d', body: 'What do widgets cost?\n\nBen Bennett\nAcme  Widgets' },
          { from: 'cal@example.com', ago: '2d', html: true, body: '<p>Widgets cost <b>ten</b> euros.</p>' },
        ],
      },
      {
        subject: 'Lunch #misc',
        messages: [
          { from: 'ann@example.com', ago: '30m', body: 'Count me in. Lunch lunch lunch.' },
          { from: 'cal@example.com', ago: '10m', body: 'Lunch at the Café today? e-mail me.' },
        ],
      },
      {
        subject: 'Long read',
        messages: [{ from: 'ann@example.com', ago: '6d', body: `${LONG_LEAD}the needle is here ${LONG_LEAD}` }],
      },
    ],
  }],
};

let svc: TestService;
let ann: Session;
let ben: Session;
let cal: Session;

beforeAll(async () => {
  svc = await startTestService({ seed: SEED });
  [ann, ben, cal] = await Promise.all([
    login(svc, 'ann@example.com', 'ann-pw'), login(svc, 'ben@example.com', 'ben-pw'), login(svc, 'cal@example.com', 'cal-pw'),
  ]);
});

afterAll(async () => {
  await svc?.close();
});

type Result = { body: string; name: string; msg_num: number; summary: string; num_matches: number };

async function search(params: Record<string, unknown>, who: Session = ann) {
  const response = await call(svc, 'searcharchives', { group_name: 'search', limit: 100, ...params }, { auth: who });
  expect(response.status, response.text).toBe(200);
  return response.body as { object: string; query: string; total_count: number; sort_field: string; sort_dir: string; data: Result[] };
}

const nums = (list: { data: Result[] }): number[] => list.data.map((r) => r.msg_num);

describe('searcharchives', () => {
  it('answers a list of messages with summary and num_matches, newest first', async () => {
    const list = await search({ q: 'database' });
    expect(list.object).toBe('list');
    expect(list.query).toBe('database');
    expect([list.sort_field, list.sort_dir]).toEqual(['created', 'desc']);
    expect(nums(list)).toEqual([2, 1]);
    const first = list.data[0]!;
    expect(first).toMatchObject({ object: 'message', name: 'Ben Bennett', num_matches: 1 });
    expect(first.summary).toContain('database');
  });

  it('matches word prefixes and quoted phrases, ignoring case and accents', async () => {
    expect(nums(await search({ q: 'DATABA' }))).toEqual([2, 1]);
    expect(nums(await search({ q: '"database server"' }))).toEqual([1]);
    expect(nums(await search({ q: '"database serv"' }))).toEqual([]);
    expect(nums(await search({ q: 'cafe' }))).toEqual([6]);
    expect(nums(await search({ q: 'e-mail' }))).toEqual([6]);
    // Every term must match; the subject counts.
    expect(nums(await search({ q: 'outage restarted' }))).toEqual([2]);
    expect(nums(await search({ q: 'outage lunch' }))).toEqual([]);
  });

  it('searches HTML bodies as text', async () => {
    expect(nums(await search({ q: 'ten euros' }))).toEqual([4]);
    // The <b> tag is not a word of the message (and no word of cal's starts with b).
    expect(nums(await search({ q: `posterid:${cal.user.id} b` }))).toEqual([]);
    expect(nums(await search({ q: `posterid:${cal.user.id} ten` }))).toEqual([4]);
  });

  it('filters by #hashtag and posterid', async () => {
    expect(nums(await search({ q: '#urgent' }))).toEqual([2, 1]);
    expect(nums(await search({ q: '#URGENT database' }))).toEqual([2, 1]);
    expect(nums(await search({ q: '#misc database' }))).toEqual([]);
    expect(nums(await search({ q: `posterid:${ben.user.id}` }))).toEqual([3, 2]);
    expect(nums(await search({ q: `posterid:${ann.user.id} lunch` }))).toEqual([5]);
    expect(nums(await search({ q: 'posterid:999999' }))).toEqual([]);
  });

  it('refuses -#tag as not yet implemented', async () => {
    expectError(await call(svc, 'searcharchives', { group_name: 'search', q: 'lunch -#misc' }, { auth: ann }),
      'bad_request', '-#tag (exclude hashtag) is not yet implemented');
  });

  it('leaves signatures out with exclude_sigs', async () => {
    expect(nums(await search({ q: 'acme' }))).toEqual([3, 2]);
    expect(nums(await search({ q: 'acme', exclude_sigs: 'true' }))).toEqual([]);
    expect(nums(await search({ q: 'widgets', exclude_sigs: 'true' }))).toEqual([4, 3]);
  });

  it('collapses results by topic with collapse_topics', async () => {
    const list = await search({ q: 'database', collapse_topics: 'true' });
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toMatchObject({ msg_num: 2, num_matches: 2 });
    const all = await search({ q: '', collapse_topics: 'true' });
    expect(all.data.map((r) => [r.msg_num, r.num_matches])).toEqual([[6, 2], [4, 2], [2, 2], [7, 1]]);
  });

  it('sorts by relevance, created and msg_num, and pages through results', async () => {
    // ann's message says lunch three times (four hits with its subject), cal's once (two hits).
    expect(nums(await search({ q: 'lunch' }))).toEqual([6, 5]);
    expect(nums(await search({ q: 'lunch', sort_field: 'relevance' }))).toEqual([5, 6]);
    expect(nums(await search({ q: 'lunch', sort_field: 'relevance', sort_dir: 'asc' }))).toEqual([6, 5]);
    expect(nums(await search({ q: '', sort_field: 'msg_num', sort_dir: 'asc' }))).toEqual([1, 2, 3, 4, 5, 6, 7]);

    const first = (await call(svc, 'searcharchives', { group_name: 'search', q: 'lunch', sort_field: 'relevance', limit: 1 }, { auth: ann })).body;
    expect([first.has_more, first.data[0].msg_num]).toEqual([true, 5]);
    const second = (await call(svc, 'searcharchives', {
      group_name: 'search', q: 'lunch', limit: 1, page_token: first.next_page_token,
    }, { auth: ann })).body;
    expect([second.has_more, second.data[0].msg_num, second.sort_field]).toEqual([false, 6, 'relevance']);
    // A page token belongs to the query it came from.
    expectError(await call(svc, 'searcharchives', {
      group_name: 'search', q: 'database', limit: 1, page_token: first.next_page_token,
    }, { auth: ann }), 'invalid_value', 'page_token');
  });

  it('summarizes around the first match', async () => {
    const [hit] = (await search({ q: 'needle' })).data;
    expect(hit!.summary).toContain('the needle is here');
    expect(hit!.summary.startsWith('…')).toBe(true);
    expect(hit!.summary.length).toBeLessThanOrEqual(200);
    const [start] = (await search({ q: 'long' })).data;
    expect(start!.summary.startsWith('lorem ipsum')).toBe(true);
  });

  it('limits by start_date and end_date in the caller\'s timezone', async () => {
    const iso = (msAgo: number): string => new Date(Date.now() - msAgo).toISOString().replace(/\.\d+Z$/, 'Z');
    const hour = 3600_000;
    expect(nums(await search({ start_date: iso(hour) }))).toEqual([6, 5]);
    expect(nums(await search({ end_date: iso(3.5 * 24 * hour), sort_field: 'msg_num', sort_dir: 'asc' }))).toEqual([1, 2, 7]);
    expect(nums(await search({ start_date: iso(4.5 * 24 * hour), end_date: iso(2.5 * 24 * hour) }))).toEqual([3, 2]);

    // The same wall-clock time without an offset is 9 hours earlier for cal (Asia/Tokyo) than for ann (UTC).
    const instant = Date.now() - 49 * hour;
    const tokyoWallClock = new Date(instant + 9 * hour).toISOString().slice(0, 19);
    expect(nums(await search({ start_date: tokyoWallClock }, cal))).toEqual([6, 5, 4]);
    expect(nums(await search({ start_date: tokyoWallClock }, ann))).toEqual([6, 5]);
  });

  it('applies preset_date_range only when no date is given', async () => {
    expect(nums(await search({ preset_date_range: 'past_hour' }))).toEqual([6, 5]);
    expect(nums(await search({ preset_date_range: 'past_24_hours' }))).toEqual([6, 5]);
    expect(nums(await search({ preset_date_range: 'past_week' }))).toHaveLength(7);
    expect(nums(await search({ preset_date_range: 'past_month' }))).toHaveLength(7);
    expect(nums(await search({ preset_date_range: 'past_year' }))).toHaveLength(7);
    const old = new Date(Date.now() - 10 * 24 * 3600_000).toISOString();
    expect(nums(await search({ preset_date_range: 'past_hour', start_date: old }))).toHaveLength(7);
  });

  it('answers invalid values and missing permissions', async () => {
    const bad = (params: Record<string, unknown>, who: Session = ann) =>
      call(svc, 'searcharchives', { group_name: 'search', ...params }, { auth: who });
    expectError(await bad({ start_date: 'yesterday' }), 'invalid_value', 'start_date');
    expectError(await bad({ end_date: '2026-13-01' }), 'invalid_value', 'end_date');
    expectError(await bad({ preset_date_range: 'past_decade' }), 'invalid_value', 'preset_date_range');
    expectError(await bad({ collapse_topics: 'maybe' }), 'invalid_value', 'collapse_topics');
    expectError(await bad({ exclude_sigs: 'perhaps' }), 'invalid_value', 'exclude_sigs');
    expectError(await bad({ sort_field: 'subject' }), 'invalid_value', 'sort_field');
    expectError(await bad({ q: 'posterid:' }), 'bad_request', 'invalid posterid');
    expectError(await call(svc, 'searcharchives', { q: 'x' }, { auth: ann }), 'bad_request', 'invalid group_id');
    expectError(await call(svc, 'searcharchives', { group_name: 'nope' }, { auth: ann }), 'bad_request', 'invalid group_name');
    // An outsider: the private group answers as one that does not exist (#15 item 8).
    expectError(await bad({}, await login(svc, 'out@example.com', 'out-pw')), 'bad_request', 'invalid group_name');
    expectError(await bad({}, await login(svc, 'ban@example.com', 'ban-pw')), 'inadequate_permissions');
    expectError(await call(svc, 'searcharchives', { group_name: 'search' }), 'authentication');
  });
});
