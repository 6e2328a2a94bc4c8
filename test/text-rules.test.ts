import { FormData } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Params } from '../src/service/params.js';
import { cleanChatMessage, cleanFileName, cleanText } from '../src/service/text-rules.js';
import {
  call, expectError, loginAs, ok, send, startTestService, type ApiResponse, type Session, type TestService,
} from './helpers/service.js';

/**
 * Issue #15 item 16: text fields follow one set of rules (src/service/text-rules.ts, applied by Params;
 * the table is in docs/protocol.md "Text fields"). Real calls over HTTPS for what operations store;
 * the rules themselves also directly.
 */

const RLO = '\u202E';
const ZWSP = '\u200B';

let svc: TestService;
let alice: Session;
let n = 0;
const unique = (label: string): string => `${label} ${++n}`;

beforeAll(async () => {
  svc = await startTestService();
  alice = await loginAs(svc, 'alice');
});

afterAll(async () => {
  await svc?.close();
});

function post(name: string, params: Record<string, unknown>): Promise<ApiResponse> {
  return call(svc, name, params, { auth: alice, method: 'POST' });
}

/** A JSON body: the only way to send a lone surrogate (a form encodes it as U+FFFD). */
function postJson(name: string, body: Record<string, unknown>): Promise<ApiResponse> {
  return send(svc, `/api/v1/${name}`, 'POST', { cookie: alice.cookie, 'content-type': 'application/json' },
    JSON.stringify({ csrf: alice.csrf, ...body }));
}

const newChat = (subject: string, desc = '') => post('newchat', { group_name: 'demo', subject, desc });
const newDraft = (params: Record<string, unknown>) => post('newdraft', { group_name: 'demo', draft_type: 'draft_type_post', ...params });

describe('chat subjects (newchat, updatechat)', () => {
  it.each([
    ['a NUL', 'lunch\u0000menu'],
    ['an escape', 'bell\u0007 and \u001b[31mred'],
    ['a C1 control', 'next\u0085line\u009b'],
    ['a right-to-left override', `${RLO}gnp.exe`],
    ['an isolate', 'a\u2067b'],
    ['only a zero-width space', ZWSP],
    ['only invisible characters', `${ZWSP} \u2060\uFEFF\u00AD\u3164`],
  ])('%s is refused with the spec\'s error', async (_label, subject) => {
    expectError(await newChat(subject), 'bad_request', 'invalid subject');
  });

  it('a lone surrogate (sent as JSON) is refused', async () => {
    expectError(await postJson('newchat', { group_name: 'demo', subject: 'half \uD83D chat', desc: '' }), 'bad_request', 'invalid subject');
    expectError(await postJson('newchat', { group_name: 'demo', subject: 'tail \uDE00', desc: '' }), 'bad_request', 'invalid subject');
  });

  it('tabs and line breaks become one space, the rest is NFC and trimmed; a full emoji pair stays', async () => {
    const chat = ok(await newChat(' Cafe\u0301\tnews\r\n😀 today\u2028 '));
    expect(chat.subject).toBe('Caf\u00e9 news 😀 today');
  });

  it('updatechat follows the same rules and changes nothing when it refuses', async () => {
    const chat = ok(await newChat(unique('kept')));
    expectError(await post('updatechat', { chat_id: chat.id, subject: `x\u0000y` }), 'bad_request', 'invalid subject');
    expectError(await post('updatechat', { chat_id: chat.id, subject: ZWSP }), 'bad_request', 'invalid subject');
    const renamed = ok(await post('updatechat', { chat_id: chat.id, subject: 'Re\u0301sume\u0301' }));
    expect(renamed.subject).toBe('R\u00e9sum\u00e9');
  });

  it('a desc (HTML, multi-line) keeps its line breaks and refuses NUL', async () => {
    expectError(await newChat(unique('desc'), '<p>a\u0000b</p>'), 'bad_request', 'invalid desc');
    const chat = ok(await newChat(unique('desc'), '<p>one</p>\n<p>two\tcols</p>'));
    expect(chat.desc).toBe('<p>one</p>\n<p>two\tcols</p>');
  });
});

describe('draft subjects and bodies (newdraft, updatedraft, postdraft: topic subjects and messages)', () => {
  it('a subject with a control, a bidi override or a lone surrogate is refused', async () => {
    expectError(await newDraft({ subject: 'a\u0000b' }), 'bad_request', 'invalid subject');
    expectError(await newDraft({ subject: `${RLO}txt.exe` }), 'bad_request', 'invalid subject');
    expectError(await postJson('newdraft', { group_name: 'demo', draft_type: 'draft_type_post', subject: '\uDC00' }), 'bad_request', 'invalid subject');
  });

  it('a plain-text body keeps tabs, line breaks and bidi controls, and refuses other controls', async () => {
    const body = `line one\r\n\tindented\nשלום ${RLO}abc\u202C end`;
    const draft = ok(await newDraft({ subject: unique('body'), body }));
    expect(draft.body).toBe(body);
    expectError(await post('updatedraft', { draft_id: draft.id, body: 'nul\u0000here' }), 'bad_request', 'invalid body');
    expectError(await post('updatedraft', { draft_id: draft.id, body: 'vt\u000bhere' }), 'bad_request', 'invalid body');
    expectError(await postJson('updatedraft', { draft_id: draft.id, body: 'half \uD800' }), 'bad_request', 'invalid body');
    expect(ok(await call(svc, 'getdrafts', { group_name: 'demo', limit: 100 }, { auth: alice })).data
      .find((d: any) => String(d.id) === String(draft.id)).body).toBe(body);
  });

  it('a body of only invisible characters is empty, so it cannot be posted', async () => {
    const draft = ok(await newDraft({ subject: unique('blank'), body: `${ZWSP}\u2060 \n` }));
    expect(draft.body).toBe('');
    expectError(await post('postdraft', { draft_id: draft.id }), 'bad_request', 'invalid body');
  });

  it('the topic a draft starts carries the cleaned subject', async () => {
    const subject = unique('Nai\u0308ve\tsubject');
    const draft = ok(await newDraft({ subject, body: 'hello' }));
    const message = ok(await post('postdraft', { draft_id: draft.id }));
    expect(message.subject).toBe(subject.normalize('NFC').replace('\t', ' '));
  });
});

describe('what comes around the rules', () => {
  /** A form body exactly as written, so its %-escapes can be broken. */
  const rawForm = (name: string, form: string): Promise<ApiResponse> => send(svc, `/api/v1/${name}`, 'POST',
    { cookie: alice.cookie, 'content-type': 'application/x-www-form-urlencoded' }, `${form}&csrf=${encodeURIComponent(alice.csrf)}`);

  it.each([
    ['a % without hex digits', 'subject=%ZZ'],
    ['a cut sequence', 'subject=tea%E0%A4%A'],
    ['a byte that is not UTF-8', 'subject=%FF'],
    ['an encoded surrogate', 'subject=%ED%A0%80'],
  ])('broken percent-encoding (%s) is refused, not stored literally', async (_label, subject) => {
    const response = await rawForm('newchat', `group_name=demo&desc=&${subject}`);
    expect(response.status, response.text).toBe(400);
    expect(response.body.object).toBe('error');
    const chats = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: alice })).data;
    expect(chats.filter((c: any) => c.subject.includes('%'))).toEqual([]);
  });

  it('attachment names are cleaned where uploads are read (cleanFileName)', async () => {
    const draft = ok(await newDraft({ subject: unique('files') }));
    const form = new FormData();
    form.append('draft_id', String(draft.id));
    form.append('csrf', alice.csrf);
    for (const name of [`${RLO}gnp.exe`, 'in\u0000voice.pdf', '../../etc/passwd', ZWSP]) {
      form.append('file', new Blob([Buffer.from('x')], { type: 'text/plain' }), name);
    }
    const updated = ok(await call(svc, 'addattachments', {}, { auth: alice, method: 'POST', csrf: false, body: form as never }));
    expect(updated.attachments.map((a: any) => a.filename)).toEqual(['gnp.exe', 'invoice.pdf', 'passwd', 'attachment']);
  });

  it('Params: a refused text field has its own error; text() and html() read any other field by a kind', () => {
    expect(() => new Params({ subject: 'a\u0000' }).string('subject')).toThrow(expect.objectContaining({ type: 'bad_request', extra: 'invalid subject' }));
    expect(() => new Params({ note: 'a\u0000' }).text('note', 'line')).toThrow(expect.objectContaining({ type: 'invalid_value', extra: 'note' }));
    expect(new Params({ note: '<b onclick="x()">b</b>' }).html('note')).toBe('<b>b</b>');
    expect(new Params({ body: '<b onclick="x()">b</b>', body_type: 'html' }).string('body')).toBe('<b>b</b>');
    expect(new Params({ body: '<b onclick="x()">b</b>', body_type: 'text' }).string('body')).toBe('<b onclick="x()">b</b>');
    // Fields that are not text pass as sent (a password is never altered).
    expect(new Params({ password: ' p\u0000w ' }).string('password')).toBe(' p\u0000w ');
  });
});

describe('the rules themselves', () => {
  it('line: controls, bidi controls and lone surrogates refused; breaks to spaces; NFC; blank is empty', () => {
    expect(cleanText('a\u0000', 'line')).toBeUndefined();
    expect(cleanText('a\u2066b\u2069', 'line')).toBeUndefined();
    expect(cleanText('\uD800', 'line')).toBeUndefined();
    expect(cleanText(' a\n\n\tb ', 'line')).toBe('a b');
    expect(cleanText('A\u030A', 'line')).toBe('\u00C5');
    expect(cleanText(`${ZWSP}\u180E`, 'line')).toBe('');
    // Zero-width characters inside visible text belong to it (emoji sequences, joiners in Indic scripts).
    expect(cleanText('👩\u200D💻 \u2764\uFE0F', 'line')).toBe('👩\u200D💻 \u2764\uFE0F');
  });

  it('multiline: tab/LF/CR, U+2028 and bidi controls stay; text is not NFC-normalised', () => {
    const text = 'a\tb\r\nc\u2028d \u202Bx\u202C e\u0301';
    expect(cleanText(text, 'multiline')).toBe(text);
    expect(cleanText('a\u000cb', 'multiline')).toBeUndefined();
    expect(cleanText('a\u007f', 'multiline')).toBeUndefined();
    expect(cleanChatMessage('hi\u0000')).toBeUndefined();
    expect(cleanChatMessage(`${ZWSP}${ZWSP}`)).toBe('');
  });

  it('file names are never refused, only cleaned', () => {
    expect(cleanFileName(`${RLO}gnp.exe`)).toBe('gnp.exe');
    expect(cleanFileName('in\u0000voice.pdf')).toBe('invoice.pdf');
    expect(cleanFileName('../../etc/passwd')).toBe('passwd');
    expect(cleanFileName('C:\\Users\\me\\notes.txt')).toBe('notes.txt');
    expect(cleanFileName('two\nlines.txt')).toBe('two lines.txt');
    expect(cleanFileName('\uD800.txt')).toBe('\uFFFD.txt');
    expect(cleanFileName('e\u0301.txt')).toBe('\u00e9.txt');
    for (const nothing of ['', ZWSP, '..', '.', ' / ', RLO]) expect(cleanFileName(nothing)).toBe('attachment');
    const long = cleanFileName(`${'\u00e9'.repeat(200)}.pdf`);
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(255);
    expect(long.endsWith('\u00e9.pdf')).toBe(true);
  });
});
