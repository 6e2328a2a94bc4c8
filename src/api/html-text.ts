/**
 * HTML bodies as plain text, for summaries, snippets and search.
 *
 * Every step is linear in the text (issue #31 item 2): bodies are up to 1 MiB and come from anyone. The
 * two steps that used to be `<[^>]*>` and `<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>` (each tried from
 * every `<`, each scanning to the end when no `>` or end tag follows: quadratic on many `<`) are scans
 * with the same meaning. The others stay expressions: each starts at a literal `<` (or `&`) and can only
 * run over the white space or the name right after it, which no other start shares.
 */

const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };
/** An entity runs from `&` over one class of characters to `;`: a run no other `&` can start inside. */
const ENTITY = /&(#x[0-9a-f]+|#\d+|[a-z]+);/gi;

export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY, (whole, name: string) => {
    if (name.startsWith('#')) {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : Number(name.slice(1));
      // A non-breaking space is a space to the signature delimiter and to word splitting.
      if (code === 0xa0) return ' ';
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/** The start of a script or style element: `<script` or `<style` as a whole word (`\b`). */
const RAW_TEXT_START = /<(script|style)\b/gi;

/**
 * `html` with each script and style element (start tag, content, end tag) replaced by a space: what
 * `/<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>/gi` replaces, found by a scan. The next `>` and the next end
 * tag of each name are looked up once and reused while they lie ahead: when there is none after one
 * start, there is none after any later start either, so no start searches to the end twice.
 */
function withoutScriptsAndStyles(html: string): string {
  if (!/<(script|style)/i.test(html)) return html;
  const nextEndTag = new Map<string, { from: number; at: number; end: number }>();
  const endTagAfter = (name: string, from: number): { at: number; end: number } => {
    const known = nextEndTag.get(name);
    if (known && known.from <= from && (known.at < 0 || known.at >= from)) return known;
    const pattern = new RegExp(`</${name}\\s*>`, 'gi');
    pattern.lastIndex = from;
    const found = pattern.exec(html);
    const result = { from, at: found ? found.index : -1, end: found ? found.index + found[0].length : -1 };
    nextEndTag.set(name, result);
    return result;
  };
  let out = '';
  let copied = 0;
  let gt = -1;
  RAW_TEXT_START.lastIndex = 0;
  for (let start = RAW_TEXT_START.exec(html); start; start = RAW_TEXT_START.exec(html)) {
    if (gt < start.index) gt = html.indexOf('>', start.index);
    if (gt < 0) break;
    const close = endTagAfter(start[1]!.toLowerCase(), gt + 1);
    if (close.at < 0) {
      RAW_TEXT_START.lastIndex = start.index + 1;
      continue;
    }
    out += `${html.slice(copied, start.index)} `;
    copied = close.end;
    RAW_TEXT_START.lastIndex = close.end;
  }
  return copied === 0 ? html : out + html.slice(copied);
}

/**
 * `html` without its tags: what `/<[^>]*>/g` removes (a `<` up to the next `>`), found by a scan. A
 * `<` with no `>` after it is text, and so is everything after it.
 */
export function withoutTags(html: string): string {
  let out = '';
  let copied = 0;
  let lt = html.indexOf('<');
  while (lt >= 0) {
    const gt = html.indexOf('>', lt + 1);
    if (gt < 0) break;
    out += html.slice(copied, lt);
    copied = gt + 1;
    lt = html.indexOf('<', copied);
  }
  return copied === 0 ? html : out + html.slice(copied);
}

/** HTML to plain text; block ends become line breaks so signature delimiter lines survive. */
export function htmlToText(html: string): string {
  const text = withoutScriptsAndStyles(html)
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|div|li|tr|h[1-6]|blockquote|pre)\s*>/gi, '\n')
    .replace(/<\/t[dh]\s*>/gi, ' ');
  return decodeEntities(withoutTags(text));
}

/** HTML as one line of plain text (activity entries, summaries, descriptions). */
export function htmlToLine(html: string): string {
  return htmlToText(html).replace(/\s+/g, ' ').trim();
}
