import { describe, it } from 'vitest';
import { decodeEntities, htmlToLine, htmlToText, withoutTags } from '../src/api/html-text.js';
import { visibleControls, visibleLines } from '../src/api/visible-text.js';
import { endOfString } from '../src/api/json-text.js';
import { parseWireJson, quoteLongIntegers } from '../src/api/wire-json.js';
import { wireLine } from '../src/api/wire-line.js';
import { htmlToText as cliHtmlToText, redact } from '../src/cli/output.js';
import { decodeForm, queryOf } from '../src/service/form-decoding.js';
import { nestingBound, sanitizeHtml, tooCostlyToParse } from '../src/service/html-sanitize.js';
import { encodeHeaderText, messageIdLocalPart, quoteFromLines } from '../src/service/mbox.js';
import { hashtagNames } from '../src/service/posting.js';
import { summarize } from '../src/service/present.js';
import { cleanMediaType } from '../src/service/routes/drafts.js';
import {
  couldMatch, matchText, normalizeWord, parseSearchQuery, tokenizeWords, withoutTrailingPunctuation,
} from '../src/service/search-query.js';
import { bodyText, excerpt, looksLikeHtml, withoutSignature } from '../src/service/search-text.js';
import { cleanChatMessage, cleanFileName, cleanText, isInvisible } from '../src/service/text-rules.js';
import { expectLinearOnAdversarialText, repeatTo } from './helpers/adversarial-text.js';

/**
 * Issue #31, the class: every regular expression and text transform of the local service and the
 * client (src/service, src/api, src/cli; src/gateway and src/mail have their own file) that sees text
 * a member or the service sent runs in linear time. Each is timed on every 1 MiB adversarial shape
 * (test/helpers/adversarial-text.ts) against a bound no quadratic version can meet. The figures before
 * the fixes (same machine): nestingBound 2.8 s for 4 KB of `<a` (cubic), htmlToText 1.5 s for 64 KB
 * of `<`, decodeForm 88 s for 256 KB of `a&`; each now takes milliseconds for 1 MiB.
 */

const SIGNATURE = 'Ben Bennett\nAcme Widgets';

describe('linear time on 1 MiB of adversarial text: the local service', () => {
  it('HTML sanitising and its pre-check (html-sanitize.ts)', () => {
    expectLinearOnAdversarialText(nestingBound);
    expectLinearOnAdversarialText(tooCostlyToParse);
    expectLinearOnAdversarialText(sanitizeHtml);
  });

  it('the text rules of every field (text-rules.ts)', () => {
    expectLinearOnAdversarialText((text) => cleanText(text, 'line'));
    expectLinearOnAdversarialText((text) => cleanText(text, 'multiline'));
    expectLinearOnAdversarialText((text) => cleanText(text, 'html'));
    expectLinearOnAdversarialText(cleanChatMessage);
    expectLinearOnAdversarialText(cleanFileName);
    expectLinearOnAdversarialText(isInvisible);
  });

  it('snippets and summaries (present.ts)', () => {
    expectLinearOnAdversarialText((text) => summarize(text, true));
    expectLinearOnAdversarialText((text) => summarize(text, false));
  });

  it('search: the query, the searched text, the match and the excerpt (search-query.ts, search-text.ts)', () => {
    expectLinearOnAdversarialText(parseSearchQuery);
    expectLinearOnAdversarialText((text) => parseSearchQuery(`#${text}`));
    expectLinearOnAdversarialText(withoutTrailingPunctuation);
    expectLinearOnAdversarialText(tokenizeWords);
    expectLinearOnAdversarialText(normalizeWord);
    expectLinearOnAdversarialText((text) => bodyText(text, true));
    expectLinearOnAdversarialText((text) => bodyText(text, false));
    expectLinearOnAdversarialText(looksLikeHtml);
    expectLinearOnAdversarialText((text) => withoutSignature(text, SIGNATURE));
    expectLinearOnAdversarialText((text) => excerpt(text, text.length >> 1));
    // A long phrase over a body that repeats its start: the match is the tokens plus the phrase.
    const phrase = parseSearchQuery(`"${'a '.repeat(400)}b"`);
    expectLinearOnAdversarialText((text) => matchText(phrase, [], tokenizeWords(text)));
    expectLinearOnAdversarialText((text) => couldMatch(phrase, [text]));
  });

  it('form and query decoding (form-decoding.ts)', () => {
    expectLinearOnAdversarialText((text) => decodeForm(text, 'form body'));
    expectLinearOnAdversarialText((text) => queryOf(`/api/v1/x?${text}`));
  });

  it('the archive (mbox.ts), hashtags of a subject (posting.ts), an upload\'s media type (drafts.ts)', () => {
    expectLinearOnAdversarialText(quoteFromLines);
    expectLinearOnAdversarialText(encodeHeaderText);
    expectLinearOnAdversarialText(messageIdLocalPart);
    expectLinearOnAdversarialText(hashtagNames);
    expectLinearOnAdversarialText(cleanMediaType);
    expectLinearOnAdversarialText((text) => cleanMediaType(`text/plain;${text}`));
  });
});

describe('linear time on 1 MiB of adversarial text: the client and the command line', () => {
  it('HTML as text (api/html-text.ts, cli/output.ts)', () => {
    expectLinearOnAdversarialText(htmlToText);
    expectLinearOnAdversarialText(htmlToLine);
    expectLinearOnAdversarialText(decodeEntities);
    expectLinearOnAdversarialText(withoutTags);
    expectLinearOnAdversarialText(cliHtmlToText);
  });

  it('control characters shown (api/visible-text.ts) and secrets redacted (cli/output.ts)', () => {
    expectLinearOnAdversarialText(visibleControls);
    expectLinearOnAdversarialText(visibleLines);
    expectLinearOnAdversarialText(redact);
  });

  it('the service\'s JSON read keeping ids (api/wire-json.ts, json-text.ts) and the wire line (wire-line.ts)', () => {
    expectLinearOnAdversarialText(quoteLongIntegers);
    expectLinearOnAdversarialText((text) => parseWireJson(JSON.stringify({ id: 12345678901234567890n.toString(), body: text, user_id: 1 })));
    expectLinearOnAdversarialText((text) => endOfString(JSON.stringify(text), 0));
    expectLinearOnAdversarialText((text) => wireLine(JSON.stringify({ object: 'chat_message', id: 1, message: text })));
    // Long digit runs between strings, where the quoting scan measures numbers.
    expectLinearOnAdversarialText((text) => quoteLongIntegers(`[${repeatTo('12345678901234567890,', text.length)}1]`));
  });
});
