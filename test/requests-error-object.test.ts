import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureLog, type LogCapture } from './helpers/client.js';
import { loginAs, send, startTestService, type Session, type TestService } from './helpers/service.js';
import { requestHead, sendPartly, type RawAnswer } from './helpers/raw-request.js';

/**
 * Issue #15 items 14 and 15: every failure the service can produce is HTTP 400 with the spec's error
 * object (2.2), the framework's own failures included; only rate limits are HTTP 429 (spec part 7).
 * A malformed body is the caller's mistake: `bad_request`, logged at debug, never `server` with a
 * stack trace at error level.
 */
let svc: TestService;
let log: LogCapture;
let bob: Session;
beforeAll(async () => {
  log = captureLog();
  svc = await startTestService({ logger: log.logger });
  bob = await loginAs(svc, 'bob');
});
afterAll(async () => svc.close());

function expectBadRequest(answer: { status: number; body: any; text: string }, what: string, extra?: RegExp): void {
  expect(answer.status, `${what}: ${answer.text}`).toBe(400);
  expect(answer.body, `${what}: ${answer.text}`).toMatchObject({ object: 'error', type: 'bad_request' });
  expect(Object.keys(answer.body).sort(), what).toEqual(['extra', 'object', 'type']);
  if (extra) expect(answer.body.extra, what).toMatch(extra);
}

/** A complete request written by hand (for what undici refuses to send). */
function raw(head: string, body: string | Buffer = ''): Promise<RawAnswer> {
  return sendPartly(svc, head, body);
}

describe('paths, operations and methods', () => {
  it('answers an unknown path and an unknown operation with HTTP 400', async () => {
    expectBadRequest(await send(svc, '/nothing/here', 'GET', {}), 'unknown path', /no such path \/nothing\/here/);
    expectBadRequest(await send(svc, '/api/v1/nosuchop', 'GET', { cookie: bob.cookie }), 'unknown operation', /unknown operation nosuchop/);
    expectBadRequest(await send(svc, '/api/v1/getchats/extra', 'GET', { cookie: bob.cookie }), 'a path below an operation');
    expectBadRequest(await send(svc, '/api/v2/getchats', 'POST', { cookie: bob.cookie }), 'another version');
    expectBadRequest(await send(svc, '/api/v1/', 'GET', { cookie: bob.cookie }), 'no operation', /no operation named in the path/);
  });

  it('answers a method the operation does not take, including methods no operation takes', async () => {
    for (const method of ['DELETE', 'PUT', 'PATCH', 'OPTIONS', 'PROPFIND', 'SEARCH']) {
      const answer = await raw(requestHead(method, '/api/v1/getchats?group_name=demo', { Cookie: bob.cookie, 'Content-Length': 0 }));
      expectBadRequest(answer, method, new RegExp(`getchats takes GET, not ${method}`));
    }
    const unknown = await raw(requestHead('BREW', '/api/v1/getchats', { 'Content-Length': 0 }));
    expectBadRequest(unknown, 'a method HTTP does not know');
  });
});

describe('requests HTTP cannot parse', () => {
  it('answers a URL over the size limit with HTTP 400 (not 431)', async () => {
    const answer = await raw(requestHead('GET', `/api/v1/getchats?group_name=${'a'.repeat(20_000)}`));
    expectBadRequest(answer, 'long URL', /too large/);
  });

  it('answers headers over the size limit with HTTP 400 (not 431)', async () => {
    const answer = await raw(requestHead('GET', '/api/v1/getchats', { 'X-Padding': 'p'.repeat(20_000) }));
    expectBadRequest(answer, 'long header', /too large/);
  });

  it('answers a malformed header line, a bad Content-Length and a bad request line', async () => {
    expectBadRequest(await raw('GET /api/v1/getchats HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'), 'header name with a space');
    expectBadRequest(await raw(requestHead('POST', '/api/v1/login', { 'Content-Type': 'application/json', 'Content-Length': 'abc' })), 'Content-Length');
    expectBadRequest(await raw('GET\r\n\r\n'), 'request line');
  });
});

describe('bodies', () => {
  const post = (type: string | undefined, body: string | Buffer, headers: Record<string, string> = {}) => {
    const all: Record<string, string | number> = { Cookie: bob.cookie, 'Content-Length': Buffer.byteLength(body), ...headers };
    if (type) all['Content-Type'] = type;
    return raw(requestHead('POST', '/api/v1/newchat', all), body);
  };

  it('answers a body over the size limit', async () => {
    const answer = await raw(requestHead('POST', '/api/v1/newchat', {
      Cookie: bob.cookie, 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': 200 * 1024 * 1024,
    }), 'group_name=demo');
    expectBadRequest(answer, 'body too large', /body too large/);
  });

  it('answers a content type the service does not take', async () => {
    expectBadRequest(await post('text/plain', 'csrf=1'), 'text/plain', /content type text\/plain/);
    expectBadRequest(await post('application/xml', '<a/>'), 'xml', /content type application\/xml/);
    expectBadRequest(await post(undefined, 'group_name=demo'), 'no content type', /content type/);
  });

  it('answers broken encodings: %-escapes, invalid UTF-8, charsets and content codings it does not take', async () => {
    const form = 'application/x-www-form-urlencoded';
    expectBadRequest(await post(form, 'group_name=demo&subject=%E0%A4%'), 'broken %-escape in a form', /subject/);
    expectBadRequest(await post(form, 'group_name=demo&subject=%ZZ'), 'non-hex %-escape in a form', /subject/);
    expectBadRequest(await post(form, 'group_name=demo&subject=%C3%28'), '%-escape that is not UTF-8', /subject/);
    expectBadRequest(await post('application/json', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])), 'JSON not UTF-8', /UTF-8/);
    expectBadRequest(await post('application/json; charset=iso-8859-1', '{}'), 'another charset', /charset/);
    expectBadRequest(await post(form, 'group_name=demo', { 'Content-Encoding': 'gzip' }), 'gzip', /Content-Encoding/);
    const query = await send(svc, '/api/v1/getchats?group_name=%E0%A4%', 'GET', { cookie: bob.cookie });
    expectBadRequest(query, 'broken %-escape in the query string', /group_name/);
    const path = await send(svc, '/api/v1/get%ZZchats', 'GET', { cookie: bob.cookie });
    expectBadRequest(path, 'broken %-escape in the path');
  });

  it('answers broken multipart bodies with bad_request, logged at debug and never as a failure of the service', async () => {
    const multipart = (boundary: string | undefined, body: string) => raw(requestHead('POST', '/api/v1/addattachments', {
      Cookie: bob.cookie,
      'Content-Type': boundary === undefined ? 'multipart/form-data' : `multipart/form-data; boundary=${boundary}`,
      'Content-Length': Buffer.byteLength(body),
    }), body);
    const part = (boundary: string, name: string, value: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    const fields = part('b1', 'csrf', bob.csrf) + part('b1', 'draft_id', '1');
    const cases: Array<[string, Promise<RawAnswer>]> = [
      ['no boundary', multipart(undefined, fields)],
      ['boundary mismatch', multipart('b2', `${fields}--b1--\r\n`)],
      ['truncated', multipart('b1', `${fields}--b1\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhalf a fi`)],
      ['no closing boundary', multipart('b1', fields)],
    ];
    const errorsBefore = log.lines.filter((line) => line.level >= 50).length;
    for (const [what, pending] of cases) expectBadRequest(await pending, what, /multipart/);
    expect(log.lines.filter((line) => line.level >= 50).length).toBe(errorsBefore);
    const debug = log.lines.filter((line) => line.level === 20 && line.msg === 'request refused');
    expect(debug.length).toBeGreaterThanOrEqual(cases.length);
    expect(JSON.stringify(debug)).not.toContain(bob.csrf);
  });
});

describe('what stays as the spec says', () => {
  it('answers a rate limit with HTTP 429 and the error object', async () => {
    const limited = await startTestService({ rateLimit: { perSecond: 0.001, burst: 1 } });
    try {
      await send(limited, '/api/v1/nosuchop', 'GET', {});
      const answer = await send(limited, '/api/v1/nosuchop', 'GET', {});
      expect(answer.status).toBe(429);
      expect(answer.body).toMatchObject({ object: 'error', type: 'rate_limit' });
    } finally {
      await limited.close();
    }
  });
});
