/**
 * Bidirectional controls in other people's text, kept inside their field. A right-to-left override
 * (U+202E) in a subject reorders everything after it up to the end of the paragraph: in a composed
 * line (`New topic: {subject} — {snippet} {link}`) the snippet and the link would show reversed, or a
 * name could make the text after it read differently. closeBidi ends, at the end of the field, what the
 * field opened and left open, so what follows is laid out as if the field held none:
 *
 * - each embedding or override it leaves open (LRE, RLE, LRO, RLO) gets a PDF (U+202C);
 * - each isolate it leaves open (LRI, RLI, FSI) gets a PDI (U+2069);
 * - a PDF or PDI that closes nothing in the field is removed: it would close something of the line
 *   around the field (the template's own, or another field's);
 * - at each paragraph separator in the field (LF, CR, FS, GS, RS, NEL, U+2029) the same closers are put
 *   before it, so the field stays closed if a caller later makes it one line.
 *
 * Why closers and not an isolate around every field (FSI … PDI): closers change only the rare field
 * that holds bidi controls; an isolate would put two invisible characters into every name and subject
 * (in chats, logs, IRC nicks, search), and text around an isolate still needs its own closers.
 * The service keeps bidi controls in chat messages and bodies (its `line` kind refuses them in
 * subjects and names, but other platforms' names and bodies carry them). One pass by index, each
 * opener pushed and popped at most once: linear in the field's length.
 */

const LRE = 0x202a;
const RLE = 0x202b;
const PDF = 0x202c;
const LRO = 0x202d;
const RLO = 0x202e;
const LRI = 0x2066;
const FSI = 0x2068;
const PDI = 0x2069;

const HAS_BIDI_CONTROL = /[\u202a-\u202e\u2066-\u2069]/;

const EMBEDDING = 0;
const ISOLATE = 1;

function isParagraphSeparator(code: number): boolean {
  return code === 0x0a || code === 0x0d || (code >= 0x1c && code <= 0x1e) || code === 0x85 || code === 0x2029;
}

/** The field with every embedding, override and isolate it opens closed at its end (and before each paragraph end). */
export function closeBidi(field: string): string {
  if (!HAS_BIDI_CONTROL.test(field)) return field;
  const parts: string[] = [];
  const open: number[] = [];
  let isolates = 0;
  let from = 0;
  const closers = (): string => {
    let text = '';
    for (let k = open.length - 1; k >= 0; k -= 1) text += open[k] === ISOLATE ? '\u2069' : '\u202c';
    open.length = 0;
    isolates = 0;
    return text;
  };
  const drop = (at: number) => {
    if (at > from) parts.push(field.slice(from, at));
    from = at + 1;
  };
  for (let i = 0; i < field.length; i += 1) {
    const code = field.charCodeAt(i);
    if (code === LRE || code === RLE || code === LRO || code === RLO) open.push(EMBEDDING);
    else if (code >= LRI && code <= FSI) {
      open.push(ISOLATE);
      isolates += 1;
    } else if (code === PDF) {
      // A PDF closes the innermost embedding, never across an isolate (UAX #9, X7).
      if (open.length > 0 && open[open.length - 1] === EMBEDDING) open.pop();
      else drop(i);
    } else if (code === PDI) {
      // A PDI closes the innermost isolate and every embedding opened inside it (UAX #9, X6a).
      if (isolates === 0) drop(i);
      else {
        while (open.pop() !== ISOLATE);
        isolates -= 1;
      }
    } else if (isParagraphSeparator(code) && open.length > 0) {
      if (i > from) parts.push(field.slice(from, i));
      parts.push(closers());
      from = i;
    }
  }
  if (from < field.length) parts.push(field.slice(from));
  parts.push(closers());
  return parts.join('');
}
