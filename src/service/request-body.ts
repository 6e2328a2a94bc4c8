import type { FastifyInstance, FastifyRequest } from 'fastify';
import { quoteLongIntegers } from '../api/wire-json.js';
import { badRequest } from './errors.js';
import { decodeForm } from './form-decoding.js';

/**
 * What a request body may be, decided from its headers before a byte of it is read, and the parsers
 * that read the bodies the service takes (form and JSON; multipart is read by the operation that takes
 * files, see multipart-upload.ts).
 */

/** Our decision: login needs two short fields and a code; a larger body is not a login. */
export const LOGIN_BODY_LIMIT = 64 * 1024;
/**
 * Our decision: the largest form or JSON body of any other call. The largest value is a draft body
 * (1 MiB of UTF-8); %-encoding can triple it and JSON's \u escapes make it up to six times longer.
 */
export const OPERATION_BODY_LIMIT = 8 * 1024 * 1024;

const FORM = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';
const MULTIPART = 'multipart/form-data';

export interface BodyRules {
  operation: string;
  /** The call reads multipart/form-data with files (addattachments). */
  takesFiles: boolean;
  /** The most bytes the call reads; a Content-Length above it is refused unread. */
  limit: number;
}

/** True when the request carries a body (announced by Content-Length or sent chunked). */
export function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Refuses, from the headers alone, a body the call cannot take: compressed, in a charset other than
 * UTF-8, of a content type the call does not read (multipart to a call without files), or announced
 * larger than the call's limit. Nothing of the body has been read when this throws.
 */
export function checkBodyHeaders(request: FastifyRequest, rules: BodyRules): void {
  const coding = request.headers['content-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'identity') {
    throw badRequest(`Content-Encoding ${coding} is not accepted: send the body uncompressed`);
  }
  if (!hasBody(request)) return;
  const accepted = rules.takesFiles ? `${FORM}, JSON or ${MULTIPART}` : `${FORM} or JSON`;
  const header = request.headers['content-type'];
  if (header === undefined || header.trim() === '') throw badRequest(`a body needs a content type: send ${accepted}`);
  const [essence = '', ...parameters] = header.split(';').map((part) => part.trim());
  const type = essence.toLowerCase();
  if (type === MULTIPART) {
    if (!rules.takesFiles) throw badRequest(`${rules.operation} takes no files: send ${FORM} or JSON`);
  } else if (type !== FORM && type !== JSON_TYPE) {
    throw badRequest(`content type ${essence} is not accepted: send ${accepted}`);
  } else {
    for (const parameter of parameters) {
      const [name = '', value = ''] = parameter.split('=').map((part) => part.trim().replace(/^"|"$/g, ''));
      if (name.toLowerCase() === 'charset' && !/^utf-?8$/i.test(value)) {
        throw badRequest(`charset ${value} is not accepted: send UTF-8`);
      }
    }
  }
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > rules.limit) throw badRequest(`body too large for ${rules.operation} (at most ${rules.limit} bytes)`);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function decodeUtf8(body: Buffer): string {
  try {
    return utf8.decode(body);
  } catch {
    throw badRequest('body is not valid UTF-8');
  }
}

/**
 * Replaces fastify's parsers with strict ones (fastify itself reads no forms), for every route: a form body
 * is decoded as the query string is (broken %-escapes refused); a JSON body keeps every digit (an
 * integer a double cannot hold arrives as a string of its digits, which Params' id readers take, as the
 * client does with answers), refuses prototype keys as fastify's parser does, and may be empty (one real
 * client logs in with the fields in the query string and an empty JSON body). Any other content type
 * is refused.
 */
export function installBodyParsers(app: FastifyInstance): void {
  const jsonWithoutPrototypes = app.getDefaultJsonParser('error', 'error');
  for (const type of [FORM, JSON_TYPE, 'text/plain']) {
    if (app.hasContentTypeParser(type)) app.removeContentTypeParser(type);
  }
  app.addContentTypeParser(FORM, { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, decodeForm(decodeUtf8(body as Buffer), 'form body'));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addContentTypeParser(JSON_TYPE, { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = decodeUtf8(body as Buffer);
    } catch (error) {
      done(error as Error, undefined);
      return;
    }
    if (text.trim() === '') {
      done(null, {});
      return;
    }
    jsonWithoutPrototypes(request, quoteLongIntegers(text), (error, value) => {
      if (error) done(badRequest('body is not valid JSON'), undefined);
      else done(null, value);
    });
  });
  app.addContentTypeParser('*', (request, _payload, done) => {
    done(badRequest(`content type ${request.headers['content-type'] ?? '(none)'} is not accepted`), undefined);
  });
}
