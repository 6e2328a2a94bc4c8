import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/service/errors.js';
import { couldMatch, matchText, parseSearchQuery, tokenizeWords } from '../src/service/search-query.js';
import { htmlToText } from '../src/api/html-text.js';
import { excerpt, withoutSignature } from '../src/service/search-text.js';

describe('parseSearchQuery', () => {
  it('separates words, phrases, hashtags and poster ids', () => {
    expect(parseSearchQuery('  Relay  "Weekly Meeting" #Urgent, posterid:Ab+/=:7 café ')).toEqual({
      words: ['relay', 'cafe'],
      phrases: [['weekly', 'meeting']],
      hashtags: ['urgent'],
      posterIds: ['Ab+/=:7'],
    });
  });

  it('reads punctuated tokens as phrases and an unclosed quote to the end', () => {
    expect(parseSearchQuery('e-mail "open ended').phrases).toEqual([['e', 'mail'], ['open', 'ended']]);
  });

  it('takes a quoted posterid value', () => {
    expect(parseSearchQuery('posterid:"x y" z').posterIds).toEqual(['x y']);
  });

  it('matches an empty query to nothing in particular', () => {
    expect(parseSearchQuery('')).toEqual({ words: [], phrases: [], hashtags: [], posterIds: [] });
    expect(parseSearchQuery('# -- ""')).toEqual({ words: [], phrases: [], hashtags: [], posterIds: [] });
  });

  it('refuses -#tag and an empty posterid', () => {
    const refusal = (q: string): ApiError | undefined => {
      try {
        parseSearchQuery(q);
      } catch (error) {
        return error as ApiError;
      }
      return undefined;
    };
    expect(refusal('a -#tag')?.toBody()).toEqual({
      object: 'error', type: 'bad_request', extra: '-#tag (exclude hashtag) is not yet implemented',
    });
    expect(refusal('posterid:')?.extra).toBe('invalid posterid');
    // Inside quotes it is text, not syntax.
    expect(refusal('"-#tag"')).toBeUndefined();
  });
});

describe('matchText', () => {
  const subject = tokenizeWords('Re: Release planning');
  const body = tokenizeWords('The relay ships. The RELAY is ready.');

  it('needs every term, counts every hit and finds the first one in the body', () => {
    expect(matchText(parseSearchQuery('rel'), subject, body)).toEqual({ hits: 3, firstBodyHit: 4 });
    expect(matchText(parseSearchQuery('"relay is" planning'), subject, body)).toEqual({ hits: 2, firstBodyHit: 21 });
    expect(matchText(parseSearchQuery('relay missing'), subject, body)).toBeUndefined();
    expect(matchText(parseSearchQuery('planning'), subject, body)).toEqual({ hits: 1, firstBodyHit: undefined });
  });
});

describe('word folding', () => {
  it('keeps combining marks in their word and folds accents and case', () => {
    expect(tokenizeWords('NAI\u0308VE Café').map((t) => t.word)).toEqual(['naive', 'cafe']);
  });

  it('pre-checks ASCII text by substring, and leaves other text to the full match', () => {
    expect(couldMatch(parseSearchQuery('rel "is ready"'), ['Release', 'It IS READY'])).toBe(true);
    expect(couldMatch(parseSearchQuery('relay'), ['Release', 'It is ready'])).toBe(false);
    expect(couldMatch(parseSearchQuery('cafe'), ['Lunch', 'at the café'])).toBe(true);
  });
});

describe('search text', () => {
  it('turns HTML into text with line breaks at block ends', () => {
    expect(htmlToText('<p>One &amp; <b>two</b></p><div>three<br/>four&nbsp;&#233;</div><style>p{}</style>'))
      .toBe('One & two\nthree\nfour é\n ');
  });

  it('drops the text after a signature delimiter and the stored signature', () => {
    expect(withoutSignature('Hello\n-- \nBen\nAcme', '')).toBe('Hello\n');
    expect(withoutSignature('-- \r\nBen', '')).toBe('');
    expect(withoutSignature('Hello\r\n--\r\nBen', '')).toBe('Hello\r\n');
    // Only \n starts a line: a "-- " after U+2028, U+2029 or a lone \r is text, not a signature.
    for (const separator of ['\u2028', '\u2029', '\r', '\u0085']) {
      expect(withoutSignature(`Hello${separator}-- ${separator}keep this`, '')).toBe(`Hello${separator}-- ${separator}keep this`);
    }
    expect(withoutSignature('Hello\n\nBen Bennett\n  Acme   Widgets\nPS', 'Ben Bennett\nAcme Widgets')).toBe('Hello\n\n \nPS');
    expect(withoutSignature('a -- b', '')).toBe('a -- b');
  });

  it('excerpts around a hit, at word boundaries, within the length', () => {
    const text = `${'word '.repeat(100)}needle ${'tail '.repeat(100)}`;
    const summary = excerpt(text, text.indexOf('needle'));
    expect(summary.length).toBeLessThanOrEqual(200);
    expect(summary).toMatch(/^…word .* needle tail .*…$/);
    expect(excerpt('short text', undefined)).toBe('short text');
  });
});
