import type { FilePayload } from './line.js';

/** The image types a browser shows inline: raster formats that run no script (not SVG). */
const INLINE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** A quoted-string filename: printable ASCII but `"` and `\` (the rest as `_`); the exact name goes in filename*. */
function asciiName(name: string): string {
  let out = '';
  for (const char of name) out += /^[\x20-\x7e]$/.test(char) && char !== '"' && char !== '\\' ? char : '_';
  return out;
}

/** RFC 5987 `filename*`: UTF-8, percent-encoded beyond the attribute characters. */
function extendedName(name: string): string {
  return encodeURIComponent(name).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * The headers of a file served by `/gateways/<channel>/files/<id>/<name>`: the type it was stored
 * with, never sniffed; shown inline only when it is an image of a type that runs nothing (PNG, JPEG,
 * GIF, WebP), a download otherwise (an HTML or SVG file is not rendered on the API's origin); a
 * sandboxing CSP for good measure.
 */
export function downloadHeaders(file: FilePayload): Record<string, string> {
  const inline = file.image && INLINE_TYPES.has(file.content_type);
  return {
    'content-type': file.content_type,
    'content-length': String(file.size),
    'x-content-type-options': 'nosniff',
    'content-disposition': `${inline ? 'inline' : 'attachment'}; filename="${asciiName(file.name)}"; filename*=UTF-8''${extendedName(file.name)}`,
    'content-security-policy': "default-src 'none'; sandbox",
    'cache-control': 'private, max-age=3600',
  };
}
