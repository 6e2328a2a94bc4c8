import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import type { BusboyConstructor, BusboyFileStream, BusboyInstance } from '@fastify/busboy';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * multipart/form-data bodies read part by part, on a fastify server: the local service's
 * addattachments and the HTTP API's POST with files. busboy parses; this module is the little the two
 * need around it (what @fastify/multipart gave them, without its other features and packages).
 */

/** What one multipart body may hold; a limit not given is not enforced (busboy's defaults aside). */
export interface MultipartLimits {
  /** The most bytes of one file: past it the file's stream ends early and its `truncated` is true. */
  fileSize?: number;
  /** The most file parts. */
  files?: number;
  /** The most text fields. */
  fields?: number;
  /** The most bytes of one field's value: past it the value is cut and `valueTruncated` is true. */
  fieldSize?: number;
  /** The most parts of either kind. */
  parts?: number;
}

/** A text field of a multipart body. */
export interface MultipartField {
  type: 'field';
  fieldname: string;
  /** The value, decoded from the part's charset (UTF-8 unless it names another). */
  value: string;
  /** The value was longer than `fieldSize` and is cut there. */
  valueTruncated: boolean;
  /** The part's Content-Type (`text/plain` when it gives none). */
  mimetype: string;
}

/** A file of a multipart body: its bytes are `file`, which must be read (or resumed) before the next part comes. */
export interface MultipartFile {
  type: 'file';
  fieldname: string;
  /** The name the client gave (its last path segment), or '' when it gave none. */
  filename: string;
  mimetype: string;
  /** The bytes; `truncated` is true once the file passed `fileSize` (checked when the stream ended). */
  file: Readable & { truncated: boolean };
}

/** A part of a multipart body: a text field or a file. */
export type MultipartPart = MultipartField | MultipartFile;

/** Why a multipart body was not read to its end, with the HTTP status that says it best. */
export type MultipartProblem = 'files_limit' | 'fields_limit' | 'parts_limit' | 'field_name' | 'malformed';

/**
 * A multipart body that cannot be read: a count limit passed (413: `files_limit`, `fields_limit`,
 * `parts_limit`), a field named like an Object.prototype property (`field_name`, 400), or a body that
 * is not multipart/form-data as sent: no boundary, cut short, the client gone (`malformed`, 400). A file
 * read when the body broke fails with this error too.
 */
export class MultipartError extends Error {
  readonly status: 400 | 413;

  constructor(readonly problem: MultipartProblem, message: string) {
    super(message);
    this.name = 'MultipartError';
    this.status = problem.endsWith('_limit') ? 413 : 400;
  }
}

const MULTIPART = 'multipart/form-data';
/** The requests the parser below took: a multipart body, left unread for multipartParts(). */
const multipartRequests = new WeakSet<object>();

/**
 * Lets `app` take multipart/form-data bodies: the body is not read before the route runs; the route
 * reads it with multipartParts() (isMultipart() tells it one came).
 */
export function acceptMultipart(app: FastifyInstance): void {
  app.addContentTypeParser(MULTIPART, (request, _payload, done) => {
    multipartRequests.add(request);
    done(null, undefined);
  });
}

/** Whether `request` came with a multipart/form-data body (taken by acceptMultipart's parser). */
export function isMultipart(request: FastifyRequest): boolean {
  return multipartRequests.has(request);
}

/**
 * busboy, loaded the first time a multipart body is read (not by every process that imports the
 * public API), and synchronously: the caller may tap the request's 'data' in the same turn as the
 * iteration starts, and both must see the first chunk.
 */
let busboy: BusboyConstructor | undefined;
function loadBusboy(): BusboyConstructor {
  busboy ??= (createRequire(import.meta.url)('@fastify/busboy') as { Busboy: BusboyConstructor }).Busboy;
  return busboy;
}

/**
 * The parts of a multipart body, in the order sent. The request is piped into the parser when the
 * iteration starts (in that same turn). When a count limit is passed, the parts read before it come
 * (a file from its headers on, a field once its value ended), then the iteration throws a
 * MultipartError. A body cut short, or a client that goes away, fails the stream of the file being read
 * (with busboy's error or this one), then the iteration. An empty body has no parts. When the iteration
 * stops before the body's end (an error, or the caller's break), the rest of the body is read and
 * dropped, so the client gets the answer rather than a reset.
 */
export async function* multipartParts(request: FastifyRequest, limits: MultipartLimits = {}): AsyncGenerator<MultipartPart, void, undefined> {
  const raw = request.raw;
  const ready: MultipartPart[] = [];
  let failure: MultipartError | undefined;
  let ended = false;
  let wake: (() => void) | undefined;
  let reading: BusboyFileStream | undefined;
  let sawData = false;
  const notify = () => {
    const waiting = wake;
    wake = undefined;
    waiting?.();
  };
  /** `breaks`: the body is broken, so the file being read will not get the rest of its bytes. */
  const fail = (error: MultipartError, breaks = false) => {
    failure ??= error;
    if (breaks && reading && !reading.readableEnded) reading.destroy(error);
    notify();
  };
  const onClose = () => {
    if (!raw.readableEnded) fail(new MultipartError('malformed', 'the request was closed before the multipart body was read'), true);
  };
  const onFirstData = () => {
    sawData = true;
  };

  let parser: BusboyInstance | undefined;
  try {
    try {
      parser = loadBusboy()({ headers: raw.headers as { 'content-type': string }, limits });
    } catch (error) {
      throw new MultipartError('malformed', messageOf(error));
    }
    parser
      .on('field', (fieldname, value, _nameTruncated, valueTruncated, _encoding, mimetype) => {
        if (failure) return;
        if (fieldname in Object.prototype) return fail(forbiddenName(fieldname));
        ready.push({ type: 'field', fieldname, value, valueTruncated, mimetype });
        notify();
      })
      .on('file', (fieldname, stream, filename, _encoding, mimetype) => {
        // busboy sends the body's errors (cut short) to the file being read too; its reader sees them.
        stream.on('error', () => {});
        // After a failure the iteration ends there: what follows is read and dropped.
        if (failure || fieldname in Object.prototype) {
          stream.resume();
          if (!failure) fail(forbiddenName(fieldname));
          return;
        }
        reading = stream;
        // A file its reader let go of before its end (destroyed) holds the parser up: the body ends there.
        stream.on('close', () => {
          if (!stream.readableEnded) fail(new MultipartError('malformed', `file ${filename || fieldname} was not read to its end`));
        });
        ready.push({ type: 'file', fieldname, filename, mimetype, file: stream });
        notify();
      })
      .on('filesLimit', () => fail(new MultipartError('files_limit', `more than ${limits.files} files`)))
      .on('fieldsLimit', () => fail(new MultipartError('fields_limit', `more than ${limits.fields} fields`)))
      .on('partsLimit', () => fail(new MultipartError('parts_limit', `more than ${limits.parts} parts`)))
      .on('finish', () => {
        ended = true;
        notify();
      })
      .on('error', (error: unknown) => {
        // No byte at all is an empty form, not a body cut short.
        if (!sawData && messageOf(error) === 'Unexpected end of multipart data') {
          ended = true;
          notify();
        } else fail(new MultipartError('malformed', messageOf(error)), true);
      });
    raw.on('close', onClose);
    raw.once('data', onFirstData);
    raw.pipe(parser);

    for (;;) {
      const part = ready.shift();
      if (part) yield part;
      else if (failure) throw failure;
      else if (ended) return;
      else await new Promise<void>((resolve) => { wake = resolve; });
    }
  } finally {
    raw.off('close', onClose);
    raw.off('data', onFirstData);
    if (!ended) {
      if (parser) raw.unpipe(parser);
      raw.resume();
    }
  }
}

function forbiddenName(fieldname: string): MultipartError {
  return new MultipartError('field_name', `a field may not be named ${fieldname}`);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
