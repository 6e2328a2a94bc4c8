import '@fastify/multipart'; // its types add request.parts()
import type { FastifyRequest } from 'fastify';
import { ApiError, badRequest } from './errors.js';
import type { DecodedParams } from './form-decoding.js';
import type { UploadedFile } from './operation.js';

/** Our decision: the largest attachment addattachments takes, and how many files one call may carry. */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
export const MAX_FILES_PER_CALL = 10;
/** A field of a multipart body: the largest value any call takes is a 1 MiB draft body. */
const MAX_FIELD_BYTES = 1024 * 1024 + 1024;
const MAX_FIELDS = 100;
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
  const limits = { fileSize: MAX_ATTACHMENT_BYTES, files: MAX_FILES_PER_CALL, fieldSize: MAX_FIELD_BYTES, fields: MAX_FIELDS };
  try {
    for await (const part of request.parts({ limits })) {
      if (part.type === 'file') {
        if (files.length === 0) beforeFirstFile(fields);
        const data = await part.toBuffer();
        files.push({ filename: fileName(part.filename || 'attachment'), mediaType: part.mimetype || 'application/octet-stream', data });
        continue;
      }
      if (part.valueTruncated) throw badRequest(`field ${part.fieldname} over ${MAX_FIELD_BYTES} bytes`);
      // A field sent with Content-Type: application/json arrives parsed; anything but text is ignored.
      if (typeof part.value !== 'string') continue;
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

/** The plugin's and busboy's errors, said as what the caller did wrong. */
function asUploadMistake(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return badRequest(`an attachment is over ${MAX_ATTACHMENT_BYTES} bytes`);
    case 'FST_FILES_LIMIT':
      return badRequest(`at most ${MAX_FILES_PER_CALL} files a call`);
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return badRequest(`too many fields in the multipart body (at most ${MAX_FIELDS})`);
    case 'FST_PROTO_VIOLATION':
      return badRequest('malformed multipart body: a field name that is not allowed');
    default: {
      const message = error instanceof Error ? error.message : String(error);
      return badRequest(`malformed multipart body: ${message}`);
    }
  }
}
