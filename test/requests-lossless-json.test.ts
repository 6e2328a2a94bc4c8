import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdStyle } from '../src/service/ids.js';
import { call, loginAs, ok, send, startTestService, type ApiResponse, type Session, type TestService } from './helpers/service.js';

/**
 * Issue #15 item 13: JSON request bodies are parsed without losing digits. An id written as a JSON
 * integer (as the service itself writes ids in the numeric and big styles) works as the same id as a
 * string does, and so does a csrf token sent as a number.
 */

/** Writes a JSON body by hand, so integers above 2^53 go out as bare integers with every digit. */
function jsonBody(fields: Record<string, { raw: string } | string | number | boolean>): string {
  const members = Object.entries(fields).map(([key, value]) => {
    const written = typeof value === 'object' ? value.raw : JSON.stringify(value);
    return `${JSON.stringify(key)}:${written}`;
  });
  return `{${members.join(',')}}`;
}

function postJson(svc: TestService, session: Session, operation: string, body: string): Promise<ApiResponse> {
  return send(svc, `/api/v1/${operation}`, 'POST', { cookie: session.cookie, 'content-type': 'application/json' }, body);
}

/** An id as a bare JSON integer when it is all digits (numeric and big styles), else as a string. */
function idLiteral(id: unknown): { raw: string } {
  const text = String(id);
  return { raw: /^[1-9][0-9]*$/.test(text) ? text : JSON.stringify(text) };
}

describe.each<IdStyle>(['numeric', 'big', 'opaque'])('JSON bodies with the %s id style', (style) => {
  let svc: TestService;
  let mo: Session;
  let chatId: string;
  beforeAll(async () => {
    svc = await startTestService({ idStyle: style });
    mo = await loginAs(svc, 'mo');
    const chats = ok(await call(svc, 'getchats', { group_name: 'demo' }, { auth: mo }));
    chatId = String(chats.data.find((chat: { subject: string }) => chat.subject === 'general').id);
  });
  afterAll(async () => svc.close());

  it('takes an id as a JSON integer as the same id as a string', async () => {
    if (style === 'big') expect(BigInt(chatId) > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
    const asNumber = ok(await postJson(svc, mo, 'updatechat', jsonBody({ chat_id: idLiteral(chatId), csrf: mo.csrf, desc: 'by number' })));
    expect(String(asNumber.id)).toBe(chatId);
    expect(asNumber.desc).toBe('by number');
    const asString = ok(await postJson(svc, mo, 'updatechat', jsonBody({ chat_id: chatId, csrf: mo.csrf, desc: 'by string' })));
    expect(String(asString.id)).toBe(chatId);
  });

  it('takes the csrf token (a decimal too large for a double) as a JSON integer', async () => {
    expect(mo.csrf).toMatch(/^[0-9]{17,}$/);
    const answer = ok(await postJson(svc, mo, 'updatechat', jsonBody({ chat_id: chatId, csrf: { raw: mo.csrf }, desc: 'csrf as number' })));
    expect(answer.desc).toBe('csrf as number');
  });

  it('reads the group, a draft and a reply target from JSON integers', async () => {
    const groupId = (mo.user.subscriptions as Array<{ group_name: string; group_id: unknown }>).find((s) => s.group_name === 'demo')!.group_id;
    const draft = ok(await postJson(svc, mo, 'newdraft', jsonBody({
      group_id: idLiteral(groupId), draft_type: 'draft_type_post', csrf: mo.csrf, subject: 'json', body: 'made from JSON',
    })));
    expect(String(draft.group_id)).toBe(String(groupId));
    const updated = ok(await postJson(svc, mo, 'updatedraft', jsonBody({ draft_id: idLiteral(draft.id), csrf: mo.csrf, subject: 'json 2' })));
    expect(String(updated.id)).toBe(String(draft.id));
    expect(updated.subject).toBe('json 2');
  });

  it('keeps small numbers, fractions and booleans as before', async () => {
    const answer = ok(await postJson(svc, mo, 'updatechat', jsonBody({ chat_id: chatId, csrf: mo.csrf, is_closed: false })));
    expect(answer.is_closed).toBe(false);
    const bad = await postJson(svc, mo, 'newdraft', jsonBody({ group_name: 'demo', draft_type: 'draft_type_post', csrf: mo.csrf, bcc_me: 2.5 }));
    expect(bad.body).toEqual({ object: 'error', type: 'invalid_value', extra: 'bcc_me' });
  });
});

describe('JSON bodies, whatever the id style', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ idStyle: 'big' });
  });
  afterAll(async () => svc.close());

  it('logs in with an empty JSON body and the fields in the query string (a real client does)', async () => {
    const answer = await send(svc, '/api/v1/login?email=bob%40example.com&password=bob-demo', 'POST', { 'content-type': 'application/json' }, '');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.user.email).toBe('bob@example.com');
  });

  it('refuses a body that is not a JSON object, and prototype keys', async () => {
    for (const body of ['[1,2]', '"email"', '12345678901234567890', '{"__proto__":{"x":1}}', '{"a":1']) {
      const answer = await send(svc, '/api/v1/login', 'POST', { 'content-type': 'application/json' }, body);
      expect(answer.status, body).toBe(400);
      expect(answer.body, body).toMatchObject({ object: 'error', type: 'bad_request' });
    }
  });
});
