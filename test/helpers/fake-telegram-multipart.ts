/**
 * What the local Bot API (fake-telegram.ts) needs to read grammY's uploads: the parts of a
 * multipart/form-data body, and whether bytes are an image Telegram makes a photo of.
 */

/** One part of a multipart/form-data body. */
export interface FormPart {
  name: string;
  filename?: string;
  value: Buffer;
}

/** The parts of a multipart body, by a scan for the boundary (grammY writes `filename=` unquoted, which fetch's FormData parser refuses). */
export function multipartParts(body: Buffer, boundary: string): FormPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: FormPart[] = [];
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    // Between the CRLF after the delimiter and the CRLF before the next one.
    const part = body.subarray(start + 2, next - 2);
    const headerEnd = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, headerEnd).toString('utf8');
    const disposition = headers.split('\r\n').find((line) => line.toLowerCase().startsWith('content-disposition')) ?? '';
    const field = (key: string) => {
      const found = disposition.split(';').map((item) => item.trim()).find((item) => item.toLowerCase().startsWith(`${key}=`));
      return found === undefined ? undefined : found.slice(key.length + 1).replace(/^"(.*)"$/, '$1');
    };
    parts.push({ name: field('name') ?? '', ...(field('filename') !== undefined ? { filename: field('filename')! } : {}), value: part.subarray(headerEnd + 4) });
    at = next;
  }
  return parts;
}

/** The image formats Telegram makes a photo of, by their first bytes. */
export function looksLikeImage(bytes: Buffer): boolean {
  return (bytes[0] === 0xff && bytes[1] === 0xd8) || bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    || (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP');
}
