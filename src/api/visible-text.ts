/**
 * Control characters in what members type (CR, NUL, ESC, ...) never reach a transcript or a terminal
 * raw: a NUL makes `grep` call a file binary, an ESC can rewrite the terminal that shows it, a lone CR
 * hides the start of a line. Line breaks stay line breaks (CR LF, LF and a lone CR alike); a tab stays a tab;
 * every other C0 control, DEL and every C1 control is shown as `\u{XX}` (its code in hex), which no
 * terminal or grep takes for anything but text. (JSON lines need none of this: JSON.stringify already
 * writes every C0 control as `\uXXXX`.)
 */

/** C0 controls except TAB, DEL, and the C1 controls (line breaks are split off before, where they count). */
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;
const HAS_CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;
const LINE_BREAK = /\r\n|\r|\n/;

/** One control character as it shows: `\u{0}`, `\u{1b}`, `\u{7f}`. */
export function shown(char: string): string {
  return `\\u{${char.codePointAt(0)!.toString(16)}}`;
}

/** The text's lines (split at CR LF, LF or a lone CR), each with its other controls shown as `\u{XX}`. */
export function visibleLines(text: string): string[] {
  return text.split(LINE_BREAK).map(visibleControls);
}

/** The text with every control character (line breaks included) shown as `\u{XX}`, for one-line fields such as names. */
export function visibleControls(text: string): string {
  // Most messages hold none: test first, and return the same string without a copy.
  return HAS_CONTROL.test(text) ? text.replace(CONTROL, shown) : text;
}
