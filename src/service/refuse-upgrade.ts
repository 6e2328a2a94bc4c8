import type { Duplex } from 'node:stream';
import type { ApiError } from './errors.js';

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 429: 'Too Many Requests', 503: 'Service Unavailable' };

/** How long a refused upgrade's socket stays open for its answer to be read before it is destroyed. */
const REFUSED_UPGRADE_LINGER_MS = 5_000;

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
  // The socket left the HTTP server's hands with the upgrade (no idle timeout applies any more): a caller
  // that never closes its end must not keep it open (#31 item 3).
  const linger = setTimeout(() => socket.destroy(), REFUSED_UPGRADE_LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}
