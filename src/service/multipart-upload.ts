import type { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { MultipartError, multipartParts } from '../media/multipart-parts.js';
import { ApiError, badRequest } from './errors.js';
import type { DecodedParams } from './form-decoding.js';
import type { UploadedFile } from './operation.js';

/** Our decision: the largest attachment addattachments takes, and how many files one call may carry. */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
export const MAX_FILES_PER_CALL = 10;
/** A field of a multipart body: the largest value any call takes is a 1 MiB draft body. */
const MAX_FIELD_BYTES = 1024 * 1024 + 1024;
const MAX_FIELDS = 100;
/** Every part a call may rightly send (a part past it is refused as too many fields). */
const MAX_PARTS = 1000;
/** The most a multipart body can rightly be: every file at its largest, and the fields. */
export const MULTIPART_BODY_LIMIT = MAX_FILES_PER_CALL * (MAX_ATTACHMENT_BYTES + 4096) + 2 * MAX_FIELD_BYTES;

export interface MultipartBody {
  fields: DecodedParams;
  files: UploadedFile[];
}

/**
 * Reads a multipart/form-data body part by part. Before the first byte of the first file is read,
 * `beforeFirstFile` is given the fields read so far (the csrf check: an upload is read only for a
 * caller who is authenticated and sent the right csrf, in the query string or a field before the
 * files). Whatever goes wrong while reading is the caller's mistake (a broken or truncated body, a file
 * over the limit) and is answered `bad_request`.
 */
export async function readMultipart(
  request: FastifyRequest,
  beforeFirstFile: (fields: DecodedParams) => void,
  fileName: (name: string) => string = (name) => name,
): Promise<MultipartBody> {
  const fields = Object.create(null) as DecodedParams;
  const files: UploadedFile[] = [];
  const limits = { fileSize: MAX_ATTACHMENT_BYTES, files: MAX_FILES_PER_CALL, fieldSize: MAX_FIELD_BYTES, fields: MAX_FIELDS, parts: MAX_PARTS };
  try {
    for await (const part of multipartParts(request, limits)) {
      if (part.type === 'file') {
        if (files.length === 0) beforeFirstFile(fields);
        const data = await readWhole(part.file);
        files.push({ filename: fileName(part.filename || 'attachment'), mediaType: part.mimetype || 'application/octet-stream', data });
        continue;
      }
      if (part.valueTruncated) throw badRequest(`field ${part.fieldname} over ${MAX_FIELD_BYTES} bytes`);
      // A field sent with Content-Type: application/json is not text: ignored, as before.
      if (part.mimetype.startsWith('application/json')) continue;
      const earlier = fields[part.fieldname];
      if (earlier === undefined) fields[part.fieldname] = part.value;
      else if (Array.isArray(earlier)) earlier.push(part.value);
      else fields[part.fieldname] = [earlier, part.value];
    }
  } catch (error) {
    throw asUploadMistake(error);
  }
  return { fields, files };
}

/**
 * A file's bytes, at most MAX_ATTACHMENT_BYTES: one over it is refused as soon as it passes the limit
 * (the rest of the body is read and dropped, not kept).
 */
async function readWhole(file: Readable & { truncated: boolean }): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of file) {
    if (file.truncated) throw badRequest(`an attachment is over ${MAX_ATTACHMENT_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  if (file.truncated) throw badRequest(`an attachment is over ${MAX_ATTACHMENT_BYTES} bytes`);
  return Buffer.concat(chunks);
}

/** The parser's errors, said as what the caller did wrong. */
function asUploadMistake(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof MultipartError) {
    switch (error.problem) {
      case 'files_limit':
        return badRequest(`at most ${MAX_FILES_PER_CALL} files a call`);
      case 'fields_limit':
      case 'parts_limit':
        return badRequest(`too many fields in the multipart body (at most ${MAX_FIELDS})`);
      case 'field_name':
        return badRequest('malformed multipart body: a field name that is not allowed');
      case 'malformed':
        break;
    }
  }
  // The body broke (cut short, no boundary, the client gone): the parser's words, or busboy's on the file.
  const message = error instanceof Error ? error.message : String(error);
  return badRequest(`malformed multipart body: ${message}`);
}
