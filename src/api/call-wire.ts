/**
 * The body shapes of one call, around the transport: the multipart form a call with files is sent as,
 * and the answer's lists made arrays.
 */
import { Blob } from 'node:buffer';
import { FormData } from 'undici';
import type * as P from './params.js';
import type { WireParams } from './transport.js';

export function multipart(params: WireParams, files: P.AttachmentInput[]): FormData {
  const form = new FormData();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null) form.append(key, String(value));
  for (const file of files) {
    const content = typeof file.content === 'string' ? Buffer.from(file.content) : file.content;
    form.append('file', new Blob([content], { type: file.mediaType ?? 'application/octet-stream' }), file.filename);
  }
  return form;
}

/** The real service sends `data: null` for an empty list; the client always gives an array. */
export function normalizeLists(result: unknown): unknown {
  const target = Array.isArray(result) ? result[0] : result;
  if (target && typeof target === 'object' && (target as { object?: unknown }).object === 'list') {
    const list = target as { data: unknown };
    if (list.data === null || list.data === undefined) list.data = [];
  }
  return result;
}
