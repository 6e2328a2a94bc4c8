import { connect } from 'node:tls';
import { parseJson, type TestService } from './service.js';

/**
 * Requests written byte by byte over TLS, for what undici will not send (a body cut short, a header
 * line that is not HTTP, a body announced larger than what follows) and to see when the service
 * answers: before or after it has what the request announced.
 */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: any;
}

/**
 * Sends `head` (request line and headers, ending in an empty line) and then `start`, and never
 * anything more, and waits for a complete answer. The answer must come while the rest of an announced
 * body is still unsent: a service that waits to read it never answers, and this fails after
 * `waitMs` (a generous bound for a loaded machine; the answer normally comes in milliseconds).
 */
export function sendPartly(svc: TestService, head: string, start: Buffer | string = '', waitMs = 20_000): Promise<RawAnswer> {
  const url = new URL(svc.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), ca: svc.service.ca, servername: 'localhost' });
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (outcome: RawAnswer | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(() => {
      finish(new Error(`no complete answer within ${waitMs} ms while the request was incomplete; got: ${received.toString('latin1').slice(0, 300)}`));
    }, waitMs);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const answer = parseAnswer(received);
      if (answer) finish(answer);
    });
    // A service that closes after answering may reset the connection while we still hold unsent bytes.
    socket.on('error', () => finish(parseAnswer(received, true) ?? new Error(`connection failed before an answer: ${received.toString('latin1')}`)));
    socket.on('close', () => finish(parseAnswer(received, true) ?? new Error(`connection closed without an answer: ${received.toString('latin1')}`)));
    socket.write(head);
    if (start.length > 0) socket.write(start);
  });
}

/** A whole answer once the headers and a Content-Length body are in (or, at close, whatever came). */
function parseAnswer(data: Buffer, closed = false): RawAnswer | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const lines = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(lines[0]!.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const bodyBytes = data.subarray(end + 4);
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  if (length === undefined ? !closed : bodyBytes.length < length) return undefined;
  const text = bodyBytes.subarray(0, length ?? bodyBytes.length).toString('utf8');
  let body: unknown;
  try {
    body = text ? parseJson(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status, headers, text, body };
}

/** A request head: the request line, Host, the given headers, and the empty line. */
export function requestHead(method: string, path: string, headers: Record<string, string | number> = {}): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: localhost'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/**
 * The opening of a multipart/form-data body: the given fields, then the head of one file part and its
 * first 4 KiB (a parser holds back the last bytes it has until it knows they are not a boundary, so a
 * file's head alone is not yet a file to it).
 */
export function multipartStart(boundary: string, fields: Record<string, string>, fileName = 'big.bin'): string {
  let out = '';
  for (const [name, value] of Object.entries(fields)) {
    out += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  out += `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\n`;
  out += 'Content-Type: application/octet-stream\r\n\r\n';
  return out + 'x'.repeat(4096);
}
