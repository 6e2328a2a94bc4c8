import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFor, outputs, PASSWORDS, runCli, succeeded } from './helpers/cli.js';
import { call, loginAs, ok, startTestService, type TestService } from './helpers/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
  // An activity entry whose text the service escapes as HTML.
  ok(await call(svc, 'newchat', { group_name: 'demo', subject: 'Fish & <Chips>', desc: 'd' }, { method: 'POST', auth: await loginAs(svc, 'mo') }));
});
afterAll(async () => {
  await svc?.close();
});

const DATE = String.raw`\d{4}-\d\d-\d\d \d\d:\d\d`;

describe('groupwire activity', () => {
  it('prints date, action and the entry as plain text, newest first (as a moderator)', async () => {
    const out = succeeded(await runCli(['activity', '--group', 'demo'], envFor(svc, 'mo')));
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^${DATE} {2}chat_created {7}Mo Moderator created the chat "Fish & <Chips>"$`));
    expect(out).toMatch(new RegExp(`^${DATE} {2}member_banned +Dave Banned was banned$`, 'm'));
    expect(out).not.toContain('<a ');
    expect(out).not.toContain('&amp;');
  });

  it('passes the filters on: --action, --filter-by, --limit', async () => {
    const banned = succeeded(await runCli(['activity', '--group', 'demo', '--action', 'member_banned'], envFor(svc, 'mo')));
    expect(banned.trimEnd().split('\n')).toEqual([expect.stringMatching(/member_banned +Dave Banned was banned$/)]);
    const mod = succeeded(await runCli(['activity', '--group', 'demo', '--filter-by', 'mod', '--restrict-date', 'today'], envFor(svc, 'mo')));
    expect(mod).toContain('chat_created');
    expect(mod).not.toContain('member_joined');
    const two = succeeded(await runCli(['activity', '--group', 'demo', '--limit', '2'], envFor(svc, 'mo')));
    expect(two).toMatch(new RegExp(`^(${DATE} .*\\n){2}\\(2 of \\d+ entries; --limit takes up to 100\\)\\n$`));
  });

  it('--json prints the service\'s list', async () => {
    const out = succeeded(await runCli(['activity', '--group', 'demo', '--json', '--limit', '3'], envFor(svc, 'mo')));
    const list = JSON.parse(out);
    expect(list.object).toBe('list');
    expect(list.data).toHaveLength(3);
    expect(list.data[0]).toMatchObject({ object: 'activity_log', action: 'chat_created' });
  });

  it('exits 1 for a member without view_activity', async () => {
    const result = await runCli(['activity', '--group', 'demo'], envFor(svc, 'bob'));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('groupwire: only moderators can read the activity log (inadequate_permissions: view_activity)\n');
    expect(result.stdout).toBe('');
  });

  it('exits 2 on a value outside the known ones', async () => {
    const results = await Promise.all([
      runCli(['activity', '--group', 'demo', '--filter-by', 'everything'], envFor(svc, 'mo')),
      runCli(['activity', '--group', 'demo', '--limit', '0'], envFor(svc, 'mo')),
    ]);
    expect(results.map((r) => r.code)).toEqual([2, 2]);
    expect(results[0]!.stderr).toContain('--filter-by must be one of member, message, mod, pay');
    expect(results[1]!.stderr).toContain("Run 'groupwire activity --help'");
  });
});

describe('groupwire topics', () => {
  it('prints the last message\'s date, the count, the subject and who started each topic', async () => {
    const out = succeeded(await runCli(['topics', '--group', 'demo'], envFor(svc, 'bob')));
    expect(out).toMatch(new RegExp(`^${DATE} {2}2 messages {3}Release planning #announce {2}\\(Alice Owner\\)$`, 'm'));
    expect(out).toMatch(new RegExp(`^${DATE} {2}1 message {4}Meeting notes {2}\\(Mo Moderator\\)$`, 'm'));
    expect(out.trimEnd().split('\n')).toHaveLength(4);
  });

  it('--limit shows a page and a footer; --json prints the service\'s list', async () => {
    const one = succeeded(await runCli(['topics', '--group', 'demo', '--limit', '1'], envFor(svc, 'bob')));
    expect(one).toMatch(/\n\(1 of 4 topics; --limit takes up to 100\)\n$/);
    const list = JSON.parse(succeeded(await runCli(['topics', '--group', 'demo', '--json'], envFor(svc, 'bob'))));
    expect(list).toMatchObject({ object: 'list', total_count: 4 });
    expect(list.data[0].object).toBe('topic');
  });

  it('exits 2 without --group, 1 for a banned member', async () => {
    const noGroup = await runCli(['topics'], envFor(svc, 'bob'));
    expect(noGroup.code).toBe(2);
    expect(noGroup.stderr).toContain('--group NAME is required');
    const banned = await runCli(['topics', '--group', 'demo'], envFor(svc, 'dave'));
    expect(banned.code).toBe(1);
    expect(banned.stderr).toBe('groupwire: you may not read the archives of this group (inadequate_permissions: archives_visible)\n');
  });
});

describe('secrets', () => {
  it('no password appeared in any output of this file', () => {
    for (const password of PASSWORDS) expect(outputs.join('\n')).not.toContain(password);
  });
});
