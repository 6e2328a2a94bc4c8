import { describe, expect, test } from 'vitest';
import { attributedLines, chatSafeText, closeBidi, oneLineName } from '../src/index.js';
import { field } from '../plugins/group-mail/render.js';
import { chatLineOf, continuationOf, splitForChat } from '../src/gateway/render.js';
import { cleanChatMessage } from '../src/service/text-rules.js';
import { postableText } from '../src/text/chat-safe-text.js';
import { expectLinearOnAdversarialText } from './helpers/adversarial-text.js';

/**
 * The public text functions every plugin's posts go through (issue #31 items 11, 13, 14): chatSafeText
 * (what the chat refuses made into what it takes), closeBidi (other people's bidi controls kept inside
 * their field), attributedLines (each line of a relayed text carries its speaker).
 */

const LRE = '\u202a';
const RLE = '\u202b';
const PDF = '\u202c';
const LRO = '\u202d';
const RLO = '\u202e';
const RLI = '\u2067';
const FSI = '\u2068';
const PDI = '\u2069';

describe('chatSafeText', () => {
  test('removes the controls the chat refuses, keeps tab/LF/CR, makes NEL/LS/PS/VT/FF line breaks and lone surrogates U+FFFD', () => {
    expect(chatSafeText('a\u0007b\u001bc\u007fd\u0000e\u0090f')).toBe('abcdef');
    expect(chatSafeText('tab\there\r\nnext')).toBe('tab\there\r\nnext');
    expect(chatSafeText('one\u0085two\u2028three\u2029four\u000bfive\u000csix')).toBe('one\ntwo\nthree\nfour\nfive\nsix');
    expect(chatSafeText('lone \ud800 high, lone \udc00 low, end \ud83d')).toBe('lone \ufffd high, lone \ufffd low, end \ufffd');
    expect(chatSafeText('pair \ud83d\ude00 kept')).toBe('pair \ud83d\ude00 kept');
    expect(chatSafeText(`bidi ${RLO}stays${PDF}`)).toBe(`bidi ${RLO}stays${PDF}`);
  });

  test('what it gives back the service takes as a chat message (the service\'s own rule)', () => {
    const hostile = 'subject \u0007\u001b[2J\u007f\u0085 body \u0000\u001b]0;title\u0007 \ud800 \u2028 end';
    expect(cleanChatMessage(hostile)).toBeUndefined();
    expect(cleanChatMessage(chatSafeText(hostile))).toBe(chatSafeText(hostile));
  });

  test('postableText: a refused text of nothing visible is shown as codes; one cleaning cannot change stays as it is', () => {
    expect(postableText('\u200b\u2060')).toBe('\\u{200b}\\u{2060}');
    expect(postableText('bad\u0001text')).toBe('badtext');
    expect(postableText('fine')).toBe('fine');
    expect(cleanChatMessage(postableText('\u200b \u2060'))).toBe('\\u{200b} \\u{2060}');
  });

  test('runs in linear time on 1 MiB adversarial texts', { timeout: 120_000 }, () => {
    expectLinearOnAdversarialText(chatSafeText);
    expectLinearOnAdversarialText(postableText);
  });
});

describe('closeBidi', () => {
  test('an override left open is closed at the end of the field', () => {
    expect(closeBidi(`evil ${RLO}txt.exe`)).toBe(`evil ${RLO}txt.exe${PDF}`);
  });

  test('nested openers are closed innermost first; embeddings inside an isolate close with it', () => {
    expect(closeBidi(`${RLE}a${LRO}b`)).toBe(`${RLE}a${LRO}b${PDF}${PDF}`);
    expect(closeBidi(`${RLI}a${RLO}b`)).toBe(`${RLI}a${RLO}b${PDF}${PDI}`);
    expect(closeBidi(`${RLO}a${FSI}b${LRE}c${PDI}d`)).toBe(`${RLO}a${FSI}b${LRE}c${PDI}d${PDF}`);
  });

  test('a balanced field is unchanged; a field without bidi controls is the same string', () => {
    const balanced = `x ${RLO}a${PDF} ${FSI}b${PDI} ${LRE}${RLI}c${PDI}${PDF}`;
    expect(closeBidi(balanced)).toBe(balanced);
    const plain = 'nothing to see';
    expect(closeBidi(plain)).toBe(plain);
  });

  test('closers that close nothing in the field are removed (they would close the line around it)', () => {
    expect(closeBidi(`a${PDF}b${PDI}c`)).toBe('abc');
    // A PDF cannot close an embedding across an isolate: it goes, the isolate is closed at the end.
    expect(closeBidi(`${RLO}${FSI}x${PDF}`)).toBe(`${RLO}${FSI}x${PDI}${PDF}`);
  });

  test('closed before each paragraph separator too, so a field made one line later stays closed', () => {
    expect(closeBidi(`${RLO}a\nb${RLO}c`)).toBe(`${RLO}a${PDF}\nb${RLO}c${PDF}`);
    expect(closeBidi(`${RLO}a\u2029b`)).toBe(`${RLO}a${PDF}\u2029b`);
  });

  test('runs in linear time on 1 MiB adversarial texts (1 MiB of openers, of closers, of nesting)', { timeout: 120_000 }, () => {
    expectLinearOnAdversarialText(closeBidi);
    expectLinearOnAdversarialText((text) => closeBidi(text.replace(/</g, RLI).replace(/a/g, PDF).replace(/\//g, PDI)), ['many <a', 'many </']);
  });
});

describe('attributedLines', () => {
  const bob = (line: string) => `<bob> ${line}`;

  test('every line of a multi-line text carries the speaker, whatever line break it used; blank lines are left out', () => {
    expect(attributedLines('first\nsecond', bob)).toBe('<bob> first\n<bob> second');
    expect(attributedLines('a\r\nb\rc\u0085d\u2028e\u2029f\u000bg\u000ch', bob).split('\n'))
      .toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((line) => `<bob> ${line}`));
    expect(attributedLines('a\n\n   \nb', bob)).toBe('<bob> a\n<bob> b');
    expect(attributedLines('one line', bob)).toBe('<bob> one line');
  });

  test('a line that looks like another member\'s starts after the real speaker', () => {
    expect(attributedLines('hello\n<alice> I resign', bob).split('\n')).toEqual(['<bob> hello', '<bob> <alice> I resign']);
  });

  test('each line\'s bidi controls are closed before the template\'s tail', () => {
    expect(attributedLines(`${RLO}abc`, (line) => `<bob> ${line} (via irc)`)).toBe(`<bob> ${RLO}abc${PDF} (via irc)`);
  });

  test('oneLineName: a name on one line, its bidi closed', () => {
    expect(oneLineName('Alice\n<mallory>\u0007 x')).toBe('Alice <mallory> x');
    expect(oneLineName(`${RLO}eve`)).toBe(`${RLO}eve${PDF}`);
    expect(oneLineName('\u0007\n')).toBe('someone');
  });

  test('runs in linear time on 1 MiB adversarial texts', { timeout: 120_000 }, () => {
    expectLinearOnAdversarialText((text) => attributedLines(text, bob));
    expectLinearOnAdversarialText((text) => oneLineName(text));
  });
});

describe('the gateway\'s chat line composition', () => {
  test('chatLineOf and splitForChat run in linear time on 1 MiB adversarial texts', { timeout: 120_000 }, () => {
    const record = (text: string) => ({
      key: 'k', gateway: 'g', origin: 'o', platform: 'irc', nativeId: '1', kind: 'message', speaker: { platform: 'irc', id: 'x', name: text.slice(0, 200) },
      text, at: 0, copies: {},
    });
    expectLinearOnAdversarialText((text) => {
      const rec = record(text);
      return splitForChat(chatLineOf(rec, undefined, rec), continuationOf(rec));
    });
  });
});

describe('group-mail\'s fields', () => {
  test('field (clean, one line, bidi closed) runs in linear time on 1 MiB adversarial texts', { timeout: 120_000 }, () => {
    expect(field(`Budget\u0007 \u001b[31mred\u007f\u0085part two \u202eexe`)).toBe('Budget [31mred part two \u202eexe\u202c');
    expectLinearOnAdversarialText(field);
  });
});
