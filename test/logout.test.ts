import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openChat } from './helpers/chat-socket.js';
import { Clients } from './helpers/client.js';
import { envFor, runCli } from './helpers/cli.js';
import { admin, call, DEMO, expectError, loginAs, ok, startTestService, type Session, type TestService } from './helpers/service.js';

/**
 * Issue 15 item 20: `logout`, our extension (docs/protocol.md "Authentication"), ends the session: its
 * cookie, its API token and its csrf stop working, and its chat sockets close. The client offers
 * logout(), the CLI `groupwire logout` (for a token: the CLI keeps no login between commands).
 */

let svc: TestService;
const clients = new Clients(() => svc);
beforeAll(async () => {
  svc = await startTestService();
});
afterEach(async () => clients.closeAll());
afterAll(async () => svc.close());

const getchats = (auth: Session | { bearer: string } | { basic: string }) => call(svc, 'getchats', { group_name: 'demo' }, { auth });

describe('the logout operation', () => {
  it('ends the cookie, the token and the csrf of the session; a new login works', async () => {
    const bob = await loginAs(svc, 'bob', { token: 'true' });
    expect(ok(await getchats(bob)).object).toBe('list');
    expect(ok(await getchats({ bearer: bob.token! })).object).toBe('list');
    const answer = await call(svc, 'logout', {}, { method: 'POST', auth: bob });
    expect(answer.status).toBe(200);
    // A browser is told to drop the session's cookies.
    const cookies = [answer.headers['set-cookie']].flat().join('\n');
    expect(cookies).toMatch(/groupsio=; Path=\/; Max-Age=0/);
    expect(cookies).toMatch(/haslogin=; Path=\/; Max-Age=0/);
    expectError(await getchats(bob), 'authentication');
    expectError(await getchats({ bearer: bob.token! }), 'authentication');
    expectError(await getchats({ basic: bob.token! }), 'authentication');
    // The csrf went with it: nothing of the old session does anything any more.
    expectError(await call(svc, 'newchat', { group_name: 'demo', subject: 'x', desc: '' }, { method: 'POST', auth: bob }), 'authentication');
    // Logging out again is not logged in.
    expectError(await call(svc, 'logout', {}, { method: 'POST', auth: bob }), 'authentication');
    const again = await loginAs(svc, 'bob');
    expect(ok(await getchats(again)).object).toBe('list');
  });

  it('ends only that session: the same user\'s other sessions go on', async () => {
    const first = await loginAs(svc, 'carol');
    const second = await loginAs(svc, 'carol');
    ok(await call(svc, 'logout', {}, { method: 'POST', auth: first }));
    expectError(await getchats(first), 'authentication');
    expect(ok(await getchats(second)).object).toBe('list');
  });

  it('through the token ends the cookie of the same login too', async () => {
    const mo = await loginAs(svc, 'mo', { token: 'true' });
    ok(await call(svc, 'logout', {}, { method: 'POST', auth: { bearer: mo.token! }, csrf: mo.csrf }));
    expectError(await getchats(mo), 'authentication');
  });

  it('needs the csrf, like every POST; without it the session stays', async () => {
    const bob = await loginAs(svc, 'bob');
    expectError(await call(svc, 'logout', {}, { method: 'POST', auth: bob, csrf: false }), 'bad_csrf');
    expectError(await call(svc, 'logout', {}, { method: 'GET', auth: bob }), 'bad_request');
    expect(ok(await getchats(bob)).object).toBe('list');
  });

  it('closes the chat sockets of the session, not those of the user\'s other sessions', async () => {
    const ending = await loginAs(svc, 'bob');
    const staying = await loginAs(svc, 'bob');
    // Bob is in the demo's chat "general" from the start.
    const general = ok(await getchats(ending)).data.find((chat: { subject: string }) => chat.subject === 'general');
    const subId = String(general.chat_sub.id);
    const closing = await openChat(svc, ending, subId, { no_history: 'true' });
    const open = await openChat(svc, staying, subId, { no_history: 'true' });
    try {
      ok(await call(svc, 'logout', {}, { method: 'POST', auth: ending }));
      const closed = await closing.waitForClose();
      expect(closed).toEqual({ code: 4004, reason: 'session ended' });
      expect(open.isOpen).toBe(true);
    } finally {
      closing.close();
      open.close();
    }
  });
});

describe('the client and the CLI', () => {
  it('client.logout() ends the session it logged in; a later call logs in afresh', async () => {
    const client = clients.make('alice');
    await client.getChats({ group_name: 'demo' });
    const oldCookie = client.authHeaders().cookie!;
    await client.logout();
    expect(client.session.isLoggedIn).toBe(false);
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { headers: { cookie: oldCookie } }), 'authentication');
    // E-mail and password are still there: the next call opens a new session.
    expect((await client.getChats({ group_name: 'demo' })).object).toBe('list');
    expect(client.authHeaders().cookie).not.toBe(oldCookie);
  });

  it('client.logout() with an API token ends the token; logging out twice is no error', async () => {
    const { client, token } = await clients.withToken('carol', 'bearer');
    await client.getChats({ group_name: 'demo' });
    await client.logout();
    expectError(await getchats({ bearer: token }), 'authentication');
    await client.logout();
  });

  it('groupwire logout ends the session of GROUPWIRE_TOKEN', async () => {
    const made = ok(await admin(svc, 'tokens', { user: DEMO.bob[0] }));
    const token = String(made.token);
    const result = await runCli(['logout'], envFor(svc, { token }));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('logged out: the token no longer works\n');
    expect(result.stdout + result.stderr).not.toContain(token);
    expectError(await getchats({ bearer: token }), 'authentication');
  });

  it('groupwire logout with an e-mail address and password says there is no saved login to end', async () => {
    const result = await runCli(['logout'], envFor(svc, 'bob'));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('groupwire keeps no login between commands');
    expect(result.stderr).not.toContain(DEMO.bob[1]);
  });
});
