import { FormData } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, loginAs, send, startTestService, type Session, type TestService } from './helpers/service.js';
import { multipartStart, requestHead, sendPartly } from './helpers/raw-request.js';

/**
 * Issue #15 item 3: a body is refused before it is read when the call cannot take it (a multipart body
 * to login or to any call that takes no files), and for the call that takes files (addattachments)
 * authentication and csrf are decided before any upload is read. Each request here announces a body of
 * 60 MiB and sends only its first bytes: the answer has to come without the rest.
 */
const ANNOUNCED = 60 * 1024 * 1024;
const BOUNDARY = 'groupwire-test-boundary';
const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`;

let svc: TestService;
let bob: Session;
let draftId: string;
beforeAll(async () => {
  svc = await startTestService();
  bob = await loginAs(svc, 'bob');
  const draft = await call(svc, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post' }, { method: 'POST', auth: bob });
  draftId = String(draft.body.id);
});
afterAll(async () => svc.close());

function announced(path: string, contentType: string, extra: Record<string, string> = {}) {
  return requestHead('POST', path, { 'Content-Type': contentType, 'Content-Length': ANNOUNCED, ...extra });
}

describe('a multipart body to a call that takes no files', () => {
  it('is refused at once for login, with the credentials in the form and a file after them', async () => {
    const start = multipartStart(BOUNDARY, { email: 'bob@example.com', password: 'bob-demo' });
    const answer = await sendPartly(svc, announced('/api/v1/login', MULTIPART), start);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ object: 'error', type: 'bad_request', extra: 'login takes no files: send application/x-www-form-urlencoded or JSON' });
  });

  it('is refused at once for every other call without files (newchat, updatedraft)', async () => {
    for (const operation of ['newchat', 'updatedraft']) {
      const start = multipartStart(BOUNDARY, { csrf: bob.csrf, group_name: 'demo', subject: 'x', desc: '' });
      const answer = await sendPartly(svc, announced(`/api/v1/${operation}`, MULTIPART, { Cookie: bob.cookie }), start);
      expect(answer.body, operation).toEqual({
        object: 'error', type: 'bad_request', extra: `${operation} takes no files: send application/x-www-form-urlencoded or JSON`,
      });
    }
  });

  it('is refused when sent whole too, and a form body to login still logs in', async () => {
    const form = new FormData();
    form.append('email', 'bob@example.com');
    form.append('password', 'bob-demo');
    form.append('file', new Blob([Buffer.alloc(1024 * 1024)]), 'one-mib.bin');
    expectError(await send(svc, '/api/v1/login', 'POST', {}, form), 'bad_request',
      'login takes no files: send application/x-www-form-urlencoded or JSON');
    expect((await loginAs(svc, 'bob')).csrf).toBeTruthy();
  });
});

describe('an upload to addattachments', () => {
  it('without credentials is refused before the file is read', async () => {
    const start = multipartStart(BOUNDARY, { draft_id: draftId, csrf: bob.csrf });
    const answer = await sendPartly(svc, announced('/api/v1/addattachments', MULTIPART), start);
    expect(answer.body).toMatchObject({ object: 'error', type: 'authentication' });
  });

  it('with a wrong csrf is refused before the file is read', async () => {
    const start = multipartStart(BOUNDARY, { draft_id: draftId, csrf: 'not-the-csrf' });
    const answer = await sendPartly(svc, announced('/api/v1/addattachments', MULTIPART, { Cookie: bob.cookie }), start);
    expect(answer.body).toEqual({ object: 'error', type: 'bad_csrf', extra: 'csrf incorrect' });
  });

  it('with no csrf before the first file is refused before the file is read', async () => {
    const start = multipartStart(BOUNDARY, { draft_id: draftId });
    const answer = await sendPartly(svc, announced('/api/v1/addattachments', MULTIPART, { Cookie: bob.cookie }), start);
    expect(answer.body).toEqual({ object: 'error', type: 'bad_csrf', extra: 'csrf missing (it must come before the first file)' });
  });

  it('takes the csrf from the query string as well, and stores the file', async () => {
    const form = new FormData();
    form.append('draft_id', draftId);
    form.append('file', new Blob([Buffer.from('hello')], { type: 'text/plain' }), 'hello.txt');
    const answer = await send(svc, `/api/v1/addattachments?csrf=${encodeURIComponent(bob.csrf)}`, 'POST', { cookie: bob.cookie }, form);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.attachments.map((a: { filename: string }) => a.filename)).toEqual(['hello.txt']);
  });
});

describe('a body larger than the call can need', () => {
  it('is refused for login before it is read (64 KiB at most)', async () => {
    const head = announced('/api/v1/login', 'application/x-www-form-urlencoded');
    const answer = await sendPartly(svc, head, 'email=bob%40example.com&password=');
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ object: 'error', type: 'bad_request', extra: 'body too large for login (at most 65536 bytes)' });
  });

  it('is refused for a call that needs authentication before it is read, when the caller is not authenticated', async () => {
    const head = announced('/api/v1/newchat', 'application/x-www-form-urlencoded');
    const answer = await sendPartly(svc, head, 'group_name=demo&subject=');
    expect(answer.body).toMatchObject({ object: 'error', type: 'authentication' });
  });
});

describe('limits met while reading', () => {
  it('stops a chunked login body at 64 KiB', async () => {
    const head = requestHead('POST', '/api/v1/login', { 'Content-Type': 'application/x-www-form-urlencoded', 'Transfer-Encoding': 'chunked' });
    const chunk = 'a'.repeat(70 * 1024);
    const answer = await sendPartly(svc, head, `${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    expect(answer.body).toEqual({ object: 'error', type: 'bad_request', extra: 'body too large' });
  });

  it('refuses an eleventh file and a file over 10 MiB', async () => {
    const eleven = new FormData();
    eleven.append('draft_id', draftId);
    eleven.append('csrf', bob.csrf);
    for (let i = 0; i < 11; i += 1) eleven.append('file', new Blob([Buffer.from(`file ${i}`)]), `f${i}.txt`);
    expectError(await send(svc, '/api/v1/addattachments', 'POST', { cookie: bob.cookie }, eleven), 'bad_request', 'at most 10 files a call');
    const large = new FormData();
    large.append('draft_id', draftId);
    large.append('csrf', bob.csrf);
    large.append('file', new Blob([Buffer.alloc(10 * 1024 * 1024 + 1)]), 'large.bin');
    expectError(await send(svc, '/api/v1/addattachments', 'POST', { cookie: bob.cookie }, large), 'bad_request',
      'an attachment is over 10485760 bytes');
  });
});
