import { afterEach, describe, expect, it } from 'vitest';
import { MAX_SESSIONS_PER_USER } from '../src/service/auth.js';
import { Clock } from '../src/service/clock.js';
import { accountKey, LoginLimits } from '../src/service/login-limits.js';
import { RateLimiter } from '../src/service/rate-limit.js';
import { tryChatdata } from './helpers/chat-socket.js';
import { admin, call, DEMO, expectError, loginAs, ok, startTestService, type TestService } from './helpers/service.js';

/**
 * Issue 15 item 2: no table an unauthenticated caller can grow is unbounded. Requests with ever-new
 * long cookies grew the limiter by one entry each (the raw header was the key); now such callers are
 * their address, every table has a bound, and idle entries are dropped.
 */

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.close();
  svc = undefined;
});

const longCookie = (i: number) => `groupsio=${String(i).padStart(6, '0')}${'c'.repeat(15 * 1024)}`;

function totalKeyLength(limiter: RateLimiter): number {
  let total = 0;
  for (const key of limiter.keys()) total += key.length;
  return total;
}

describe('requests with ever-new credentials that do not authenticate', () => {
  it('leave one short entry in the REST limiter, not one per cookie', async () => {
    svc = await startTestService({ rateLimit: { perSecond: 1000, burst: 5000 } });
    for (let i = 0; i < 300; i += 1) {
      expectError(await call(svc, 'getchats', { group_name: 'demo' }, { headers: { cookie: longCookie(i) } }), 'authentication');
    }
    const limiter = svc.service.core.limiter;
    expect(limiter.size).toBe(1);
    expect(totalKeyLength(limiter)).toBeLessThan(100);
  });

  it('leave one short entry in the upgrade limiter, not one per cookie', async () => {
    svc = await startTestService({ upgradeRateLimit: { perSecond: 1000, burst: 5000 } });
    for (let i = 0; i < 40; i += 1) {
      const outcome = await tryChatdata(svc, { chatsub_id: '1', csrf: '1' }, null, { headers: { cookie: longCookie(i) } });
      expect(outcome.kind === 'refused' && outcome.body?.type).toBe('authentication');
    }
    const limiter = svc.service.core.upgradeLimiter;
    expect(limiter.size).toBe(1);
    expect(totalKeyLength(limiter)).toBeLessThan(100);
  });

  it('logins at ever-new, ever-longer e-mail addresses keep short keys in the per-account table', async () => {
    svc = await startTestService();
    for (let i = 0; i < 50; i += 1) {
      const email = `${i}-${'e'.repeat(10 * 1024)}@example.com`;
      expectError(await call(svc, 'login', { email, password: 'guess' }, { method: 'POST', csrf: false }), 'unauthorized_error');
    }
    const perAccount = svc.service.core.loginLimits.perAccount;
    expect(perAccount.size).toBe(50);
    expect(totalKeyLength(perAccount)).toBeLessThan(50 * 64);
  });
});

describe('the limiter tables', () => {
  it('never hold more than their bound, whatever number of keys comes', () => {
    const limiter = new RateLimiter(new Clock(), { perSecond: 1, burst: 5 }, 100);
    for (let i = 0; i < 1000; i += 1) limiter.take(`address 10.0.${Math.floor(i / 256)}.${i % 256}`);
    expect(limiter.size).toBe(100);
    // The ones kept are the most recently used.
    expect([...limiter.keys()].at(-1)).toBe('address 10.0.3.231');
    const login = new LoginLimits(new Clock(), 20);
    for (let i = 0; i < 200; i += 1) {
      login.perAccount.take(accountKey(`user${i}@example.com`));
      login.perAddress.take(`address 10.1.0.${i}`);
    }
    expect([login.perAccount.size, login.perAddress.size]).toEqual([20, 20]);
  });

  it('drop entries once they are idle (full again), and the caller is not favoured by it', () => {
    const clock = new Clock();
    const limiter = new RateLimiter(clock, { perSecond: 1, burst: 3 });
    for (let i = 0; i < 50; i += 1) limiter.take(`address 10.0.0.${i}`);
    for (let i = 0; i < 3; i += 1) limiter.take('user 7');
    expect(limiter.take('user 7')).toBeGreaterThan(0);
    expect(limiter.size).toBe(51);
    // After burst / perSecond seconds every bucket is full again, the same as no bucket at all.
    clock.advance(3_001);
    for (let i = 0; i < 60; i += 1) limiter.take('user 8');
    expect(limiter.size).toBe(1);
    expect([...limiter.keys()]).toEqual(['user 8']);
    // A bucket still filling is kept: user 8 is refused until it refills.
    expect(limiter.take('user 8')).toBeGreaterThan(0);
  });
});

describe('the session table (logins with the demo\'s public passwords are open to anyone)', () => {
  it('holds at most MAX_SESSIONS_PER_USER live sessions of one user: a login past it ends the oldest', async () => {
    svc = await startTestService();
    const core = svc.service.core;
    const bob = core.store.usersByEmail.get(DEMO.bob[0])!;
    const carolSession = await loginAs(svc, 'carol');
    const opened = Array.from({ length: MAX_SESSIONS_PER_USER + 5 }, () => core.auth.openSession(bob, true));
    const bobs = [...core.store.sessions.values()].filter((session) => session.userId === bob.id);
    expect(bobs.length).toBe(MAX_SESSIONS_PER_USER);
    const getchats = (token: string) => call(svc!, 'getchats', { group_name: 'demo' }, { auth: { bearer: token } });
    for (const ended of opened.slice(0, 5)) expectError(await getchats(ended.token!), 'authentication');
    expect((await getchats(opened[5]!.token!)).status).toBe(200);
    expect((await getchats(opened.at(-1)!.token!)).status).toBe(200);
    // Another user's session is not touched.
    expect((await call(svc, 'getchats', { group_name: 'demo' }, { auth: carolSession })).status).toBe(200);
  });

  it('forgets sessions long past their lifetime at the next login; until then they answer expired', async () => {
    svc = await startTestService();
    const old = await loginAs(svc, 'bob');
    ok(await admin(svc, 'clock/advance', { seconds: 15 * 24 * 3600 }));
    await loginAs(svc, 'carol');
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: old }), 'expired');
    ok(await admin(svc, 'clock/advance', { seconds: 14 * 24 * 3600 }));
    await loginAs(svc, 'carol');
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: old }), 'authentication');
    expect([...svc.service.core.store.sessions.values()].some((session) => `groupsio=${session.cookie}` === old.cookie.split('; ')[0])).toBe(false);
  });
});
