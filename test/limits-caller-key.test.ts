import { request } from 'node:https';
import { afterEach, describe, expect, it } from 'vitest';
import { tryChatdata } from './helpers/chat-socket.js';
import { admin, call, DEMO, expectError, ok, parseJson, startTestService, type ApiResponse, type TestService } from './helpers/service.js';

/**
 * Issue 15 item 1: every limit is keyed on who the caller is (the user), or on the address for a
 * caller whose credentials do not authenticate; never on the raw text of a header. Login attempts are
 * limited per account and per address, whatever headers come with them.
 */

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.close();
  svc = undefined;
});

// No refill worth speaking of while a test runs: each caller has exactly `burst` calls.
const NO_REFILL = (burst: number) => ({ perSecond: 0.001, burst });

async function sessionOf(service: TestService, who: keyof typeof DEMO) {
  const made = ok(await admin(service, 'tokens', { user: DEMO[who][0] }));
  return { cookie: String(made.cookie), token: String(made.token), csrf: String(made.csrf) };
}

/** Every way of writing the same credentials that still authenticates as the same session. */
function sameCallerVariants(session: { cookie: string; token: string }): Array<Record<string, string>> {
  return [
    { cookie: `${session.cookie}; theme=dark` },
    { cookie: `a=1; ${session.cookie}; b=2` },
    { authorization: `Basic ${Buffer.from(`${session.token}:any-password-at-all`).toString('base64')}` },
    { authorization: `Basic ${Buffer.from(`${session.token}:another`).toString('base64')}` },
    { authorization: `Bearer ${session.token} trailing-text` },
    { authorization: `bearer   ${session.token}` },
  ];
}

function getchats(service: TestService, headers: Record<string, string>): Promise<ApiResponse> {
  return call(service, 'getchats', { group_name: 'demo' }, { headers });
}

/** A POST sent from another loopback address (Linux routes all of 127/8 to lo). */
function fromAddress(service: TestService, localAddress: string, path: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${service.baseUrl}${path}`, { method: 'POST', headers, localAddress, ca: service.service.ca, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, body: text ? parseJson(text) : undefined });
      });
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

function loginPath(email: string, password: string): string {
  return `/api/v1/login?${new URLSearchParams({ email, password }).toString()}`;
}

describe('the per-caller REST limit', () => {
  it('gives no fresh allowance for an extra cookie pair, a password after token:, or text after a Bearer token', async () => {
    svc = await startTestService({ rateLimit: NO_REFILL(3) });
    const bob = await sessionOf(svc, 'bob');
    for (let i = 0; i < 3; i += 1) expect((await getchats(svc, { cookie: bob.cookie })).status).toBe(200);
    expectError(await getchats(svc, { cookie: bob.cookie }), 'rate_limit');
    for (const headers of sameCallerVariants(bob)) expectError(await getchats(svc, headers), 'rate_limit');
    // A new session of the same user is the same caller too.
    const bobAgain = await sessionOf(svc, 'bob');
    expectError(await getchats(svc, { cookie: bobAgain.cookie }), 'rate_limit');
    // Another user has an allowance of their own.
    const carol = await sessionOf(svc, 'carol');
    expect((await getchats(svc, { cookie: carol.cookie })).status).toBe(200);
    // Each variant did authenticate as bob: the refusals above were bob's own limit.
    ok(await admin(svc, 'rate-limit', { api: 'off' }));
    for (const headers of sameCallerVariants(bob)) expect((await getchats(svc, headers)).status, JSON.stringify(headers)).toBe(200);
  });

  it('counts credentials that do not authenticate against the address', async () => {
    svc = await startTestService({ rateLimit: NO_REFILL(3) });
    for (let i = 0; i < 3; i += 1) expectError(await getchats(svc, {}), 'authentication');
    const junk: Array<Record<string, string>> = [
      { cookie: 'groupsio=junk-1' },
      { cookie: `groupsio=${'x'.repeat(2000)}; other=2` },
      { authorization: 'Bearer not-a-token' },
      { authorization: `Basic ${Buffer.from('nope:').toString('base64')}` },
      { authorization: 'Digest whatever' },
    ];
    for (const headers of junk) expectError(await getchats(svc, headers), 'rate_limit');
    // A caller who does authenticate, from the same address, is counted as themselves.
    const bob = await sessionOf(svc, 'bob');
    expect((await getchats(svc, { cookie: bob.cookie })).status).toBe(200);
  });

  it('counts an expired session against the address', async () => {
    svc = await startTestService({ rateLimit: NO_REFILL(2) });
    const bob = await sessionOf(svc, 'bob');
    ok(await admin(svc, 'faults/expire-sessions'));
    for (let i = 0; i < 2; i += 1) expectError(await getchats(svc, { cookie: bob.cookie }), 'expired');
    expectError(await getchats(svc, {}), 'rate_limit');
  });

  it('keys login on the address, whatever credentials come with it', async () => {
    svc = await startTestService({ rateLimit: NO_REFILL(3) });
    const bob = await sessionOf(svc, 'bob');
    const [email, password] = DEMO.alice;
    for (let i = 0; i < 3; i += 1) {
      const answer = await call(svc, 'login', { email, password }, { method: 'POST', csrf: false, headers: { cookie: `junk=${i}` } });
      expect(answer.status).toBe(200);
    }
    const variants: Array<Record<string, string>> = [{ cookie: 'junk=4' }, { cookie: bob.cookie }, { authorization: `Bearer ${bob.token}` }];
    for (const headers of variants) {
      expectError(await call(svc, 'login', { email, password }, { method: 'POST', csrf: false, headers }), 'rate_limit');
    }
  });
});

describe('the chat socket upgrade limit', () => {
  it('is keyed on the user too: varied credentials get no fresh allowance', async () => {
    svc = await startTestService({ upgradeRateLimit: NO_REFILL(2) });
    const bob = await sessionOf(svc, 'bob');
    const upgrade = async (headers: Record<string, string>, csrf = bob.csrf) => {
      const outcome = await tryChatdata(svc!, { chatsub_id: '1', csrf }, null, { headers });
      if (outcome.kind !== 'refused') throw new Error(`expected a refused upgrade, got ${outcome.kind}`);
      return outcome;
    };
    // No chat_sub of bob's is named: refused after the limit was taken, which is all this test needs.
    for (let i = 0; i < 2; i += 1) expect((await upgrade({ cookie: bob.cookie })).body.type).toBe('bad_request');
    for (const headers of [{ cookie: bob.cookie } as Record<string, string>, ...sameCallerVariants(bob)]) {
      const refused = await upgrade(headers);
      expect({ status: refused.status, type: refused.body?.type }, JSON.stringify(headers)).toEqual({ status: 429, type: 'rate_limit' });
    }
    const carol = await sessionOf(svc, 'carol');
    expect((await upgrade({ cookie: carol.cookie }, carol.csrf)).body.type).toBe('bad_request');
  });
});

describe('login attempts', () => {
  it('are limited per account: wrong passwords from any address and with any headers end in rate_limit', async () => {
    svc = await startTestService();
    // The documented default per account (10 failures at once); no refill while the test runs.
    svc.service.core.loginLimits.perAccount.config = NO_REFILL(10);
    const [email, password] = DEMO.bob;
    const refusedTypes: string[] = [];
    for (let i = 0; i < 12; i += 1) {
      const from = `127.0.0.${2 + (i % 5)}`;
      const answer = await fromAddress(svc, from, loginPath(i % 2 ? email.toUpperCase() : ` ${email}`, `wrong-${i}`), { cookie: `junk=${i}` });
      refusedTypes.push(answer.body.type);
    }
    expect(refusedTypes.slice(0, 10)).toEqual(Array(10).fill('unauthorized_error'));
    expect(refusedTypes.slice(10)).toEqual(['rate_limit', 'rate_limit']);
    // While the account is throttled even the right password waits; another account is not affected.
    const right = await fromAddress(svc, '127.0.0.9', loginPath(email, password));
    expectError(right, 'rate_limit');
    expect(Number(right.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await fromAddress(svc, '127.0.0.9', loginPath(...DEMO.carol))).status).toBe(200);
  });

  it('are limited per address: attempts at ever-new accounts, with ever-new headers, end in rate_limit', async () => {
    svc = await startTestService();
    svc.service.core.loginLimits.perAddress.config = NO_REFILL(20);
    const statuses: number[] = [];
    for (let i = 0; i < 25; i += 1) {
      const answer = await fromAddress(svc, '127.0.0.20', loginPath(`nobody-${i}@example.com`, 'guess'), { cookie: `groupsio=junk-${i}` });
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([...Array(20).fill(400), ...Array(5).fill(429)]);
    expectError(await fromAddress(svc, '127.0.0.20', loginPath(...DEMO.carol)), 'rate_limit');
    // Another address is not affected.
    expect((await fromAddress(svc, '127.0.0.21', loginPath(...DEMO.carol))).status).toBe(200);
  });
});
