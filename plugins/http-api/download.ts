import { contentDisposition } from '../../src/index.js';
import type { FilePayload } from './line.js';

/**
 * The headers of a file served by `/gateways/<channel>/files/<id>/<name>`: the type it was stored
 * with, never sniffed; shown inline only when it is an image of a type that runs nothing (PNG, JPEG,
 * GIF, WebP), a download otherwise (an HTML or SVG file is not rendered on the API's origin); a
 * sandboxing CSP for good measure.
 */
export function downloadHeaders(file: FilePayload): Record<string, string> {
  return {
    'content-type': file.content_type,
    'content-length': String(file.size),
    'x-content-type-options': 'nosniff',
    // The stored type is an image's only when its bytes were one (the gateway's intake checked them).
    'content-disposition': contentDisposition(file.name, file.image ? file.content_type : 'application/octet-stream'),
    'content-security-policy': "default-src 'none'; sandbox",
    'cache-control': 'private, max-age=3600',
  };
}
