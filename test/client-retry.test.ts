import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  ArchiveDownloadLimitError, BadCsrfError, BadRequestError, ExpiredError, RateLimitError, ResponseFormatError, ServerError,
  TransportError, UnauthorizedError,
} from '../src/api/index.js';
import { backoffDelay, isRetryable } from '../src/api/retry.js';
import { captureLog, Clients, faultsApplied } from './helpers/client.js';
import { admin, startTestService, type TestService } from './helpers/service.js';

const details = (type: string, retryAfterSeconds?: number) => ({ type, extra: '', status: 400, operation: 'op', retryAfterSeconds });

describe('retries against the service', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterEach(async () => {
    await admin(svc, 'faults/clear');
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
  });

  /** A logged-in client whose debug log is captured. */
  async function loggedClient(who: 'bob' | 'alice', retry = {}) {
    const log = captureLog();
    const client = clients.make(who, { logger: log.logger, retry });
    await client.login();
    return { client, log };
  }

  it('retries injected 429s (GET and POST) until the call succeeds, logging each retry at debug', async () => {
    const { client, log } = await loggedClient('bob', { maxDelayMs: 20 });
    const before = await faultsApplied(svc);
    await admin(svc, 'faults/errors', { count: 2, type: 'rate_limit', retry_after: 0, operations: ['getchats'] });
    const chats = await client.getChats({ group_name: 'demo' });
    expect(chats.object).toBe('list');
    expect(log.retries('getchats')).toMatchObject([
      { level: 20, operation: 'getchats', attempt: 1, reason: expect.stringContaining('rate_limit') },
      { level: 20, operation: 'getchats', attempt: 2, reason: expect.stringContaining('rate_limit') },
    ]);

    // A 429 is refused before any work, so a POST is sent again too; the draft exists once.
    await admin(svc, 'faults/errors', { count: 1, type: 'rate_limit', retry_after: 0, operations: ['newdraft'] });
    const draft = await client.newDraft({ group_name: 'demo', draft_type: 'draft_type_post', subject: 'retried', body: 'b' });
    expect(draft.subject).toBe('retried');
    expect(log.retries('newdraft')).toHaveLength(1);
    expect((await client.getDrafts()).data.filter((d) => d.subject === 'retried')).toHaveLength(1);
    expect((await faultsApplied(svc)) - before).toBe(3);
  });

  it('honours Retry-After: the logged wait is at least its seconds', async () => {
    const { client, log } = await loggedClient('bob');
    await admin(svc, 'faults/errors', { count: 1, type: 'rate_limit', retry_after: 1, operations: ['gettopics'] });
    await client.getTopics({ group_name: 'demo' });
    const [retry] = log.retries('gettopics');
    expect(retry).toBeDefined();
    expect(retry!.delayMs).toBeGreaterThanOrEqual(1000);
    expect(retry!.delayMs).toBeLessThanOrEqual(2000);
  });

  it('retries server errors on a GET, not on a POST', async () => {
    const { client, log } = await loggedClient('alice');
    await admin(svc, 'faults/errors', { count: 2, type: 'server', status: 502, operations: ['getactivitylog'] });
    const entries = await client.getActivityLog({ group_name: 'demo', limit: 1 });
    expect(entries.data).toHaveLength(1);
    expect(log.retries('getactivitylog').map((line) => line.reason)).toEqual([
      expect.stringContaining('server'), expect.stringContaining('server'),
    ]);

    const before = await faultsApplied(svc);
    await admin(svc, 'faults/errors', { count: 2, type: 'server', operations: ['updatechat'] });
    const chats = await client.getChats({ group_name: 'demo' });
    const random = chats.data.find((chat) => chat.subject === 'random')!;
    await expect(client.updateChat({ chat_id: random.id, desc: 'changed' })).rejects.toBeInstanceOf(ServerError);
    expect((await faultsApplied(svc)) - before).toBe(1);
    expect(log.retries('updatechat')).toEqual([]);
  });

  it('bounds retries by count', async () => {
    const { client, log } = await loggedClient('bob', { retries: 3, maxDelayMs: 10 });
    const before = await faultsApplied(svc);
    await admin(svc, 'faults/errors', { count: 10, type: 'server', operations: ['getdrafts'] });
    await expect(client.getDrafts()).rejects.toBeInstanceOf(ServerError);
    expect((await faultsApplied(svc)) - before).toBe(4);
    expect(log.retries('getdrafts').map((line) => line.attempt)).toEqual([1, 2, 3]);
  });

  it('bounds retries by time: a wait that would pass maxTimeMs is not taken', async () => {
    const { client, log } = await loggedClient('bob', { retries: 5, maxTimeMs: 500 });
    const before = await faultsApplied(svc);
    // Retry-After is at least 1 s (the service rounds up), beyond the 500 ms budget.
    await admin(svc, 'faults/errors', { count: 10, type: 'rate_limit', retry_after: 1, operations: ['getdrafts'] });
    const error = await client.getDrafts().catch((e) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((await faultsApplied(svc)) - before).toBe(1);
    expect(log.retries()).toEqual([]);
  });

  it('the login itself is retried on a 429', async () => {
    const log = captureLog();
    const client = clients.make('carol', { logger: log.logger, retry: { maxDelayMs: 10 } });
    await admin(svc, 'faults/errors', { count: 1, type: 'rate_limit', operations: ['login'] });
    expect((await client.getDrafts()).object).toBe('list');
    expect(log.retries('getdrafts')).toHaveLength(1);
  });

  // Known bug (see the report): client.ts run() logs in again outside withRetries, so a 429 (or a
  // server error) answering that re-login surfaces instead of being retried.
  it('the re-login after an expiry is retried on a 429 too', async () => {
    const { client } = await loggedClient('bob', { maxDelayMs: 10 });
    await admin(svc, 'faults/expire-sessions');
    await admin(svc, 'faults/errors', { count: 1, type: 'rate_limit', operations: ['login'] });
    expect((await client.getDrafts()).object).toBe('list');
  });
});

describe('backoffDelay', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('is full jitter: between 0 and base * 2^(n-1)', () => {
    const options = { baseDelayMs: 100, maxDelayMs: 1_000_000 };
    for (let attempt = 1; attempt <= 8; attempt += 1) {
      const ceiling = 100 * 2 ** (attempt - 1);
      for (let i = 0; i < 200; i += 1) {
        const delay = backoffDelay(attempt, undefined, options);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
    vi.spyOn(Math, 'random').mockReturnValue(0);
    expect(backoffDelay(4, undefined, options)).toBe(0);
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    expect(backoffDelay(4, undefined, options)).toBe(400);
  });

  it('is capped by maxDelayMs and uses the defaults (500 ms base, 30 s cap)', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.999999);
    expect(backoffDelay(20, undefined, { baseDelayMs: 100, maxDelayMs: 5000 })).toBeLessThanOrEqual(5000);
    expect(backoffDelay(20, undefined, { baseDelayMs: 100, maxDelayMs: 5000 })).toBeGreaterThan(4990);
    expect(backoffDelay(1, undefined)).toBeGreaterThan(499);
    expect(backoffDelay(1, undefined)).toBeLessThanOrEqual(500);
    expect(backoffDelay(30, undefined)).toBeLessThanOrEqual(30_000);
  });

  it('never waits less than Retry-After, within maxDelayMs', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const limited = new RateLimitError(details('rate_limit', 3));
    expect(backoffDelay(1, limited, { baseDelayMs: 10, maxDelayMs: 10_000 })).toBe(3000);
    expect(backoffDelay(1, limited, { baseDelayMs: 10, maxDelayMs: 2000 })).toBe(2000);
    vi.spyOn(Math, 'random').mockReturnValue(0.999);
    expect(backoffDelay(5, limited, { baseDelayMs: 1000, maxDelayMs: 60_000 })).toBeGreaterThan(15_000);
  });
});

describe('isRetryable', () => {
  const transport = (sent: boolean) => new TransportError('op', new Error('reset'), sent);
  const matrix: Array<[string, unknown, boolean, boolean]> = [
    // error, GET, POST
    ['RateLimitError', new RateLimitError(details('rate_limit', 1)), true, true],
    ['ArchiveDownloadLimitError', new ArchiveDownloadLimitError(details('rate_limit', 60), new Date()), false, false],
    ['ServerError', new ServerError(details('server')), true, false],
    ['TransportError (sent)', transport(true), true, false],
    ['TransportError (never sent)', transport(false), true, true],
    ['BadRequestError', new BadRequestError(details('bad_request')), false, false],
    ['UnauthorizedError', new UnauthorizedError(details('unauthorized_error')), false, false],
    ['ExpiredError', new ExpiredError(details('expired')), false, false],
    ['BadCsrfError', new BadCsrfError(details('bad_csrf')), false, false],
    ['ResponseFormatError', new ResponseFormatError('op', 502, 'text/html', '<html>'), false, false],
    ['a plain Error', new Error('boom'), false, false],
  ];
  it.each(matrix)('%s: GET %s, POST %s', (_name, error, get, post) => {
    expect(isRetryable(error, 'GET')).toBe(get);
    expect(isRetryable(error, 'POST')).toBe(post);
  });
});
