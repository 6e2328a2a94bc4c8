import { describe, expect, test } from 'vitest';
import { safeName, safeText, stripControls } from '../plugins/http-api/line.js';

/**
 * What the HTTP API hands its webhooks and stream (plugins/http-api/line.ts): every way of breaking a
 * line stays a line break, every other control goes, and a name stays on one line.
 */
describe('http-api line text', () => {
  test('CR, CR LF, NEL, U+2028 and U+2029 are line breaks, not nothing', () => {
    expect(stripControls('a\rb\r\nc\u0085d\u2028e\u2029f')).toBe('a\nb\nc\nd\ne\nf');
  });

  test('other controls and bidi controls go; tab and newline stay', () => {
    expect(stripControls('x\u0000\u0007\u001b[2J\u007f\u009b\u202e\u2066y\tz\n')).toBe('x[2Jy\tz\n');
  });

  test('a name is one line whatever breaks it holds', () => {
    expect(safeName('eve\r<alice>\u2028x\n\ty')).toBe('eve <alice> x y');
  });

  test('mass mentions still get their zero-width space after the breaks are made', () => {
    expect(safeText('hi\r@everyone')).toBe('hi\n@\u200beveryone');
  });
});
