import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../src/service/totp.js';
import { admin, call, expectError, login, loginAs, startTestService, type TestService } from './helpers/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc.close());

describe('login', () => {
  it('answers the user with a csrf token as a string and sets the session cookie', async () => {
    const response = await call(svc, 'login', { email: 'bob@example.com', password: 'bob-demo' }, { method: 'POST', csrf: false });
    expect(response.status).toBe(200);
    expect(response.body.user).toMatchObject({ object: 'user', email: 'bob@example.com', full_name: 'Bob Member', user_name: 'bob' });
    expect(typeof response.body.user.csrf_token).toBe('string');
    expect(response.body.user.csrf_token).toMatch(/^\d{15,}$/);
    expect(response.body.token).toBeUndefined();
    const cookies = ([] as string[]).concat(response.headers['set-cookie'] ?? []);
    expect(cookies.some((c) => /^groupsio=[^;]+;.*Secure.*HttpOnly/.test(c))).toBe(true);
    expect(response.body.user.subscriptions[0]).toMatchObject({ group_name: 'demo', perms: { object: 'perms', chat_visible: true } });
  });

  it('gives a 64-character token when token=true', async () => {
    const session = await loginAs(svc, 'bob', { token: 'true' });
    expect(session.token).toMatch(/^[0-9a-f]{64}$/);
  });

  it('accepts the fields in the query string and by GET, as the real service does', async () => {
    const byGet = await call(svc, 'login', { email: 'carol@example.com', password: 'carol-demo' }, { method: 'GET' });
    expect(byGet.status).toBe(200);
    const byQuery = await call(svc, 'login', {}, {
      method: 'POST', csrf: false, body: '', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectError(byQuery, 'unauthorized_error');
  });

  it('refuses a wrong password or unknown address with unauthorized_error', async () => {
    expectError(await call(svc, 'login', { email: 'bob@example.com', password: 'nope' }, { method: 'POST' }), 'unauthorized_error');
    expectError(await call(svc, 'login', { email: 'nobody@example.com', password: 'x' }, { method: 'POST' }), 'unauthorized_error');
    expectError(await call(svc, 'login', { email: 'bob@example.com' }, { method: 'POST' }), 'unauthorized_error');
  });

  it('asks for a two-factor code when the account has one, and checks it', async () => {
    const secret = 'JBSWY3DPEHPK3PXP';
    expect((await admin(svc, 'users', { email: 'tf@example.com', password: 'tf-pass', full_name: 'Two Factor', two_factor_secret: secret })).status)
      .toBe(200);
    expectError(await call(svc, 'login', { email: 'tf@example.com', password: 'tf-pass' }, { method: 'POST' }),
      'unauthorized_error', 'two_factor_required');
    expectError(await call(svc, 'login', { email: 'tf@example.com', password: 'tf-pass', twofactor: '000000' }, { method: 'POST' }),
      'unauthorized_error', 'invalid twofactor');
    const code = totpCode(secret, Date.now() + svc.service.core.clock.offset);
    const session = await login(svc, 'tf@example.com', 'tf-pass', { twofactor: code });
    expect(session.user.two_factor_enabled).toBe(true);
  });

  it('answers facebooklogin and googlelogin with a clear error', async () => {
    expectError(await call(svc, 'facebooklogin', {}, { method: 'POST' }), 'bad_request',
      'facebooklogin is not supported by the local service; use login');
    expectError(await call(svc, 'googlelogin', {}), 'bad_request', 'googlelogin is not supported by the local service; use login');
  });
});

describe('authentication methods', () => {
  it('accepts the cookie, Basic with the token as user name, and Bearer', async () => {
    const session = await loginAs(svc, 'bob', { token: 'true' });
    for (const auth of [session, { basic: session.token! }, { bearer: session.token! }]) {
      const response = await call(svc, 'getchats', { group_name: 'demo' }, { auth });
      expect(response.status).toBe(200);
      expect(response.body.object).toBe('list');
    }
  });

  it('refuses a call without credentials, or with unknown ones, as authentication', async () => {
    expectError(await call(svc, 'getchats', { group_name: 'demo' }), 'authentication');
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: { bearer: 'f'.repeat(64) } }), 'authentication');
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: { basic: 'nope' } }), 'authentication');
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: { cookie: 'groupsio=forged', csrf: '1', user: {} } }), 'authentication');
  });

  it('answers expired once sessions and tokens are too old', async () => {
    const session = await loginAs(svc, 'carol', { token: 'true' });
    expect((await admin(svc, 'faults/expire-sessions')).body.expired).toBeGreaterThan(0);
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: session }), 'expired');
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: { bearer: session.token! } }), 'expired');
    const again = await loginAs(svc, 'carol');
    expect((await call(svc, 'getchats', { group_name: 'demo' }, { auth: again })).status).toBe(200);
  });

  it('expires sessions after their lifetime on the service clock', async () => {
    const session = await loginAs(svc, 'bob');
    await admin(svc, 'clock/advance', { seconds: 15 * 24 * 3600 });
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: session }), 'expired');
  });

  it('serves HTTPS only: plain HTTP to the port fails', async () => {
    const plain = svc.baseUrl.replace('https://', 'http://');
    await expect(request(`${plain}/api/v1/login`, { method: 'POST' })).rejects.toThrow();
  });
});

describe('csrf', () => {
  it('is required on every state-changing POST: missing or wrong is bad_csrf', async () => {
    const session = await loginAs(svc, 'mo');
    for (const [op, params] of [
      ['newchat', { group_name: 'demo', subject: 's', desc: 'd' }],
      ['joinchat', { chat_id: '1' }],
      ['newdraft', { group_name: 'demo', draft_type: 'draft_type_post' }],
    ] as const) {
      expectError(await call(svc, op, params, { method: 'POST', auth: session, csrf: false }), 'bad_csrf', 'csrf missing');
      expectError(await call(svc, op, params, { method: 'POST', auth: session, csrf: '12345' }), 'bad_csrf', 'csrf incorrect');
    }
  });

  it('is checked with token auth too, against the csrf of that login', async () => {
    const session = await loginAs(svc, 'mo', { token: 'true' });
    const params = { group_name: 'demo', subject: 'token-made', desc: '' };
    expectError(await call(svc, 'newchat', params, { method: 'POST', auth: { bearer: session.token! } }), 'bad_csrf');
    const made = await call(svc, 'newchat', { ...params, csrf: session.csrf }, { method: 'POST', auth: { bearer: session.token! } });
    expect(made.status).toBe(200);
    expect(made.body.object).toBe('chat');
  });
});

describe('extended results', () => {
  it('wraps the result as [result, user] for extended=true and extended=1', async () => {
    const session = await loginAs(svc, 'bob');
    for (const extended of ['true', '1']) {
      const response = await call(svc, 'getchats', { group_name: 'demo', extended }, { auth: session });
      expect(Array.isArray(response.body)).toBe(true);
      expect(response.body).toHaveLength(2);
      expect(response.body[0].object).toBe('list');
      expect(response.body[1]).toMatchObject({ object: 'user', email: 'bob@example.com', csrf_token: session.csrf });
    }
    const plain = await call(svc, 'getchats', { group_name: 'demo', extended: 'false' }, { auth: session });
    expect(plain.body.object).toBe('list');
  });

  it('wraps an operation with an empty answer as a success object', async () => {
    const session = await loginAs(svc, 'carol');
    const chats = await call(svc, 'getchats', { group_name: 'demo' }, { auth: session });
    const random = chats.body.data.find((c: { subject: string }) => c.subject === 'random');
    const left = await call(svc, 'leavechat', { chatsub_id: random.chat_sub.id, extended: 'true' }, { method: 'POST', auth: session });
    expect(left.body[0]).toEqual({ object: 'success', extra: '' });
    expect(left.body[1].object).toBe('user');
  });
});

describe('requests that are not operations', () => {
  it('answers an unknown operation, a wrong method and a malformed body with the error object', async () => {
    const session = await loginAs(svc, 'bob');
    const unknown = await call(svc, 'nosuchop', {}, { auth: session });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ object: 'error', type: 'bad_request' });
    expectError(await call(svc, 'newchat', { group_name: 'demo' }, { auth: session }), 'bad_request', 'newchat takes POST, not GET');
    const garbage = await call(svc, 'newchat', {}, {
      method: 'POST', auth: session, body: '{not json', headers: { 'content-type': 'application/json' },
    });
    expect(garbage.body).toMatchObject({ object: 'error', type: 'bad_request' });
  });

  it('ignores unknown parameters', async () => {
    const session = await loginAs(svc, 'bob');
    const response = await call(svc, 'getchats', { group_name: 'demo', future_param: 'x' }, { auth: session });
    expect(response.status).toBe(200);
  });
});
