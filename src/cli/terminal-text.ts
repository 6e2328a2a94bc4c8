import { shown, visibleControls, visibleLines } from '../api/visible-text.js';

/**
 * Text from the service or from files as a terminal may print it. What other people wrote (subjects,
 * names, bodies, activity entries, error messages) must not steer the terminal that shows it: an ESC
 * can retitle the window or clear the screen, a BEL rings. Every command prints through writeOut and
 * writeErr (output.ts), which pass all they print through terminalBlock; a renderer of one-line
 * fields uses terminalText, so a line break in a subject cannot forge a row either.
 *
 * Controls are shown as `\u{XX}`, as `groupwire chat` shows them (src/api/visible-text.ts). The
 * bidirectional embeddings, overrides and isolates (U+202A-202E, U+2066-2069) are shown the same way:
 * a right-to-left override in a subject would otherwise reverse the rest of the line on screen.
 */

/** Bidirectional embeddings, overrides and isolates: they reorder what follows them on the line. */
const BIDI = /[\u202a-\u202e\u2066-\u2069]/g;
const HAS_BIDI = /[\u202a-\u202e\u2066-\u2069]/;
/** Anything terminalBlock shows as a code (LF and TAB are kept). */
const UNSAFE_IN_BLOCK = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

function visibleBidi(text: string): string {
  return HAS_BIDI.test(text) ? text.replace(BIDI, shown) : text;
}

/** A one-line field (a subject, a name): every control, line breaks included, and every bidi control shown as a code. */
export function terminalText(text: string): string {
  return visibleBidi(visibleControls(text));
}

/**
 * Printed output of several lines: LF and TAB stay (the commands' own layout); every other control
 * (CR, ESC, BEL, DEL, the C1 controls) and every bidi control is shown as a code.
 */
export function terminalBlock(text: string): string {
  // Most output holds nothing to show: test first, and print the same string without a copy.
  if (!UNSAFE_IN_BLOCK.test(text)) return text;
  return text.split('\n').map((line) => line.split('\t').map(terminalText).join('\t')).join('\n');
}

/**
 * JSON for a terminal: JSON.stringify and lossless-json already write the C0 controls as `\uXXXX`,
 * but not DEL, the C1 controls or the bidi controls. Those can only stand inside a string of the
 * JSON, where `\uXXXX` means the same character: the value read back is unchanged.
 */
export function terminalJson(json: string): string {
  return json.replace(/[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Lines of a body (CR LF, LF or a lone CR), each shown as terminalText. */
export function terminalLines(text: string): string[] {
  return visibleLines(text).map(visibleBidi);
}
