import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_HTML_NESTING, nestingBound, sanitizeHtml } from '../src/service/html-sanitize.js';
import { cleanText } from '../src/service/text-rules.js';
import { call, expectError, loginAs, ok, startTestService, type ApiResponse, type Session, type TestService } from './helpers/service.js';

/**
 * Issue #15 item 17: HTML fields (a chat's desc, HTML draft and message bodies) are sanitised on the
 * way in (src/service/html-sanitize.ts, read through Params; docs/protocol.md "HTML fields"); plain text
 * stays as it was sent. Real calls over HTTPS: each attack goes in and comes back clean.
 */

const ATTACKS: Array<[string, string]> = [
  ['a script element', '<p>hi</p><script>alert(1)</script>'],
  ['a script with odd casing and attributes', '<ScRiPt type="text/javascript" src="https://evil.example/x.js"></ScRiPt>'],
  ['an event handler', '<img src="x" onerror="alert(1)"><p onclick="alert(2)">p</p>'],
  ['an svg onload', '<svg onload="alert(1)"><circle r="1"/></svg>'],
  ['a javascript: link', '<a href="javascript:alert(1)">click</a>'],
  ['an obfuscated javascript: link', '<a href="  JaVa&#x09;ScRiPt&colon;alert(1)">a</a><a href="java\tscript:alert(2)">b</a>'],
  ['a vbscript: and a data: link', '<a href="vbscript:msgbox(1)">v</a><a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">d</a>'],
  ['an iframe', '<iframe src="https://evil.example/"></iframe><iframe srcdoc="<script>alert(1)</script>"></iframe>'],
  ['style with expression()', '<div style="width: expression(alert(1))">w</div><style>body{background:url(javascript:alert(1))}</style>'],
  ['object, embed and form', '<object data="x.swf"></object><embed src="x.swf"><form action="https://evil.example/"><input name="pw"></form>'],
  ['meta refresh and base', '<meta http-equiv="refresh" content="0;url=javascript:alert(1)"><base href="https://evil.example/">'],
  ['a noscript mutation', '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>'],
  ['a split tag', '<scr<script>ipt>alert(1)</scr</script>ipt>'],
  ['a protocol-relative link', '<a href="//evil.example/">x</a>'],
];

const ALLOWED_TAGS = new Set([
  'p', 'br', 'div', 'span', 'hr', 'b', 'i', 'em', 'strong', 'u', 's', 'strike', 'sub', 'sup', 'small', 'mark', 'a',
  'blockquote', 'q', 'cite', 'pre', 'code', 'kbd', 'samp', 'ul', 'ol', 'li', 'dl', 'dt', 'dd',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tfoot', 'tr', 'th', 'td', 'caption',
]);
const ALLOWED_ATTRIBUTES = new Set(['href', 'dir', 'lang', 'title', 'start', 'colspan', 'rowspan']);

/** Fails unless `html` has only allowed tags and attributes, and only http(s)/mailto links. */
function expectClean(html: string): void {
  for (const [, tag, attributes] of html.matchAll(/<\/?\s*([a-zA-Z0-9:-]+)([^>]*)>/g)) {
    expect(ALLOWED_TAGS, `tag <${tag}> in ${html}`).toContain(tag!.toLowerCase());
    for (const [, name, value] of attributes!.matchAll(/([^\s=/]+)(?:="([^"]*)")?/g)) {
      expect(ALLOWED_ATTRIBUTES, `attribute ${name} in ${html}`).toContain(name!.toLowerCase());
      if (name === 'href') expect(value, html).toMatch(/^(https?:|mailto:)/i);
    }
  }
  expect(html).not.toMatch(/javascript:|vbscript:|expression\(|onerror|onload|onclick/i);
}

const FORMATTING =
  '<p>Hello <b>bold</b> <i>it</i> <em>em</em> <strong>strong</strong><br />next</p>' +
  '<ul><li>one</li></ul><ol><li>two</li></ol><blockquote>quoted</blockquote><pre><code>x &lt; y</code></pre>' +
  '<a href="https://example.com/a?b=1&amp;c=2">web</a> <a href="http://example.com/">plain</a> <a href="mailto:me@example.com">mail</a>';

describe('sanitizeHtml', () => {
  it.each(ATTACKS)('%s goes', (_label, html) => {
    expectClean(sanitizeHtml(html));
  });

  it('ordinary formatting stays as it was', () => {
    expect(sanitizeHtml(FORMATTING)).toBe(FORMATTING);
  });

  it('text is kept (escaped where needed), the writing direction too', () => {
    expect(sanitizeHtml('<p dir="rtl">שלום</p> a < b')).toBe('<p dir="rtl">שלום</p> a &lt; b');
    expect(sanitizeHtml('<p>hi</p><script>alert(1)</script>after')).toBe('<p>hi</p>after');
  });

  it('bounds how deep HTML could nest in one pass, from above', () => {
    expect(nestingBound('<div><p>a<b>b</b></p><br><img src=x><hr/></div>')).toBe(3);
    expect(nestingBound('<b></x><b></x><b>')).toBe(3); // a stray end tag closes nothing
    expect(nestingBound('<p>one<p>two<p>three')).toBe(3); // implied ends are not guessed: a bound
    expect(nestingBound('<B>x</b>'.repeat(5))).toBe(1);
    // What makes a tag (#31 item 1: a scan, no longer a backtracking expression): `<`, a letter, up to the next `>`.
    // `< b>` and `<1>` are no tags, `<b/>` and `<br>` open nothing; `<b / >` opens (its `/` is not last), so does `<a<b>` (the name `a<b`).
    expect(nestingBound('< b><1><b/><br><b / ><a<b>')).toBe(2);
    expect(nestingBound('<b title="x>y"><i>')).toBe(2); // the tag ends at its first `>`
    expect(nestingBound('<b<b<b')).toBe(0); // no `>`: no tag
    expect(nestingBound('<b\u00a0x>'.repeat(3))).toBe(3); // a Unicode space ends the name `b`
  });

  it('HTML that could nest too deep is refused by the rules and never parsed', () => {
    const deep = '<b>'.repeat(MAX_HTML_NESTING + 1);
    expect(cleanText(deep, 'html')).toBeUndefined();
    // Called directly (a route sanitising a stored body), it is shown as text, never run nor parsed.
    expect(sanitizeHtml(`${deep}<script>`)).toBe(`${'&lt;b&gt;'.repeat(MAX_HTML_NESTING + 1)}&lt;script&gt;`);
    const nested = `${'<div>'.repeat(60)}deep${'</div>'.repeat(60)}`;
    expect(cleanText(nested, 'html')).toBe(nested);
  });

  it('cleaning what it cleaned changes nothing', () => {
    for (const [, html] of ATTACKS) expect(sanitizeHtml(sanitizeHtml(html))).toBe(sanitizeHtml(html));
  });
});

describe('HTML fields over the API', () => {
  let svc: TestService;
  let alice: Session;
  let n = 0;

  beforeAll(async () => {
    svc = await startTestService();
    alice = await loginAs(svc, 'alice');
  });

  afterAll(async () => {
    await svc?.close();
  });

  const post = (name: string, params: Record<string, unknown>): Promise<ApiResponse> =>
    call(svc, name, params, { auth: alice, method: 'POST' });
  const get = (name: string, params: Record<string, unknown>): Promise<ApiResponse> => call(svc, name, params, { auth: alice });

  it.each(ATTACKS)('a chat desc with %s comes back clean (newchat, updatechat, getchats)', async (_label, html) => {
    const chat = ok(await post('newchat', { group_name: 'demo', subject: `desc ${++n}`, desc: html }));
    expectClean(chat.desc);
    const updated = ok(await post('updatechat', { chat_id: chat.id, desc: `<p>again</p>${html}` }));
    expectClean(updated.desc);
    expect(updated.desc.startsWith('<p>again</p>')).toBe(true);
    const listed = ok(await get('getchats', { group_name: 'demo', limit: 100 })).data.find((c: any) => String(c.id) === String(chat.id));
    expect(listed.desc).toBe(updated.desc);
  });

  it.each(ATTACKS)('an HTML draft body with %s comes back clean, and so does the message posted', async (_label, html) => {
    const draft = ok(await post('newdraft', {
      group_name: 'demo', draft_type: 'draft_type_post', subject: `html ${++n}`, body: `<p>start</p>${html}`, body_type: 'html',
    }));
    expectClean(draft.body);
    const updated = ok(await post('updatedraft', { draft_id: draft.id, body: `<p>edited</p>${html}`, body_type: 'html' }));
    expectClean(updated.body);
    const message = ok(await post('postdraft', { draft_id: draft.id }));
    expectClean(message.body);
    expect(message.body.startsWith('<p>edited</p>')).toBe(true);
    expect(message.is_plain_text).toBe(false);
  });

  it('formatting in a desc and an HTML body stays', async () => {
    expect(ok(await post('newchat', { group_name: 'demo', subject: `fmt ${++n}`, desc: FORMATTING })).desc).toBe(FORMATTING);
    const draft = ok(await post('newdraft', {
      group_name: 'demo', draft_type: 'draft_type_post', subject: `fmt ${++n}`, body: FORMATTING, body_type: 'html',
    }));
    expect(draft.body).toBe(FORMATTING);
  });

  it('a plain-text body stays exactly as sent, markup and all', async () => {
    const text = '<script>alert(1)</script> is how a script looks; a < b & c > d; <a href="javascript:x">';
    const draft = ok(await post('newdraft', { group_name: 'demo', draft_type: 'draft_type_post', subject: `text ${++n}`, body: text }));
    expect(draft.body).toBe(text);
    const message = ok(await post('postdraft', { draft_id: draft.id }));
    expect(message.body).toBe(text);
    expect(message.is_plain_text).toBe(true);
  });

  it('a desc that is only a script is an empty desc, which newchat accepts', async () => {
    const chat = ok(await post('newchat', { group_name: 'demo', subject: `empty ${++n}`, desc: '<script>alert(1)</script>' }));
    expect(chat.desc).toBe('');
  });

  it('an HTML desc or body nested absurdly deep is refused (a parser costs its square)', async () => {
    const deep = '<b>'.repeat(20_000);
    expectError(await post('newchat', { group_name: 'demo', subject: `deep ${++n}`, desc: deep }), 'bad_request', 'invalid desc');
    expectError(await post('newdraft', {
      group_name: 'demo', draft_type: 'draft_type_post', subject: `deep ${++n}`, body: '<i>'.repeat(200_000), body_type: 'html',
    }), 'bad_request', 'invalid body');
  });

  it('an HTML desc is refused, not cleaned, when it holds NUL', async () => {
    expectError(await post('newchat', { group_name: 'demo', subject: `nul ${++n}`, desc: '<p>\u0000</p>' }), 'bad_request', 'invalid desc');
  });
});
