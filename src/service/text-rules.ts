import { badRequest, type ApiError } from './errors.js';
import { sanitizeHtml, tooCostlyToParse } from './html-sanitize.js';

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
const ANY_CONTROL = /[\u0000-\u001F\u007F-\u009F]/;
/** The controls multi-line text may not hold: all but tab, line feed and carriage return. */
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;
/** Bidi embeddings, overrides and isolates: they reorder the text around them (`‮gnp.exe`). */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/;
/** A surrogate without its pair: cannot be written as UTF-8, so it cannot be stored or sent faithfully. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Nothing a reader can see: white space and default-ignorable characters (zero-width space, BOM, ...). */
const INVISIBLE_ONLY = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}]*$/u;
/** The same classes, to remove or replace every occurrence. */
const everywhere = (pattern: RegExp): RegExp => new RegExp(pattern.source, 'g');
const ALL_CONTROLS = everywhere(ANY_CONTROL);
const ALL_BIDI_CONTROLS = everywhere(BIDI_CONTROLS);
const ALL_LONE_SURROGATES = everywhere(LONE_SURROGATE);

/** The name an attachment gets when nothing of the sent name is left. */
export const DEFAULT_FILE_NAME = 'attachment';
/** Our decision: the longest file name kept, in UTF-8 bytes (what common file systems take). */
export const MAX_FILE_NAME_BYTES = 255;

/**
 * The kinds of text field (docs/protocol.md, "Text fields"):
 * - `line`: one line people read next to other text (subjects, names). Tabs and line breaks become a
 *   space; other controls, bidi controls and lone surrogates are refused; NFC; trimmed.
 * - `multiline`: what people write (plain-text bodies, chat messages). Tab, LF and CR stay; other
 *   controls and lone surrogates are refused; bidi controls stay (the bidi algorithm ends them with
 *   their paragraph, and right-to-left writers need them); kept as written otherwise (no NFC).
 * - `html`: `multiline`, then sanitised (html-sanitize.ts); over 1 MiB or nesting deeper than 10,000
 *   elements, refused.
 * In every kind a value with nothing visible (only white space and zero-width characters) is empty.
 */
export type TextKind = 'line' | 'multiline' | 'html';

/** The value as stored, or undefined when the rules of its kind refuse it. */
export function cleanText(value: string, kind: TextKind): string | undefined {
  if (LONE_SURROGATE.test(value)) return undefined;
  if (kind === 'line') {
    const line = value.replace(BREAKS_AND_TABS, ' ');
    if (ANY_CONTROL.test(line) || BIDI_CONTROLS.test(line)) return undefined;
    const normal = line.normalize('NFC').trim();
    return isInvisible(normal) ? '' : normal;
  }
  if (CONTROL_IN_TEXT.test(value)) return undefined;
  if (isInvisible(value)) return '';
  if (kind !== 'html') return value;
  return tooCostlyToParse(value) ? undefined : sanitizeHtml(value);
}

/** A chat message (sent over the chat socket, not as a parameter) follows the `multiline` rules. */
export function cleanChatMessage(text: string): string | undefined {
  return cleanText(text, 'multiline');
}

/** How a text parameter is read: its kind (which may depend on another field), and its refusal. */
export interface TextField {
  kind: (read: (name: string) => string | undefined) => TextKind;
  refused: () => ApiError;
}

/**
 * The text parameters whose rules every operation follows when it reads them through Params: a field
 * is the same kind wherever it appears. `body` is HTML when the same call says `body_type=html`; a
 * route that knows the type otherwise (a stored draft's) sanitises it itself (sanitizeHtml). A refused
 * value gets the error the spec (4.3) or docs/protocol.md names for the field in every operation that
 * takes it.
 */
export const TEXT_FIELDS: Record<string, TextField> = {
  subject: { kind: () => 'line', refused: () => badRequest('invalid subject') },
  desc: { kind: () => 'html', refused: () => badRequest('invalid desc') },
  body: { kind: (read) => (read('body_type') === 'html' ? 'html' : 'multiline'), refused: () => badRequest('invalid body') },
};

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
    .replace(ALL_LONE_SURROGATES, '\uFFFD')
    .replace(BREAKS_AND_TABS, ' ')
    .replace(ALL_CONTROLS, '')
    .replace(ALL_BIDI_CONTROLS, '')
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
