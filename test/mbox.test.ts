import { describe, expect, it } from 'vitest';
import {
  asctime, encodeHeaderText, mboxMessage, messageIdLocalPart, quoteFromLines, rfc2822Date, type MboxEntry,
} from '../src/service/mbox.js';

const ENTRY: MboxEntry = {
  senderEmail: 'ann@example.com',
  senderName: 'Ann Example',
  groupAddress: 'demo@groups.local',
  subject: 'Hello',
  messageId: '42',
  msgNum: 7,
  created: Date.UTC(2026, 10, 1, 9, 5, 7),
  body: 'Hi there\n',
  isPlainText: true,
};

describe('dates', () => {
  it('writes asctime with a space-padded day, in UTC', () => {
    expect(asctime(Date.UTC(2026, 10, 1, 9, 5, 7))).toBe('Sun Nov  1 09:05:07 2026');
    expect(asctime(Date.UTC(2026, 10, 21, 19, 18, 29))).toBe('Sat Nov 21 19:18:29 2026');
  });

  it('writes RFC 2822 dates', () => {
    expect(rfc2822Date(Date.UTC(2026, 10, 1, 9, 5, 7))).toBe('Sun, 01 Nov 2026 09:05:07 +0000');
  });
});

describe('quoteFromLines (mboxrd)', () => {
  it('adds one > to lines that are, or quote, a From separator', () => {
    expect(quoteFromLines('From me\n>From you\n>>From them')).toBe('>From me\n>>From you\n>>>From them');
  });

  it('leaves other lines alone', () => {
    const text = 'From: header-like\n From indented\nFromage\nfrom lower case\n> From spaced';
    expect(quoteFromLines(text)).toBe(text);
  });
});

describe('header text', () => {
  it('keeps ASCII as is and encodes the rest as RFC 2047 words of at most 75 characters', () => {
    expect(encodeHeaderText('Plain subject')).toBe('Plain subject');
    const encoded = encodeHeaderText('Grüße aus Köln, '.repeat(6));
    for (const word of encoded.split(' ')) {
      expect(word).toMatch(/^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/);
      expect(word.length).toBeLessThanOrEqual(75);
    }
    const decoded = encoded.split(' ').map((w) => Buffer.from(w.slice(10, -2), 'base64').toString('utf8')).join('');
    expect(decoded).toBe('Grüße aus Köln, '.repeat(6));
  });

  it('never lets a line break start a new header', () => {
    expect(encodeHeaderText('Hi\r\nBcc: someone@example.com')).toBe('Hi Bcc: someone@example.com');
  });

  it('turns any id into a valid Message-Id left part, reversibly', () => {
    expect(messageIdLocalPart('12345')).toBe('12345');
    const id = 'g1~a:b..c%d/e+f=&';
    const local = messageIdLocalPart(id);
    expect(local).toMatch(/^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+$/);
    expect(decodeURIComponent(local)).toBe(id);
  });
});

describe('mboxMessage', () => {
  it('writes the separator, the headers, a blank line, the body and a blank line', () => {
    expect(mboxMessage(ENTRY)).toBe([
      'From ann@example.com Sun Nov  1 09:05:07 2026',
      'Date: Sun, 01 Nov 2026 09:05:07 +0000',
      'From: "Ann Example" <ann@example.com>',
      'To: demo@groups.local',
      'Subject: Hello',
      'Message-Id: <42@groups.local>',
      'X-Msg-Num: 7',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      'Hi there',
      '',
      '',
      '',
    ].join('\n'));
  });

  it('marks HTML, quotes From lines, keeps CRLF and escapes the display name', () => {
    const text = mboxMessage({ ...ENTRY, isPlainText: false, senderName: 'Ann "The Boss"', body: '<p>x</p>\r\nFrom here\r\n' });
    expect(text).toContain('\nContent-Type: text/html; charset=utf-8\n');
    expect(text).toContain('\nFrom: "Ann \\"The Boss\\"" <ann@example.com>\n');
    // The body as it was (the archive gives bodies back exactly), its From line quoted.
    expect(text.endsWith('\n\n<p>x</p>\r\n>From here\r\n\n\n')).toBe(true);
  });

  it('writes an empty body as nothing between the two blank lines', () => {
    expect(mboxMessage({ ...ENTRY, body: '' }).endsWith('Content-Transfer-Encoding: 8bit\n\n\n')).toBe(true);
  });
});
