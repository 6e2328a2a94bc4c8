import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../src/service/errors.js';
import { call, DEMO, expectError, startTestService, type TestService } from './helpers/service.js';

/**
 * Issue 15 item 5: a login for an unknown e-mail address costs what a known address with a wrong
 * password costs, so addresses cannot be tested by timing. Checked two ways: structurally (each path
 * computes exactly one password hash, counted by the service), and by the medians of many interleaved
 * rounds in the process (no network noise), which must agree within a generous factor.
 */

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.close();
  svc = undefined;
});

describe('a refused login', () => {
  it('computes one password hash whether the account exists or not', async () => {
    svc = await startTestService();
    const auth = svc.service.core.auth;
    const cases: Array<Record<string, string>> = [
      { email: 'nobody@example.com', password: 'guess' },
      { email: DEMO.bob[0], password: 'guess' },
      { email: 'nobody@example.com' },
      { email: DEMO.bob[0] },
      { password: 'guess' },
      {},
    ];
    for (const params of cases) {
      const before = auth.passwordHashes;
      expectError(await call(svc, 'login', params, { method: 'POST', csrf: false }), 'unauthorized_error');
      expect(auth.passwordHashes - before, JSON.stringify(params)).toBe(1);
    }
    const before = auth.passwordHashes;
    await call(svc, 'login', { email: DEMO.bob[0], password: DEMO.bob[1] }, { method: 'POST', csrf: false });
    expect(auth.passwordHashes - before).toBe(1);
  });

  it('takes as long for an unknown e-mail address as for a wrong password (medians of interleaved rounds)', async () => {
    svc = await startTestService();
    const core = svc.service.core;
    // Many wrong passwords for one account would be throttled (and then cost nothing): not this test's subject.
    core.loginLimits.perAccount.config = null;
    const timeOf = (email: string): number => {
      const started = performance.now();
      try {
        core.auth.login(email, 'wrong-password', undefined, false);
      } catch (error) {
        if (!(error instanceof ApiError) || error.type !== 'unauthorized_error') throw error;
      }
      return performance.now() - started;
    };
    const unknown: number[] = [];
    const known: number[] = [];
    for (let round = 0; round < 61; round += 1) {
      unknown.push(timeOf(`nobody-${round}@example.com`));
      known.push(timeOf(DEMO.bob[0]));
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const ratio = median(unknown) / median(known);
    // Before the fix the unknown address cost about a hundredth of the known one.
    expect(ratio, `unknown ${median(unknown).toFixed(3)} ms, known ${median(known).toFixed(3)} ms`).toBeGreaterThan(1 / 3);
    expect(ratio).toBeLessThan(3);
  });
});
