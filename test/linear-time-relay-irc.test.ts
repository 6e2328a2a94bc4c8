import { describe, expect, test } from 'vitest';
import { expectLinearOnAdversarialText, LINEAR_BOUND_MS } from './helpers/adversarial-text.js';
import { outgoing } from './helpers/outgoing-everywhere.js';
import { graphemesOf } from '../plugins/relay-irc/graphemes.js';
import { hasTagNamed, rawAttribute, tagsNamed } from '../plugins/relay-irc/html-tags.js';
import { decodeEntities, markupToText, tidyLines } from '../plugins/relay-irc/markup.js';
import { antiPing, guardCommandLine, normalizeLineBreaks, safeLine, safeName, splitUtf8, stripIrcFormatting } from '../plugins/relay-irc/irc-text.js';
import { chatToIrcLines, fill as ircFill, ircToChatText, textToIrcLines } from '../plugins/relay-irc/format.js';
import { cut, renderForIrc } from '../plugins/relay-irc/render.js';
import { ircLower } from '../plugins/relay-irc/routes.js';

/**
 * Issue #31, the class, for relay-irc (its own file so the suite's two workers share the linear-time
 * tests): every text transform on the way to and from IRC runs in linear time on each 1 MiB adversarial
 * shape (test/helpers/adversarial-text.ts); and item 9, long runs of spaces in markup.
 */

const TIMEOUT = 240_000;
const toIrc = { template: '{prefix}<{name}> {text}', antiPing: true, roomBytes: 400, maxLines: 0 };

const transforms: Record<string, (text: string) => unknown> = {
  markupToText,
  'markupToText of HTML': (text) => markupToText(`<p>${text}</p><pre>${text}</pre><a href="${text}">${text}</a>`),
  decodeEntities,
  tidyLines,
  'tagsNamed': (text) => tagsNamed(text, () => true),
  'hasTagNamed': (text) => hasTagNamed(text, new Set(['a', 'b'])),
  'rawAttribute': (text) => rawAttribute(text, 'href'),
  graphemesOf,
  stripIrcFormatting, normalizeLineBreaks, safeLine, antiPing, guardCommandLine, ircLower,
  'safeName': (text) => safeName(text, 'someone'),
  'splitUtf8': (text) => splitUtf8(text, 400),
  'cut': (text) => cut(text, 40),
  'fill': (text) => ircFill(text, { name: text, text }),
  'renderForIrc message': (text) => renderForIrc(outgoing(text), 'prefix', toIrc),
  'renderForIrc action': (text) => renderForIrc(outgoing(text, 'action'), 'prefix', toIrc),
  'renderForIrc edit': (text) => renderForIrc(outgoing(text, 'edit'), 'prefix', toIrc),
  'chatToIrcLines': (text) => chatToIrcLines({ message: text, display_name: text, user_name: text }, text, toIrc),
  'textToIrcLines one line': (text) => textToIrcLines(text, { display_name: text }, '', { ...toIrc, oneLine: true }),
  'ircToChatText': (text) => ircToChatText('privmsg', text, '#c', text, { privmsg: '<{nick}> {text}', action: '* {nick} {text}' }),
};

describe('linear time on 1 MiB of adversarial text (#31): relay-irc', () => {
  for (const [name, transform] of Object.entries(transforms)) {
    test(`relay-irc: ${name}`, () => expectLinearOnAdversarialText(transform), TIMEOUT);
  }
});

describe('relay-irc: a long line of spaces does not backtrack (#31 item 9)', () => {
  // Before: a 10,000-character line took 38 ms in markupToText (62 ms to IRC lines), 64 KB 1.6 s (2.2 s), 1 MiB ~7 min.
  const lines = {
    'spaces then a line break': (n: number) => `<b>hi</b>${' '.repeat(n)}\nx`,
    'tabs then x': (n: number) => `<b>hi</b>${'\t'.repeat(n)}x`,
    'spaces, no line break': (n: number) => `<b>hi</b>${' '.repeat(n)}x`,
  };
  for (const [name, make] of Object.entries(lines)) {
    test(`${name}: 10,000 characters and 1 MiB become IRC lines in linear time`, () => {
      const format = { template: '<{name}> {text}', antiPing: true, roomBytes: 400, maxLines: 0 };
      for (const n of [10_000, 1024 * 1024]) {
        const started = performance.now();
        const text = markupToText(make(n));
        const ircLines = chatToIrcLines({ message: make(n), display_name: 'Bob' }, '', format);
        const ms = performance.now() - started;
        expect(text.startsWith('hi')).toBe(true);
        expect(ircLines[0]).toBe('<B\u200bob> hi');
        expect(ms, `${n} characters: ${Math.round(ms)} ms`).toBeLessThan(n === 10_000 ? 200 : LINEAR_BOUND_MS);
      }
    }, TIMEOUT);
  }
});
