import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ArchiveDownloadLimitError, AuthenticationError, BadCsrfError, BadRequestError, ExpiredError, errorFromObject, GroupsError,
  InadequatePermissionsError, InvalidValueError, RateLimitError, ResponseFormatError, ServerError, TransportError,
  UnauthorizedError, UnknownGroupsError, GroupNotFoundError, parseRetryAfter,
} from '../src/api/index.js';
import { totpCode } from '../src/service/totp.js';
import { createCertificate } from '../src/service/x509.js';
import { captureLog, Clients, faultsApplied } from './helpers/client.js';
import { admin, startTestService, type TestService } from './helpers/service.js';

/** Every error type of spec part 7 as its class, from the real service and from a misbehaving one. */
describe('client errors', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
  });

  it('a wrong password is UnauthorizedError from login', async () => {
    const error = await clients.make({ email: 'bob@example.com', password: 'wrong' }).getChats({ group_name: 'demo' }).catch((e) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toBeInstanceOf(GroupsError);
    expect(error).toMatchObject({
      type: 'unauthorized_error', extra: 'incorrect e-mail address or password', status: 400, operation: 'login', twoFactorRequired: false,
    });
  });

  it('a two-factor account without a code says twoFactorRequired; with a code it logs in', async () => {
    const secret = 'JBSWY3DPEHPK3PXP';
    await admin(svc, 'users', { email: 'tf@example.com', password: 'tf-pass', full_name: 'Two Factor', two_factor_secret: secret });
    await admin(svc, 'subscriptions', { group: 'demo', user: 'tf@example.com' });
    const error = await clients.make({ email: 'tf@example.com', password: 'tf-pass' }).login().catch((e) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ type: 'unauthorized_error', extra: 'two_factor_required', operation: 'login', twoFactorRequired: true });
    const withCode = clients.make({ email: 'tf@example.com', password: 'tf-pass', twofactor: () => totpCode(secret, Date.now()) });
    const chats = await withCode.getChats({ group_name: 'demo' });
    expect(chats.object).toBe('list');
  });

  it('maps bad_request, inadequate_permissions and invalid_value with their extra', async () => {
    const bob = clients.make('bob');
    const bad = await bob.getChatHistory({ chat_id: 'no-such-chat' }).catch((e) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad).toMatchObject({ type: 'bad_request', extra: 'invalid chat_id', status: 400, operation: 'getchathistory' });

    const denied = await bob.newChat({ group_name: 'demo', subject: 'nope', desc: '' }).catch((e) => e);
    expect(denied).toBeInstanceOf(InadequatePermissionsError);
    expect(denied).toMatchObject({ type: 'inadequate_permissions', extra: 'manage_chats', status: 400, operation: 'newchat' });

    const invalid = await bob.getChats({ group_name: 'demo', sort_field: 'colour' }).catch((e) => e);
    expect(invalid).toBeInstanceOf(InvalidValueError);
    expect(invalid).toMatchObject({ type: 'invalid_value', extra: 'sort_field', field: 'sort_field', status: 400, operation: 'getchats' });
  });

  it('an unknown token is AuthenticationError and is not retried or re-logged', async () => {
    const log = captureLog();
    const client = clients.make({ token: 'f'.repeat(64) }, { logger: log.logger });
    const error = await client.getDrafts().catch((e) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ type: 'authentication', status: 400, operation: 'getdrafts' });
    expect(log.retries()).toEqual([]);
    expect(log.withMessage('logging in again')).toEqual([]);
  });

  it('rate limits beyond the retries surface as RateLimitError with Retry-After', async () => {
    const client = clients.make('carol', { retry: { retries: 2, maxDelayMs: 10 } });
    await client.login();
    const before = await faultsApplied(svc);
    await admin(svc, 'faults/errors', { count: 5, type: 'rate_limit', retry_after: 7, operations: ['getchats'] });
    const error = await client.getChats({ group_name: 'demo' }).catch((e) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).not.toBeInstanceOf(ArchiveDownloadLimitError);
    expect(error).toMatchObject({ type: 'rate_limit', status: 429, operation: 'getchats', retryAfterSeconds: 7 });
    expect((await faultsApplied(svc)) - before).toBe(3); // the first try and two retries
    await admin(svc, 'faults/clear');
  });

  it('a server error on a POST is ServerError after exactly one call', async () => {
    const log = captureLog();
    const client = clients.make('alice', { logger: log.logger });
    await client.login();
    const before = await faultsApplied(svc);
    await admin(svc, 'faults/errors', { count: 3, type: 'server', status: 500, operations: ['newchat'] });
    const error = await client.newChat({ group_name: 'demo', subject: 'never', desc: '' }).catch((e) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ type: 'server', status: 500, operation: 'newchat' });
    expect((await faultsApplied(svc)) - before).toBe(1);
    expect(log.retries()).toEqual([]);
    await admin(svc, 'faults/clear');
  });

  it('a refused csrf is refreshed once and the POST goes through (token and cookie clients)', async () => {
    const log = captureLog();
    const { client, csrf } = await clients.withToken('bob', 'basic', { logger: log.logger });
    client.session.csrf = 'wrong';
    const draft = await client.newDraft({ group_name: 'demo', draft_type: 'draft_type_post', subject: 'csrf', body: 'refreshed' });
    expect(draft.subject).toBe('csrf');
    expect(client.session.csrf).toBe(csrf);
    expect(log.withMessage('refreshing the csrf token')).toHaveLength(1);

    const cookie = clients.make('bob');
    await cookie.login();
    const real = cookie.session.csrf;
    cookie.session.csrf = '12345';
    expect(await cookie.deleteDraft({ draft_id: draft.id })).toBeUndefined();
    expect(cookie.session.csrf).toBe(real);
  });

  it('after expire-sessions a token client cannot log in again: ExpiredError surfaces', async () => {
    const { client } = await clients.withToken('carol', 'bearer');
    expect((await client.getDrafts()).object).toBe('list');
    await admin(svc, 'faults/expire-sessions');
    const error = await client.getDrafts().catch((e) => e);
    expect(error).toBeInstanceOf(ExpiredError);
    expect(error).toMatchObject({ type: 'expired', status: 400, operation: 'getdrafts' });
  });
});

describe('errorFromObject and parseRetryAfter', () => {
  it('maps every type, both unauthorized spellings and unknown types', () => {
    const cases: Array<[string, new (...args: never[]) => GroupsError]> = [
      ['unauthorized_error', UnauthorizedError], ['unauthorized', UnauthorizedError], ['bad_request', BadRequestError],
      ['authentication', AuthenticationError], ['expired', ExpiredError], ['rate_limit', RateLimitError],
      ['inadequate_permissions', InadequatePermissionsError], ['invalid_value', InvalidValueError], ['server', ServerError],
      ['bad_csrf', BadCsrfError], ['group_not_found', GroupNotFoundError], ['no_such_type', UnknownGroupsError],
    ];
    for (const [type, Class] of cases) {
      const error = errorFromObject({ type, extra: 'x' }, 400, 'getchats');
      expect(error, type).toBeInstanceOf(Class);
      expect(error).toMatchObject({ type, extra: 'x', status: 400, operation: 'getchats', name: Class.name });
    }
    expect(errorFromObject({}, 502, 'gettopics')).toMatchObject({ type: 'unknown', extra: '', status: 502 });
    // Both answers to a group that is not there are one class, and still a bad request.
    for (const [type, extra] of [['bad_request', 'invalid group_name'], ['bad_request', 'invalid group_id'], ['group_not_found', '']]) {
      const error = errorFromObject({ type, extra }, 400, 'getgroup');
      expect(error, `${type} ${extra}`).toBeInstanceOf(GroupNotFoundError);
      expect(error).toBeInstanceOf(BadRequestError);
    }
    expect(errorFromObject({ type: 'bad_request', extra: 'invalid topic_id' }, 400, 'gettopic')).not.toBeInstanceOf(GroupNotFoundError);
    expect(errorFromObject({ type: 'unauthorized', extra: 'two_factor_required' }, 400, 'login')).toMatchObject({ twoFactorRequired: true });
  });

  it('reads the 24-hour rule of downloadarchives into nextAllowedAt', () => {
    const error = errorFromObject({
      type: 'rate_limit', extra: 'archive download allowed once per 24 hours; next allowed at 2030-01-02T03:04:05.000Z',
    }, 429, 'downloadarchives', '3600');
    expect(error).toBeInstanceOf(ArchiveDownloadLimitError);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as ArchiveDownloadLimitError).nextAllowedAt.toISOString()).toBe('2030-01-02T03:04:05.000Z');
    expect(error.retryAfterSeconds).toBe(3600);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('3')).toBe(3);
    expect(parseRetryAfter(' 1.5 ')).toBe(1.5);
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(new Date(Date.now() - 60_000).toUTCString())).toBe(0);
    expect(parseRetryAfter(new Date(Date.now() + 120_000).toUTCString())).toBeGreaterThan(60);
  });
});

/** A server that is not the service: proxies' HTML pages, cut or garbled bodies. */
describe('answers that are not the JSON the spec promises', () => {
  let server: Server;
  let baseUrl: string;
  let ca: string;
  const hits: string[] = [];
  const clients = new Clients(() => ({ baseUrl, service: { ca } }) as TestService);
  const ANSWERS: Record<string, [number, string, string]> = {
    getchats: [502, 'text/html', '<html><body>Bad Gateway</body></html>'],
    gettopics: [200, 'application/json', '{"object":"list","data":[{"id":12'],
    getdrafts: [200, 'text/html', '<html>maintenance</html>'],
    getmessages: [503, 'text/plain', ''],
    newchat: [503, 'application/json', '{"object":"error","type":"server","extra":"overloaded"}'],
  };
  beforeAll(async () => {
    // A self-signed certificate: the clients trust it alone.
    const keys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    ca = createCertificate({
      commonName: 'localhost', publicKey: keys.publicKey, signedBy: { commonName: 'localhost', ...keys }, isCA: false, keyUsage: ['digitalSignature'],
      notBefore: new Date(Date.now() - 3_600_000), notAfter: new Date(Date.now() + 86_400_000), dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'],
    });
    server = createServer({ key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }), cert: ca }, (request, response) => {
      const operation = new URL(request.url ?? '/', 'https://x').pathname.split('/').pop() ?? '';
      hits.push(operation);
      request.resume();
      const [status, type, body] = ANSWERS[operation] ?? [200, 'application/json', '{"object":"list","data":[]}'];
      response.writeHead(status, { 'content-type': type }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await clients.closeAll();
    await new Promise((resolve) => server.close(resolve));
  });

  const notJson = Object.entries(ANSWERS).filter(([operation]) => operation !== 'newchat').map(([operation, answer]) => [operation, ...answer] as const);
  it.each(notJson)('%s answering HTTP %i %s is ResponseFormatError, never a SyntaxError', async (operation, status, contentType, body) => {
    const client = clients.make({ token: 'token' });
    const error = (await client.call(operation, { group_name: 'demo' }).catch((e: unknown) => e)) as ResponseFormatError;
    expect(error).toBeInstanceOf(ResponseFormatError);
    expect(error).not.toBeInstanceOf(SyntaxError);
    expect(error).toMatchObject({ type: 'response_format', status, operation, contentType, bodyStart: body });
    expect(error.message).toContain(`HTTP ${status}`);
    expect(hits.filter((hit) => hit === operation)).toHaveLength(1);
  });

  it('an error object under another status is still its class (a POST is not retried)', async () => {
    const client = clients.make({ token: 'token' });
    client.session.csrf = '1';
    const error = await client.newChat({ group_name: 'demo', subject: 's', desc: '' }).catch((e) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ type: 'server', extra: 'overloaded', status: 503, operation: 'newchat' });
    expect(hits.filter((hit) => hit === 'newchat')).toHaveLength(1);
  });

  it('refuses an http:// address with a clear TypeError, and an untrusted certificate fails as TransportError', async () => {
    expect(() => clients.make('bob', { baseUrl: baseUrl.replace('https:', 'http:') })).toThrow(/HTTPS only.*use https:\/\//);
    expect(() => clients.make('bob', { baseUrl: 'not a url' })).toThrow(TypeError);
    const untrusted = clients.make({ token: 'token' }, { ca: undefined, retry: { retries: 0 } });
    const error = await untrusted.getDrafts().catch((e) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ type: 'transport', status: 0, operation: 'getdrafts' });
  });

  it('an untrusted certificate fails at once: retrying cannot help', async () => {
    const log = captureLog();
    const untrusted = clients.make({ token: 'token' }, { ca: undefined, logger: log.logger });
    const error = await untrusted.getDrafts().catch((e) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error.message).toMatch(/certificate/);
    expect(log.retries()).toEqual([]);
  });
});
