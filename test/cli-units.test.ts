import { tmpdir } from 'node:os';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { parseApiArgs } from '../src/cli/api-command.js';
import { MboxCounter, parseSince } from '../src/cli/archive-download-command.js';
import { resolveClientSettings } from '../src/cli/client-options.js';
import { htmlToText, redact } from '../src/cli/output.js';
import { createProgress, formatBytes, renderProgress } from '../src/cli/progress.js';
import { UsageError } from '../src/cli/usage-error.js';

describe('api arguments', () => {
  it('take free-form parameters, client flags and the two switches', () => {
    const parsed = parseApiArgs(['searcharchives', '--group_name', 'demo', '--limit=5', '--q=--odd', '--url', 'https://x', '--all']);
    expect(parsed).toMatchObject({
      operation: 'searcharchives', all: true, extended: false,
      params: { group_name: 'demo', limit: '5', q: '--odd' }, client: { url: 'https://x' },
    });
    expect(parseApiArgs(['newchat', '--extended', '--subject', '']).params).toEqual({ subject: '' });
    expect(parseApiArgs(['bogus', '--help']).help).toBe(true);
  });

  it.each([
    [[], /which operation/],
    [['nosuchop'], /unknown operation nosuchop/],
    [['getchats', '--group_name'], /--group_name needs a value/],
    [['getchats', '--group_name', '--limit', '1'], /--group_name needs a value/],
    [['getchats', 'stray'], /unexpected argument stray/],
    [['getchats', '-x'], /unknown option -x/],
    [['getchats', '--all=yes'], /--all takes no value/],
    [['getchats', '--all', '--extended'], /do not go together/],
    [['newchat', '--all'], /list operations only/],
    [['downloadarchives'], /archive download/],
    [['getchats', '--a-b', '1'], /unknown parameter --a-b for getchats \(it takes --group_id, --group_name, --limit/],
    [['getchats', '--groupname', 'demo'], /^unknown parameter --groupname for getchats \(did you mean --group_name\?\)$/],
    [['getchats', '--group-name', 'demo'], /did you mean --group_name\?/],
    [['newchat', '--group_name', 'demo', '--subjet', 'x'], /unknown parameter --subjet for newchat \(did you mean --subject\?\)/],
    [['getchats', '--limit', '1', '--limit', '2'], /given twice/],
  ])('refuse %j', (args, message) => {
    expect(() => parseApiArgs(args)).toThrow(UsageError);
    expect(() => parseApiArgs(args)).toThrow(message);
  });
});

describe('--since', () => {
  it('turns ISO date-times into YYYY-MM-DDThh:mm:ssZ', () => {
    expect(parseSince('2024-05-01T10:00:00Z')).toBe('2024-05-01T10:00:00Z');
    expect(parseSince('2024-05-01T12:30+02:00')).toBe('2024-05-01T10:30:00Z');
    expect(parseSince('2024-05-01T12:30:15.750-0100')).toBe('2024-05-01T13:30:15Z');
    const local = new Date(2024, 4, 1, 9, 5, 0);
    expect(parseSince('2024-05-01 09:05')).toBe(local.toISOString().replace(/\.\d{3}Z$/, 'Z'));
    expect(parseSince('2024-05-01')).toBe(new Date(2024, 4, 1).toISOString().replace(/\.\d{3}Z$/, 'Z'));
  });

  it.each(['yesterday', '2024-02-30T00:00:00Z', '2024-13-01', '2024-05-01T24:00:00Z', '1714557600'])('refuses %s', (text) => {
    expect(() => parseSince(text)).toThrow(UsageError);
  });
});

describe('credentials', () => {
  const place = { GROUPWIRE_URL: 'https://example.test' };

  it('come from flags before the environment, a token before a password', () => {
    expect(resolveClientSettings({}, { ...place, GROUPWIRE_EMAIL: 'a@x', GROUPWIRE_PASSWORD: 'pw1' }).credentials)
      .toEqual({ email: 'a@x', password: 'pw1', twofactor: undefined });
    expect(resolveClientSettings({}, { ...place, GROUPWIRE_EMAIL: 'a@x', GROUPWIRE_PASSWORD: 'pw1', GROUPWIRE_TOKEN: 't1' }).credentials)
      .toEqual({ token: 't1', scheme: 'basic' });
    expect(resolveClientSettings({ password: 'pw2', twofactor: '123456' }, { ...place, GROUPWIRE_EMAIL: 'a@x', GROUPWIRE_TOKEN: 't1' }).credentials)
      .toEqual({ email: 'a@x', password: 'pw2', twofactor: '123456' });
    expect(resolveClientSettings({ token: 't2', 'token-scheme': 'bearer' }, place).credentials).toEqual({ token: 't2', scheme: 'bearer' });
    expect(resolveClientSettings({ url: 'https://flag.test' }, { ...place, GROUPWIRE_TOKEN: 't' }).baseUrl).toBe('https://flag.test');
  });

  it('missing ones are usage errors naming what to set', () => {
    // A folder without a demo file: nothing to fall back on.
    expect(() => resolveClientSettings({}, {}, tmpdir())).toThrow(/GROUPWIRE_URL/);
    expect(() => resolveClientSettings({}, place)).toThrow(/GROUPWIRE_EMAIL and GROUPWIRE_PASSWORD, or GROUPWIRE_TOKEN/);
    expect(() => resolveClientSettings({ email: 'a@x' }, place)).toThrow(/GROUPWIRE_PASSWORD/);
  });

  it('are registered as secrets that never print', () => {
    resolveClientSettings({}, { ...place, GROUPWIRE_EMAIL: 'a@x', GROUPWIRE_PASSWORD: 's3cret-pw' });
    expect(redact('login failed for s3cret-pw!')).toBe('login failed for ***!');
  });
});

describe('progress', () => {
  it('draws nothing when stderr is not a terminal', () => {
    const written: string[] = [];
    const progress = createProgress('downloading', { isTTY: false, write: (text) => written.push(text) }, 0);
    progress.update(1000);
    progress.done();
    expect(written).toEqual([]);
  });

  it('on a terminal shows a spinner with bytes, or a bar with the total, and clears the line', () => {
    const written: string[] = [];
    const progress = createProgress('downloading demo', { isTTY: true, columns: 100, write: (text) => written.push(text) }, 0);
    progress.update(512);
    progress.update(3 * 1024 * 1024);
    progress.done();
    progress.done();
    expect(written).toEqual(['\r\x1b[Kdownloading demo | 512 B', '\r\x1b[Kdownloading demo / 3.0 MiB', '\r\x1b[K']);
    expect(renderProgress('x', 512, 1024, 0, 80)).toBe(`x [${'#'.repeat(15)}${'-'.repeat(15)}]  50% 512 B of 1.0 KiB`);
    expect(formatBytes(1536)).toBe('1.5 KiB');
  });
});

describe('mbox counting', () => {
  it('counts From lines across chunk boundaries and passes the bytes on unchanged', async () => {
    const mbox = 'From a@x Mon\nbody\n>From quoted\n\nFrom b@x Tue\nFrom: "B"\n\nhi\n\nFrom c@x Wed\n\n';
    for (const size of [1, 2, 3, 5, 7, 64]) {
      const chunks = Array.from({ length: Math.ceil(mbox.length / size) }, (_, i) => Buffer.from(mbox.slice(i * size, (i + 1) * size)));
      const counter = new MboxCounter();
      const received: Buffer[] = [];
      await pipeline(Readable.from(chunks), counter, new Writable({
        write(chunk: Buffer, _encoding, done) {
          received.push(chunk);
          done();
        },
      }));
      expect([counter.messages, counter.bytes]).toEqual([3, mbox.length]);
      expect(Buffer.concat(received).toString()).toBe(mbox);
    }
  });
});

describe('html entries', () => {
  it('become one line of text', () => {
    expect(htmlToText('<a href="/g/demo/member/1">Mo</a> created the chat &quot;Fish &amp; &lt;Chips&gt;&quot; &#233;&#x41;\n'))
      .toBe('Mo created the chat "Fish & <Chips>" éA');
  });
});
