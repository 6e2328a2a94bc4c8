import { shown } from '../api/visible-text.js';

/**
 * The cleaning every text a bot posts into a chat goes through (the outbox applies it to each post,
 * plugins may call it on the fields they compose). The service's chat messages are `multiline` text
 * (src/service/text-rules.ts, docs/protocol.md "Text fields"): it refuses C0 and C1 controls other
 * than tab, LF and CR, and lone surrogates. A text holding one would be refused whole, and a topic
 * announced from someone's subject with a BEL in it lost; so what the service would refuse is made
 * into what it takes, keeping everything a reader sees:
 *
 * - tab, LF and CR stay;
 * - NEL (U+0085), LINE SEPARATOR (U+2028), PARAGRAPH SEPARATOR (U+2029), VT and FF are line breaks: LF;
 * - every other C0 control, DEL and every other C1 control is removed (as the relays remove them,
 *   relay-irc's safeLine, http-api's stripControls);
 * - a lone surrogate (half of a pair, which UTF-8 cannot carry) becomes U+FFFD.
 *
 * Bidi controls stay (right-to-left writers need them): closeBidi (bidi.ts) keeps them in their field.
 * One pass by index: linear in the text's length whatever it holds.
 */

/** Anything chatSafeText changes (a surrogate pair too: it is checked, in the slow path, to be whole). */
const NEEDS_CLEANING = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u2028\u2029\ud800-\udfff]/;

/** The text as the service takes it in a chat message: the rules of this file's header, nothing a reader sees lost. */
export function chatSafeText(text: string): string {
  // Most texts hold none of these: test first and return the same string, without a copy.
  if (!NEEDS_CLEANING.test(text)) return text;
  const parts: string[] = [];
  let from = 0;
  const put = (at: number, replacement: string, width = 1) => {
    if (at > from) parts.push(text.slice(from, at));
    if (replacement) parts.push(replacement);
    from = at + width;
  };
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x20) {
      if (code === 0x09 || code === 0x0a || code === 0x0d) continue;
      put(i, code === 0x0b || code === 0x0c ? '\n' : '');
    } else if (code >= 0x7f && code <= 0x9f) {
      put(i, code === 0x85 ? '\n' : '');
    } else if (code === 0x2028 || code === 0x2029) {
      put(i, '\n');
    } else if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i += 1; // a whole pair: kept
      else put(i, '\ufffd');
    } else if (code >= 0xdc00 && code <= 0xdfff) {
      put(i, '\ufffd');
    }
  }
  if (from < text.length) parts.push(text.slice(from));
  return parts.join('');
}

/** Nothing a reader can see: white space and default-ignorable characters (what the service takes for empty). */
const INVISIBLE_ONLY = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}]*$/u;
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * A post the service refused for its text, made into one it takes: chatSafeText, and when nothing a
 * reader can see is left (zero-width characters only, which the service counts as empty) those shown
 * as codes (`\u{200b}`), so the post is seen rather than lost. The same text back when neither changes
 * anything (then it cannot be taken however often it is sent).
 */
export function postableText(text: string): string {
  const clean = chatSafeText(text);
  if (clean.trim() === '' || !INVISIBLE_ONLY.test(clean)) return clean;
  return clean.replace(DEFAULT_IGNORABLE, shown);
}
