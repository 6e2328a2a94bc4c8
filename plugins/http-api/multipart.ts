import type { FastifyRequest } from 'fastify';
import { MultipartError, multipartParts, sizeInWords } from '../../src/index.js';
import { safeContentType, safeFileName, type PostedFile, type UploadDir } from './uploads.js';

/** The most files one POST may carry (each up to `file_max`). */
export const MAX_FILES_PER_POST = 10;
/** The most fields besides the files (text, username, kind, reply_to, and room for what other tools add). */
const MAX_FIELDS = 20;

/** A multipart POST that cannot be taken: the status and the JSON error it is answered with. */
export class UploadRefused extends Error {
  constructor(readonly status: number, message: string, readonly field?: string) {
    super(message);
    this.name = 'UploadRefused';
  }
}

export interface Upload {
  /** The text fields, each given once. */
  fields: Record<string, string>;
  files: PostedFile[];
}

/**
 * Reads a multipart/form-data POST: text fields by name, every file part streamed to a file of its own
 * in `uploads` (in the order sent). `tap` sees every byte of the raw body (a signed POST's signature is
 * over it). A file over `fileMax`, more than MAX_FILES_PER_POST files, a field over `fieldMax` bytes,
 * a field given twice or a broken body: UploadRefused, and the files already written are removed.
 */
export async function readUpload(
  request: FastifyRequest,
  options: { uploads: UploadDir; fileMax: number; fieldMax: number; tap?: (chunk: Buffer) => void },
): Promise<Upload> {
  const { uploads, fileMax, fieldMax, tap } = options;
  const fields: Record<string, string> = Object.create(null) as Record<string, string>;
  const files: PostedFile[] = [];
  const raw = request.raw;
  try {
    // The tap is added in the same turn as the iteration below pipes the request into the parser, so
    // both see every chunk (a 'data' listener starts the flow only on a later turn).
    if (tap) raw.on('data', tap);
    const parts = multipartParts(request, {
      // A file past fileSize is cut short and marked truncated: written up to there, then refused below.
      fileSize: fileMax, files: MAX_FILES_PER_POST, fields: MAX_FIELDS, fieldSize: fieldMax, parts: MAX_FILES_PER_POST + MAX_FIELDS,
    });
    for await (const part of parts) {
      if (part.type === 'file') {
        const name = safeFileName(part.filename);
        const written = await uploads.write(part.file);
        files.push({ file: written.file, name, content_type: safeContentType(part.mimetype), size: written.size });
        if (part.file.truncated) throw new UploadRefused(413, `file ${name}: larger than ${sizeInWords(fileMax)} (file_max)`, 'file');
        continue;
      }
      const field = part.fieldname;
      if (part.valueTruncated) throw new UploadRefused(413, `${field}: larger than ${fieldMax} bytes`, field);
      // A field sent with Content-Type: application/json is not text.
      if (part.mimetype.startsWith('application/json')) throw new UploadRefused(400, `${field}: must be text`, field);
      if (field in fields) throw new UploadRefused(400, `${field}: given more than once`, field);
      fields[field] = part.value;
    }
  } catch (error) {
    await uploads.remove(files.map((posted) => posted.file));
    // What is left of the body is read and dropped (not kept) by multipartParts, so the client gets the answer rather than a reset.
    // The plugin's own disk failing (full, not writable) is not the client's mistake: an error of ours (500, logged).
    throw typeof (error as { syscall?: unknown } | null)?.syscall === 'string' ? error : asRefusal(error);
  } finally {
    if (tap) raw.off('data', tap);
  }
  return { fields, files };
}

/** The parser's errors (and busboy's, on a file of a broken body), said as what the client did wrong. */
function asRefusal(error: unknown): UploadRefused {
  if (error instanceof UploadRefused) return error;
  if (error instanceof MultipartError) {
    switch (error.problem) {
      case 'files_limit':
        return new UploadRefused(413, `at most ${MAX_FILES_PER_POST} files a POST`, 'file');
      case 'fields_limit':
      case 'parts_limit':
        return new UploadRefused(413, `at most ${MAX_FIELDS} fields a POST`, 'body');
      case 'field_name':
      case 'malformed':
        break;
    }
  }
  return new UploadRefused(400, `the multipart body is broken: ${error instanceof Error ? error.message : String(error)}`, 'body');
}
