import type { Readable } from 'node:stream';
import type { Caller } from './auth.js';
import type { ServiceCore } from './core.js';
import type { Params } from './params.js';

export interface UploadedFile {
  filename: string;
  mediaType: string;
  data: Buffer;
}

export interface OpContext {
  core: ServiceCore;
  params: Params;
  caller: Caller;
  /** Files of a multipart/form-data body (addattachments). */
  files: UploadedFile[];
}

/** HTTP 200 with an empty body: the spec's "HTTP 200" for operations with nothing to return. */
export const EMPTY_OK = Symbol('HTTP 200, empty body');

/** A response that is a file rather than JSON (the archive download). */
export class FileResult {
  constructor(
    readonly stream: Readable,
    readonly contentType: string,
    readonly filename: string,
  ) {}
}

export interface Operation {
  name: string;
  method: 'GET' | 'POST';
  run(ctx: OpContext): unknown;
}

export function defineOp(name: string, method: 'GET' | 'POST', run: (ctx: OpContext) => unknown): Operation {
  return { name, method, run };
}
