import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFor, runCli, succeeded } from './helpers/cli.js';
import { admin, call, loginAs, ok, startTestService, type TestService } from './helpers/service.js';

/**
 * Issue #21: `groupwire groups` lists the caller's groups (getsubs), and `groupwire api --group NAME|ID`
 * looks the group up in them and sends its id; a group the caller is not in goes by name.
 */

let svc: TestService;
let demoId: string;
beforeAll(async () => {
  svc = await startTestService({ idStyle: 'big' });
  ok(await admin(svc, 'groups', { name: 'demo+events', title: 'Demo events', members: [{ email: 'bob@example.com', role: 'moderator' }] }));
  ok(await admin(svc, 'groups', { name: 'open', settings: { privacy: 'group_privacy_none' }, members: [{ email: 'alice@example.com', role: 'owner' }] }));
  demoId = String(ok(await call(svc, 'getgroup', { group_name: 'demo' }, { auth: await loginAs(svc, 'bob') })).id);
});
afterAll(async () => svc.close());

describe('groupwire groups', () => {
  it("prints the caller's groups with their ids (every digit) and the caller's standing", async () => {
    const out = succeeded(await runCli(['groups'], envFor(svc, 'bob')));
    const lines = out.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(new RegExp(`^demo +id ${demoId} +member +Demo Group$`));
    expect(lines[1]).toMatch(/^demo\+events +id \d{16,} +moderator +Demo events$/);
    expect(lines[2]).toBe('2 groups');
  });

  it("shows an owner as owner: alice owns demo and open (#36 item 14), and the service says sub_modstatus_owner", async () => {
    const lines = succeeded(await runCli(['groups'], envFor(svc, 'alice'))).trimEnd().split('\n');
    expect(lines[0]).toMatch(/^demo +id \d+ +owner +Demo Group$/);
    expect(lines[1]).toMatch(/^open +id \d+ +owner$/);
    // Every place the service reports standing: getsubs, and getmembers (a member_info per member).
    const asAlice = await loginAs(svc, 'alice');
    const subs = ok(await call(svc, 'getsubs', {}, { auth: asAlice })).data;
    expect(subs.map((sub: { group_name: string; mod_status: string }) => [sub.group_name, sub.mod_status]))
      .toEqual([['demo', 'sub_modstatus_owner'], ['open', 'sub_modstatus_owner']]);
    const members = ok(await call(svc, 'getmembers', { group_name: 'demo', limit: 100 }, { auth: asAlice })).data;
    const standing = Object.fromEntries(members.map((m: { email: string; mod_status: string }) => [m.email, m.mod_status]));
    expect(standing).toMatchObject({
      'alice@example.com': 'sub_modstatus_owner', 'mo@example.com': 'sub_modstatus_moderator', 'bob@example.com': 'sub_modstatus_none',
    });
  });

  it('--json prints the subscriptions as sent', async () => {
    const subs = JSON.parse(succeeded(await runCli(['groups', '--json'], envFor(svc, 'mo'))));
    expect(subs).toEqual([expect.objectContaining({ object: 'subscription', group_name: 'demo', group_id: expect.anything() })]);
    // The raw JSON keeps the id's every digit (a number too big for a double prints as such).
    expect(succeeded(await runCli(['groups', '--json'], envFor(svc, 'mo')))).toContain(`"group_id": ${demoId}`);
  });
});

describe('groupwire api --group', () => {
  it('takes the group by name, in any case, or by id, and sends its id', async () => {
    for (const group of ['demo', 'DEMO', demoId]) {
      const out = succeeded(await runCli(['api', 'getmessage', '--group', group, '--msg_num', '1'], envFor(svc, 'bob')));
      expect(JSON.parse(out), group).toMatchObject({ object: 'message', msg_num: 1 });
      // Read from the text: the id is above 2^53, JSON.parse would round it.
      expect(out).toContain(`"group_id": ${demoId},`);
    }
  });

  it('sends a group the caller is not in by name, and says when there is none', async () => {
    const open = JSON.parse(succeeded(await runCli(['api', 'getgroup', '--group', 'open'], envFor(svc, 'bob'))));
    expect(open).toMatchObject({ object: 'group', name: 'open' });
    const missing = await runCli(['api', 'getgroup', '--group', 'nosuch'], envFor(svc, 'bob'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('group "nosuch" was not found (group_not_found: invalid group_name)');
  });

  it('is a usage mistake for an operation without a group, or together with --group_name', async () => {
    const none = await runCli(['api', 'getsubs', '--group', 'demo'], envFor(svc, 'bob'));
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('getsubs takes no group (--group)');
    const both = await runCli(['api', 'getgroup', '--group', 'demo', '--group_name', 'demo'], envFor(svc, 'bob'));
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --group, or --group_id / --group_name, not both');
  });

  it('pages a member list to the end with --all', async () => {
    const members = JSON.parse(succeeded(await runCli(['api', 'getmembers', '--group', 'demo', '--all', '--limit', '2'], envFor(svc, 'mo'))));
    expect(members.map((m: { user_name: string }) => m.user_name).sort()).toEqual(['alice', 'bob', 'bot', 'carol', 'dave', 'mo']);
  });
});

describe('groupwire transcript export by chat id alone', () => {
  it("names the chat's group by its name, looked up in the caller's subscriptions", async () => {
    const chats = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: await loginAs(svc, 'bob') }));
    const general = chats.data.find((chat: { subject: string }) => chat.subject === 'general');
    const today = new Date().toISOString().slice(0, 10);
    const out = succeeded(await runCli([
      'transcript', 'export', '--source', 'service', '--chat', String(general.id), '--from', '2020-01-01', '--to', today, '--format', 'markdown',
    ], envFor(svc, 'bob')));
    // The heading names the group and the chat, not their ids.
    expect(out.split('\n')[0]).toMatch(/^# demo \/ general — /);
  });
});
