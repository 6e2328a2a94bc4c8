import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_OPERATIONS } from '../src/service/operations.js';
import { call, loginAs, send, startTestService, type Session, type TestService } from './helpers/service.js';

let svc: TestService;
let mo: Session;
beforeAll(async () => {
  svc = await startTestService();
  mo = await loginAs(svc, 'mo');
});
afterAll(async () => svc.close());

// Values that have broken parsers elsewhere: empty, huge, negative, non-numeric, unicode, injection-ish.
const NASTY = ['', ' ', '-1', '0', '1e999', 'NaN', '9'.repeat(400), 'x'.repeat(300), '../../etc/passwd', '%00', '\u0000',
  '{"a":1}', '[]', 'true', 'null', '😀', '<script>', "' OR 1=1 --"];
const PARAMS = ['group_id', 'group_name', 'chat_id', 'chatsub_id', 'topic_id', 'draft_id', 'message_id', 'limit', 'page_token',
  'sort_field', 'sort_dir', 'extended', 'subject', 'desc', 'is_closed', 'show_closed', 'start_msg_num', 'start_time', 'q',
  'filter_by', 'restrict_date', 'start_date', 'end_date', 'action', 'member_info_id', 'draft_type', 'body', 'preset_date_range'];

function isErrorOrResult(status: number, body: unknown, text: string): boolean {
  if (status === 200) return true;
  return status >= 400 && status < 500 && typeof body === 'object' && body !== null && (body as { object?: string }).object === 'error' &&
    text.length > 0;
}

describe('bad requests', () => {
  it('never crash the service and always get the error object', async () => {
    let calls = 0;
    for (const op of ALL_OPERATIONS) {
      for (const [index, value] of NASTY.entries()) {
        const params = Object.fromEntries(PARAMS.map((name, i) => [name, NASTY[(index + i) % NASTY.length]!]));
        params[PARAMS[index % PARAMS.length]!] = value;
        const response = await call(svc, op.name, params, { method: op.method, auth: mo });
        calls += 1;
        // logout ends mo's session (it is meant to): the other operations need it back.
        if (op.name === 'logout') mo = await loginAs(svc, 'mo');
        if (!isErrorOrResult(response.status, response.body, response.text)) {
          throw new Error(`${op.name} with ${JSON.stringify(params)} answered ${response.status} ${response.text.slice(0, 200)}`);
        }
      }
    }
    expect(calls).toBe(ALL_OPERATIONS.length * NASTY.length);
    // Still serving normally afterwards.
    expect((await call(svc, 'getchats', { group_name: 'demo' }, { auth: mo })).status).toBe(200);
  });

  it('answers odd bodies and content types with the error object', async () => {
    const headers = { cookie: mo.cookie };
    const cases: Array<[string, string]> = [
      ['application/json', '{"csrf": '],
      ['multipart/form-data; boundary=xyz', '--xyz\r\nbroken'],
      ['text/plain', 'csrf=1'],
      ['application/x-www-form-urlencoded', '%%%=%%%'],
    ];
    for (const [type, body] of cases) {
      const response = await send(svc, '/api/v1/newchat', 'POST', { ...headers, 'content-type': type }, body);
      expect(isErrorOrResult(response.status, response.body, response.text), `${type}: ${response.status} ${response.text}`).toBe(true);
      expect(response.status).not.toBe(200);
    }
  });
});

describe('malformed URLs', () => {
  it('get the error object too', async () => {
    const response = await send(svc, '/api/v1/getchats?group_name=%E0%A4%A', 'GET', { cookie: mo.cookie });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ object: 'error', type: 'bad_request' });
    const path = await send(svc, '/api/v1/get%ZZchats', 'GET', { cookie: mo.cookie });
    expect(path.body).toMatchObject({ object: 'error', type: 'bad_request' });
  });
});
