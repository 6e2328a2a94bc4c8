import sanitize, { type Options } from 'sanitize-html';

/**
 * HTML fields (a chat's `desc`, HTML message and draft bodies) are cleaned on the way in, so what the
 * service stores and serves can be shown as HTML without running anyone's script (issue #15 item 17;
 * docs/protocol.md "HTML fields"). An allow-list, through sanitize-html (a parser, not regular
 * expressions): ordinary formatting stays, everything else goes. Plain-text fields never come here;
 * their `<` is text.
 */

/** Formatting a message or a description needs; no media, forms, frames, scripts or styles. */
const ALLOWED_TAGS = [
  'p', 'br', 'div', 'span', 'hr',
  'b', 'i', 'em', 'strong', 'u', 's', 'strike', 'sub', 'sup', 'small', 'mark',
  'a', 'blockquote', 'q', 'cite', 'pre', 'code', 'kbd', 'samp',
  'ul', 'ol', 'li', 'dl', 'dt', 'dd',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6',
  'table', 'thead', 'tbody', 'tfoot', 'tr', 'th', 'td', 'caption',
];

/** Writing direction is content (right-to-left text needs it), on every tag; other attributes per tag. */
const DIRECTION = { name: 'dir', values: ['ltr', 'rtl', 'auto'] };
const TAG_ATTRIBUTES: Record<string, string[]> = {
  a: ['href'],
  ol: ['start'],
  td: ['colspan', 'rowspan'],
  th: ['colspan', 'rowspan'],
};

const OPTIONS: Options = {
  allowedTags: ALLOWED_TAGS,
  // sanitize-html checks a limited value (dir's) only in a tag's own list, so each tag gets the common ones.
  allowedAttributes: Object.fromEntries(
    ALLOWED_TAGS.map((tag) => [tag, [DIRECTION, 'lang', 'title', ...(TAG_ATTRIBUTES[tag] ?? [])]]),
  ),
  // Links go to the web or to mail; `javascript:`, `data:`, `vbscript:` and protocol-relative `//host` go.
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: {},
  allowProtocolRelative: false,
  // A forbidden tag goes and its text stays, except where the text is code or another document.
  disallowedTagsMode: 'discard',
  nonTextTags: ['script', 'style', 'textarea', 'option', 'xmp', 'noscript', 'noembed', 'noframes', 'template', 'iframe', 'object', 'title'],
  // Deeper nesting than any real message is flattened, so a crafted body cannot cost the readers' parsers.
  nestingLimit: 64,
};

/**
 * Our decision: HTML whose elements could nest deeper than this is not parsed. The parser under
 * sanitize-html (htmlparser2 10) costs time in the square of the nesting (about 15 s for 1 MiB of
 * unclosed `<b>`); at this depth it costs about 50 ms. No real message comes near it.
 */
export const MAX_HTML_NESTING = 10_000;
/** Our decision: the longest HTML parsed, in UTF-8 bytes: the largest HTML field (a body, 1 MiB). */
export const MAX_HTML_BYTES = 1024 * 1024;

const VOID_ELEMENTS = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
/** The characters that end a tag's name, as in `[^\s/>]` (JavaScript's `\s`, Unicode spaces included). */
const NAME_END = /[\s/>]/;
const isNameEnd = (char: string): boolean => NAME_END.test(char);
const isAsciiLetter = (code: number): boolean => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);

/**
 * An upper bound of how deep the elements of `html` nest, in one linear pass: every start tag of a
 * non-void element opens one level; an end tag closes one only for a name that is open (a stray one
 * closes nothing, as in the parser). The parser's implied ends (`<p>`, `<li>`) only make it shallower.
 *
 * A tag is what `<(\/?)([a-zA-Z][^\s/>]*)[^>]*?(\/?)>` would match, found by a scan instead (that
 * expression backtracks in cubic time on many `<a` and no `>`, issue #31 item 1): a `<`, an optional
 * `/`, a letter, the name up to a space, `/` or `>`, and the tag's end at the next `>`, self-closing
 * when the character before that `>` is `/`. With no `>` left, no tag is left either.
 */
export function nestingBound(html: string): number {
  const open = new Map<string, number>();
  let depth = 0;
  let deepest = 0;
  let at = html.indexOf('<');
  while (at >= 0) {
    const closing = html[at + 1] === '/';
    const nameStart = at + (closing ? 2 : 1);
    if (nameStart >= html.length || !isAsciiLetter(html.charCodeAt(nameStart))) {
      at = html.indexOf('<', at + 1);
      continue;
    }
    const end = html.indexOf('>', nameStart);
    if (end < 0) break;
    let nameEnd = nameStart + 1;
    while (nameEnd < end && !isNameEnd(html[nameEnd]!)) nameEnd += 1;
    const name = html.slice(nameStart, nameEnd).toLowerCase();
    if (closing) {
      const count = open.get(name) ?? 0;
      if (count > 0) {
        open.set(name, count - 1);
        depth -= 1;
      }
    } else if (html[end - 1] !== '/' && !VOID_ELEMENTS.has(name)) {
      open.set(name, (open.get(name) ?? 0) + 1);
      depth += 1;
      deepest = Math.max(deepest, depth);
    }
    at = html.indexOf('<', end + 1);
  }
  return deepest;
}

/** True when `html` is too long or could nest too deep to be parsed (see MAX_HTML_NESTING). */
export function tooCostlyToParse(html: string): boolean {
  return Buffer.byteLength(html) > MAX_HTML_BYTES || nestingBound(html) > MAX_HTML_NESTING;
}

/**
 * The HTML as stored: the allowed formatting and text of `html`, nothing that could run. HTML too
 * costly to parse (Params refuses it before this) comes back as its text with every `<` escaped:
 * shown, never run.
 */
export function sanitizeHtml(html: string): string {
  if (tooCostlyToParse(html)) return html.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return sanitize(html, OPTIONS);
}
