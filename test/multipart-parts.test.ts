import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, test } from 'vitest';
import { acceptMultipart, isMultipart, MultipartError, multipartParts, type MultipartLimits } from '../src/index.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * multipartParts (#37: what @fastify/multipart did for the service and the HTTP API, on busboy alone):
 * a real fastify server on a local port, requests written byte by byte over a socket. The route reads
 * every part (a file to its end, counting its bytes) and answers what it saw, or the error; what it saw
 * of a request whose client went away is kept in `seen`.
 */

interface Seen {
  parts: Array<{ field: string; value?: string; filename?: string; bytes?: number; truncated?: boolean; fileError?: string }>;
  error?: { problem: string; status: number; message: string };
}

const LIMITS: MultipartLimits = { fileSize: 1_000, files: 2, fields: 3, fieldSize: 100, parts: 4 };
let app: FastifyInstance | undefined;
let port = 0;
const seen: Seen[] = [];

afterEach(async () => {
  await app?.close();
  app = undefined;
  seen.length = 0;
});

async function serve(): Promise<void> {
  app = Fastify({ logger: false, forceCloseConnections: true });
  acceptMultipart(app);
  app.post('/upload', async (request, reply) => {
    const result: Seen = { parts: [] };
    seen.push(result);
    if (!isMultipart(request)) return reply.code(415).send({ error: 'not multipart' });
    try {
      for await (const part of multipartParts(request, LIMITS)) {
        if (part.type === 'field') {
          result.parts.push({ field: part.fieldname, value: part.value });
          continue;
        }
        const file = { field: part.fieldname, filename: part.filename, bytes: 0, truncated: false, fileError: undefined as string | undefined };
        result.parts.push(file);
        try {
          for await (const chunk of part.file) file.bytes += (chunk as Buffer).length;
          file.truncated = part.file.truncated;
        } catch (error) {
          // The iteration says what broke (the next step throws).
          file.fileError = (error as Error).message;
        }
      }
    } catch (error) {
      if (!(error instanceof MultipartError)) throw error;
      result.error = { problem: error.problem, status: error.status, message: error.message };
      return reply.code(error.status).send(result);
    }
    return reply.send(result);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as AddressInfo).port;
}

const BOUNDARY = 'b0undary';
const field = (name: string, value: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const filePart = (name: string, filename: string, bytes: number) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n${'x'.repeat(bytes)}\r\n`;
const closing = `--${BOUNDARY}--\r\n`;

/** Sends a whole body (Content-Length) and the answer's status and JSON. */
function post(body: string): Promise<{ status: number; body: Seen }> {
  return rawPost(`Content-Length: ${Buffer.byteLength(body)}\r\n`, (socket) => socket.write(body));
}

function rawPost(lengthHeader: string, write: (socket: Socket) => void): Promise<{ status: number; body: Seen }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = '';
    socket.on('data', (chunk) => { received += chunk.toString('latin1'); });
    socket.on('error', reject);
    socket.on('close', () => {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return reject(new Error(`no answer: ${received}`));
      resolve({ status: Number(received.split(' ')[1]), body: JSON.parse(received.slice(end + 4)) as Seen });
    });
    socket.write(`POST /upload HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\n${lengthHeader}\r\n`);
    write(socket);
  });
}

describe('multipartParts', () => {
  test('fields and files in the order sent; a file over fileSize is cut at the limit and marked truncated, and the parts after it still come; an empty body has no parts', async () => {
    await serve();
    const answer = await post(field('text', 'hello') + filePart('file', 'big.bin', 5_000) + field('after', 'still here') + closing);
    expect(answer.status).toBe(200);
    expect(answer.body.parts).toEqual([
      { field: 'text', value: 'hello' },
      { field: 'file', filename: 'big.bin', bytes: 1_000, truncated: true },
      { field: 'after', value: 'still here' },
    ]);
    // An empty body is an empty form, not a body cut short.
    expect(await post('')).toEqual({ status: 200, body: { parts: [] } });
  });

  test('one file, field or part more than the limits: the parts read before it come (a field is read at its end, after the limit is seen), then a 413 MultipartError', async () => {
    await serve();
    const tail = filePart('late', 'late.bin', 200_000);
    const files = await post(filePart('a', 'a.bin', 10) + filePart('b', 'b.bin', 10) + filePart('c', 'c.bin', 10) + tail + closing);
    expect([files.status, files.body.error?.problem, files.body.parts.map((part) => part.filename)]).toEqual([413, 'files_limit', ['a.bin', 'b.bin']]);
    const fields = await post(field('f1', '1') + field('f2', '2') + field('f3', '3') + field('f4', '4') + tail + closing);
    expect([fields.status, fields.body.error?.problem, fields.body.parts.map((part) => part.field)]).toEqual([413, 'fields_limit', ['f1', 'f2', 'f3']]);
    const parts = await post(field('f1', '1') + field('f2', '2') + filePart('a', 'a.bin', 10) + field('f3', '3') + field('f5', '5') + tail + closing);
    expect([parts.status, parts.body.error?.problem, parts.body.parts.map((part) => part.field)]).toEqual([413, 'parts_limit', ['f1', 'f2', 'a']]);
  });

  test('a field over fieldSize is cut there and marked; a field named like a prototype property is refused with 400', async () => {
    await serve();
    const long = await post(field('text', 'y'.repeat(150)) + closing);
    expect(long.body.parts).toEqual([{ field: 'text', value: 'y'.repeat(100) }]);
    const proto = await post(field('__proto__', 'x') + closing);
    expect([proto.status, proto.body.error]).toEqual([400, { problem: 'field_name', status: 400, message: 'a field may not be named __proto__' }]);
  });

  test('a body that ends inside a file: 400 malformed, and the reader of that file gets the error instead of a short file', async () => {
    await serve();
    const cut = field('text', 'hi') + filePart('file', 'cut.bin', 500).slice(0, -250);
    const answer = await rawPost('Transfer-Encoding: chunked\r\n', (socket) => {
      socket.write(`${Buffer.byteLength(cut).toString(16)}\r\n${cut}\r\n0\r\n\r\n`);
    });
    expect([answer.status, answer.body.error?.problem]).toEqual([400, 'malformed']);
    expect(answer.body.parts[1]).toMatchObject({ field: 'file', filename: 'cut.bin', fileError: expect.any(String) });
    const noBoundary = await post(field('text', 'hi'));
    expect([noBoundary.status, noBoundary.body.error?.problem, noBoundary.body.error?.message]).toEqual([400, 'malformed', 'Unexpected end of multipart data']);
  });

  test('a client that goes away halfway through a file: the file\'s reader and the iteration fail (nothing waits for bytes that never come)', async () => {
    await serve();
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    const start = filePart('file', 'gone.bin', 100_000).slice(0, 50_000);
    socket.write(`POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: 200000\r\n\r\n${start}`);
    await waitFor('the file begun', () => (seen[0]?.parts[0]?.bytes ?? 0) > 0);
    socket.destroy();
    await waitFor('the iteration ended', () => seen[0]?.error !== undefined);
    expect(seen[0]!.error).toMatchObject({ problem: 'malformed', status: 400 });
    expect(seen[0]!.parts[0]).toMatchObject({ filename: 'gone.bin', fileError: expect.stringMatching(/closed/) });
  });
});
