import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GroupsClient } from '../src/api/index.js';
import { captureLog, Clients, recordSends } from './helpers/client.js';
import { admin, startTestService, type TestService } from './helpers/service.js';

/** Counts the logins a client really performs (the shared login promise hides the joiners). */
function spyLogins(client: GroupsClient) {
  return vi.spyOn(client.session as unknown as { doLogin(options: { token?: boolean }): Promise<void> }, 'doLogin');
}

const newPost = (subject: string) => ({ group_name: 'demo', draft_type: 'draft_type_post', subject, body: 'b' }) as const;

describe('client addresses and authentication', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
  });

  it('normalizes a base URL with /api/v1/ and takes an enterpriseUrl the same way', async () => {
    const suffixed = clients.make('bob', { baseUrl: `${svc.baseUrl}/api/v1/` });
    expect(suffixed.baseUrl).toBe(svc.baseUrl);
    expect((await suffixed.getChats({ group_name: 'demo' })).object).toBe('list');

    const enterprise = clients.make('bob', { baseUrl: undefined, enterpriseUrl: `${svc.baseUrl}/` });
    expect(enterprise.baseUrl).toBe(svc.baseUrl);
    expect((await enterprise.getChats({ group_name: 'demo' })).object).toBe('list');

    expect(() => new GroupsClient({ ca: svc.service.ca })).toThrow(/baseUrl/);
    expect(() => new GroupsClient({ enterpriseUrl: 'http://127.0.0.1:1' })).toThrow(TypeError);
  });

  it('logs in lazily on the first call, once, also for concurrent first calls', async () => {
    const bob = clients.make('bob');
    const logins = spyLogins(bob);
    const sent = recordSends(bob);
    expect(bob.session.isLoggedIn).toBe(false);
    expect(bob.authHeaders()).toEqual({});
    expect(logins).not.toHaveBeenCalled();
    await Promise.all([bob.getChats({ group_name: 'demo' }), bob.getDrafts(), bob.getTopics()]);
    expect(logins).toHaveBeenCalledTimes(1);
    expect(sent[0]).toBe('login');
    expect(bob.authHeaders().cookie).toMatch(/groupsio=/);
    await bob.getChats({ group_name: 'demo' });
    expect(logins).toHaveBeenCalledTimes(1);
    expect(sent.filter((operation) => operation === 'login')).toHaveLength(1);
  });

  it('authenticates with an admin-made token as Basic (the default) and fetches the csrf for POSTs', async () => {
    const { client, token, csrf } = await clients.withToken('bob');
    expect(client.authHeaders()).toEqual({ authorization: `Basic ${Buffer.from(`${token}:`).toString('base64')}` });
    const sent = recordSends(client);
    const chats = await client.getChats({ group_name: 'demo' });
    expect(chats.data.length).toBeGreaterThan(0);
    expect(client.session.csrf).toBeUndefined();
    const draft = await client.newDraft(newPost('token post'));
    expect(draft.subject).toBe('token post');
    expect(client.session.csrf).toBe(csrf);
    expect(sent).toEqual(['getchats', 'getdrafts', 'newdraft']);
    await client.updateDraft({ draft_id: draft.id, body: 'again' });
    expect(sent.slice(3)).toEqual(['updatedraft']); // the csrf is kept
    await expect(client.login()).rejects.toMatchObject({ name: 'AuthenticationError', operation: 'login' });
  });

  it('login({ token: true }) gives a token that works as Bearer', async () => {
    const carol = clients.make('carol');
    const user = await carol.login({ token: true });
    expect(user.email).toBe('carol@example.com');
    expect(carol.session.token).toMatch(/^[0-9a-f]{64}$/);
    const bearer = clients.make({ token: carol.session.token!, scheme: 'bearer' });
    expect(bearer.authHeaders()).toEqual({ authorization: `Bearer ${carol.session.token}` });
    const chats = await bearer.getChats({ group_name: 'demo' });
    expect(chats.data.find((chat) => chat.subject === 'random')?.chat_sub).not.toBeNull();
    // A token made by a login shares its session's csrf.
    const draft = await bearer.newDraft(newPost('bearer post'));
    expect(draft.subject).toBe('bearer post');
    expect(bearer.session.csrf).toBe(carol.session.csrf);
  });

  it('logs in again once after the session expired, and the call succeeds', async () => {
    const log = captureLog();
    const bob = clients.make('bob', { logger: log.logger });
    await bob.login();
    const firstCsrf = bob.session.csrf;
    const logins = spyLogins(bob);
    await admin(svc, 'faults/expire-sessions');
    const chats = await bob.getChats({ group_name: 'demo' });
    expect(chats.object).toBe('list');
    expect(logins).toHaveBeenCalledTimes(1);
    expect(log.withMessage('logging in again')).toMatchObject([{ level: 20, operation: 'getchats', reason: expect.stringMatching(/expired/) }]);
    expect(bob.session.csrf).not.toBe(firstCsrf);

    // A POST after a new expiry goes with the new session's csrf.
    await admin(svc, 'faults/expire-sessions');
    const draft = await bob.newDraft(newPost('after expiry'));
    expect(draft.subject).toBe('after expiry');
    expect(logins).toHaveBeenCalledTimes(2);
  });

  it('ten concurrent calls after expiry cause one login', async () => {
    const log = captureLog();
    const alice = clients.make('alice', { logger: log.logger });
    await alice.login();
    const logins = spyLogins(alice);
    await admin(svc, 'faults/expire-sessions');
    const results = await Promise.all(Array.from({ length: 10 }, (_, index) =>
      index % 2 === 0 ? alice.getChats({ group_name: 'demo' }) : alice.newDraft(newPost(`concurrent ${index}`))));
    expect(results).toHaveLength(10);
    expect(logins).toHaveBeenCalledTimes(1);
    expect(log.withMessage('logging in again').length).toBeGreaterThanOrEqual(1);
    expect(log.withMessage('logging in again').length).toBeLessThanOrEqual(10);
  });

  it('asks for a fresh two-factor code at every login', async () => {
    const secret = 'KRSXG5CTMVRXEZLU';
    await admin(svc, 'users', { email: 'otp@example.com', password: 'otp-pass', full_name: 'Otp', two_factor_secret: secret });
    await admin(svc, 'subscriptions', { group: 'demo', user: 'otp@example.com' });
    const { totpCode } = await import('../src/service/totp.js');
    const codes = vi.fn(() => totpCode(secret, Date.now()));
    const client = clients.make({ email: 'otp@example.com', password: 'otp-pass', twofactor: codes });
    await client.getDrafts();
    await admin(svc, 'faults/expire-sessions');
    await client.getDrafts();
    expect(codes).toHaveBeenCalledTimes(2);
  });

  // Concurrent POSTs of a token client without a csrf share one fetch of it.
  it('concurrent POSTs of a token client fetch the csrf once', async () => {
    const { client } = await clients.withToken('mo');
    const sent = recordSends(client);
    await Promise.all(Array.from({ length: 5 }, (_, index) => client.newDraft(newPost(`csrf ${index}`))));
    expect(sent.filter((operation) => operation === 'getdrafts')).toHaveLength(1);
  });
});
