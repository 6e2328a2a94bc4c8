import { INLINE_IMAGE_TYPES } from './file-checks.js';

/**
 * How a served file is offered (RFC 6266): `inline` only for an image of a raster type that runs
 * nothing (PNG, JPEG, GIF, WebP: never SVG or HTML), a download otherwise; `filename="…"` holds only
 * printable ASCII without `"`, `\` or `%` (others become `_`), `filename*` the whole name in UTF-8,
 * percent-encoded. The media listener and the HTTP API's files route answer with it, so a file is shown
 * the same way whichever link reaches it.
 */
export function contentDisposition(name: string, contentType: string): string {
  let ascii = '';
  for (const char of name) {
    const code = char.codePointAt(0)!;
    ascii += code >= 0x20 && code < 0x7f && char !== '"' && char !== '\\' && char !== '%' ? char : '_';
  }
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${INLINE_IMAGE_TYPES.has(contentType) ? 'inline' : 'attachment'}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
