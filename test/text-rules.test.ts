import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrokenEncoding, decodeForm, decodeQuery } from '../src/service/form-decode.js';
import { Params } from '../src/service/params.js';
import { cleanChatMessage, cleanFileName, cleanText } from '../src/service/text-rules.js';
import {
  call, expectError, loginAs, ok, send, startTestService, type ApiResponse, type Session, type TestService,
} from './helpers/service.js';

/**
 * Issue #15 item 16: text fields follow one set of rules (src/service/text-rules.ts, applied by Params;
 * the table is in docs/protocol.md "Text fields"). Real calls over HTTPS for what operations store;
 * the decoder and the rules themselves also directly, for what no operation can send yet.
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

describe('strict %-decoding (form-decode.ts) and Params', () => {
  it('decodes forms as fastify does where the encoding is whole', () => {
    const fields = decodeForm('a=1&b=x+y&b=%C3%A9&empty=&flag&c=50%25off');
    expect({ ...fields }).toEqual({ a: '1', b: ['x y', '\u00e9'], empty: '', flag: '', c: '50%off' });
    expect({ ...decodeQuery('/api/v1/x?q=a%20b#frag') }).toEqual({ q: 'a b' });
    expect(Object.getPrototypeOf(decodeForm('__proto__=x'))).toBeNull();
  });

  it.each([
    ['a % without hex digits', 'subject=%ZZ'],
    ['a cut sequence', 'subject=%E0%A4%A'],
    ['a byte that is not UTF-8', 'subject=%FF'],
    ['an encoded surrogate', 'subject=%ED%A0%80'],
    ['one broken copy of a repeated field', 'subject=ok&subject=%'],
  ])('%s marks the field broken instead of keeping its raw text', (_label, form) => {
    expect(decodeForm(form).subject).toBe(BrokenEncoding.instance);
  });

  it('raw bytes that are not UTF-8 are broken too (a body read as bytes)', () => {
    const body = Buffer.concat([Buffer.from('subject='), Buffer.from([0xc3, 0x28]), Buffer.from('&ok=%C3%A9+caf\u00e9')]);
    const fields = decodeForm(body);
    expect(fields.subject).toBe(BrokenEncoding.instance);
    expect(fields.ok).toBe('\u00e9 caf\u00e9');
  });

  it('Params refuses a broken field when it is read, with the field\'s error, and ignores it otherwise', () => {
    const params = new Params(decodeQuery('?subject=%ZZ&limit=%&chat_id=%E0&draft_type=%&unknown=%FF&csrf=%'));
    expect(() => params.string('subject')).toThrow(expect.objectContaining({ type: 'bad_request', extra: 'invalid subject' }));
    expect(() => params.integer('limit')).toThrow(expect.objectContaining({ type: 'invalid_value', extra: 'limit' }));
    expect(() => params.requiredId('chat_id')).toThrow(expect.objectContaining({ type: 'bad_request', extra: 'invalid chat_id' }));
    expect(() => params.oneOf('draft_type', ['draft_type_post'])).toThrow(expect.objectContaining({ extra: 'invalid draft_type' }));
    expect(() => params.string('csrf')).toThrow(expect.objectContaining({ type: 'bad_csrf' }));
    expect(params.has('subject')).toBe(true);
    expect(params.string('other')).toBeUndefined();
  });

  it('a whole value in the body wins over a broken one in the query, and the other way round', () => {
    expect(new Params(decodeQuery('?subject=%ZZ'), { subject: 'fine' }).string('subject')).toBe('fine');
    expect(() => new Params({ subject: 'fine' }, decodeForm('subject=%ZZ')).string('subject')).toThrow();
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
