import { maxHeaderSize as defaultMaxHeaderSize, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ApiError, badRequest } from './errors.js';

/**
 * The errors fastify, its plugins and Node's HTTP parser raise for a request that is the caller's
 * mistake, said as the spec's error object (`bad_request`, HTTP 400, spec 2.2 and part 7) instead of
 * the framework's own bodies and statuses (404, 413, 415, 431, ...).
 */

/** Fastify's codes for a caller's mistake, with what the error object says instead. */
const FASTIFY_MISTAKES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'body too large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'content type not accepted: send application/x-www-form-urlencoded or JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'body size does not match Content-Length',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'body is not valid JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'body is not valid JSON',
  FST_ERR_BAD_URL: 'malformed URL (broken %-encoding in the path)',
  FST_ERR_ROUTE_MISSING_CONTENT_TYPE: 'a body needs a content type',
};

/**
 * The error object for an error that is the caller's mistake; undefined for anything else (a failure
 * of the service itself, answered `server` and logged as such).
 */
export function asCallerMistake(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code in FASTIFY_MISTAKES) return badRequest(FASTIFY_MISTAKES[code]!);
  // Fastify and its plugins mark what the request did wrong with a 4xx status; a request that broke off
  // while its body was read gets one too.
  const status = (error as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return badRequest(error.message);
  return undefined;
}

/** What Node's HTTP parser refused, in words for the error object's `extra`. */
function describeParseError(error: Error & { code?: string }, maxHeaderBytes: number): string {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return `request line and headers too large (at most ${maxHeaderBytes} bytes together)`;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return 'the request did not arrive in time';
    case 'HPE_INVALID_METHOD':
      return 'malformed request: unknown method';
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return 'malformed request: invalid Content-Length';
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CHUNK_SIZE':
      return 'malformed request: invalid chunked encoding';
    default:
      return `malformed request (${error.code ?? 'unparsable'})`;
  }
}

/** An error of the TLS layer rather than the HTTP parser (OpenSSL's carry `library`). */
function isTlsFailure(error: Error & { code?: string; library?: string }): boolean {
  const code = error.code ?? '';
  return code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || error.library !== undefined;
}

/**
 * Answers what Node's HTTP parser refuses before any route runs (a request line or headers over the
 * size limit, a header line that is not HTTP, an unknown method, a request that did not arrive in
 * time) with HTTP 400 and the error object, then closes the connection (the parser cannot go on after
 * such a request). Replaces fastify's answer, which has its own body and statuses 408 and 431.
 */
export function answerUnparsableRequests(server: Server, log: Logger): void {
  // The server's own option when one was given (Node's types do not list it), else Node's default.
  const maxHeaderBytes = (server as Server & { maxHeaderSize?: number }).maxHeaderSize ?? defaultMaxHeaderSize;
  for (const listener of server.listeners('clientError')) server.removeListener('clientError', listener as never);
  server.on('clientError', (error: Error & { code?: string }, socket: Socket) => {
    // A connection reset has nothing left to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // A TLS failure (a handshake too slow or broken) comes here too (https's tlsClientError), on a socket
    // that can carry no answer: what is written waits for a handshake that never comes, so destroySoon
    // below would keep it open for good (#31 item 3).
    if (isTlsFailure(error)) {
      socket.destroy();
      return;
    }
    const extra = describeParseError(error, maxHeaderBytes);
    log.debug({ code: error.code, extra }, 'request refused');
    // As Node does: no answer in the middle of another one already started on this connection.
    const busy = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (socket.writable && !busy) {
      const body = JSON.stringify(new ApiError('bad_request', extra).toBody());
      socket.write(
        'HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    // Close once what was written has gone out.
    socket.destroySoon();
  });
}
