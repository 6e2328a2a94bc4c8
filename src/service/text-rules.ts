/**
 * What the service keeps of the text people send: one set of rules for every text field, so no
 * operation stores NUL, a lone surrogate or a right-to-left override just because its route forgot to
 * check (issue #15 item 16). The table of fields and what each refuses or normalises is in
 * docs/protocol.md, "Text fields"; Params applies it (params.ts), attachment names go through
 * cleanFileName where uploads are read.
 */

/** Tabs and line breaks: white space in a single line. */
const BREAKS_AND_TABS = /[\t\n\v\f\r\u0085\u2028\u2029]+/g;
/** Every C0 and C1 control and DEL. */
const ANY_CONTROL = /[\u0000-\u001F\u007F-\u009F]/g;
/** Bidi embeddings, overrides and isolates: they reorder the text around them (`‮gnp.exe`). */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;
/** A surrogate without its pair: cannot be written as UTF-8, so it cannot be stored or sent faithfully. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** Nothing a reader can see: white space and default-ignorable characters (zero-width space, BOM, ...). */
const INVISIBLE_ONLY = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}]*$/u;

/** The name an attachment gets when nothing of the sent name is left. */
export const DEFAULT_FILE_NAME = 'attachment';
/** Our decision: the longest file name kept, in UTF-8 bytes (what common file systems take). */
export const MAX_FILE_NAME_BYTES = 255;

/** True when a reader would see nothing: empty, white space, zero-width characters only. */
export function isInvisible(text: string): boolean {
  return INVISIBLE_ONLY.test(text);
}

/**
 * An attachment's name as it is stored and served. Names are never refused (a file is not lost over
 * its name): the directory part goes, tabs and line breaks become a space, other controls and bidi controls are removed, a lone surrogate becomes
 * U+FFFD, the rest is NFC and trimmed, and cut to 255 bytes keeping the extension. A name with nothing
 * visible left, or only dots, becomes `attachment`.
 */
export function cleanFileName(name: string): string {
  const base = name.split(/[/\\]/).pop() ?? '';
  const cleaned = base
    .replace(LONE_SURROGATE, '\uFFFD')
    .replace(BREAKS_AND_TABS, ' ')
    .replace(ANY_CONTROL, '')
    .replace(BIDI_CONTROLS, '')
    .normalize('NFC')
    .trim();
  if (isInvisible(cleaned) || /^\.+$/.test(cleaned)) return DEFAULT_FILE_NAME;
  return fitBytes(cleaned, MAX_FILE_NAME_BYTES);
}

/** Cuts a name to `max` UTF-8 bytes, from the stem so a short extension stays, never inside a character. */
function fitBytes(name: string, max: number): string {
  if (Buffer.byteLength(name) <= max) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
  const stem = [...name.slice(0, name.length - extension.length)];
  let budget = max - Buffer.byteLength(extension);
  let kept = '';
  for (const char of stem) {
    budget -= Buffer.byteLength(char);
    if (budget < 0) break;
    kept += char;
  }
  return `${kept.trimEnd()}${extension}`;
}
