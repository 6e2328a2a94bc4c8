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

/** The HTML as stored: the allowed formatting and text of `html`, nothing that could run. */
export function sanitizeHtml(html: string): string {
  return sanitize(html, OPTIONS);
}
