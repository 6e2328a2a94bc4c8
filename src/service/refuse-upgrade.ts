import type { Duplex } from 'node:stream';
import type { ApiError } from './errors.js';

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 429: 'Too Many Requests', 503: 'Service Unavailable' };

/** Answers a refused upgrade with the error object as an ordinary HTTP response. */
export function refuseUpgrade(socket: Duplex, error: ApiError): void {
  const body = JSON.stringify(error.toBody());
  const headers = [
    `HTTP/1.1 ${error.status} ${STATUS_TEXT[error.status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(error.headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`);
}
