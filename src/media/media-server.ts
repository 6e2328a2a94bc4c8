import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createReadStream } from 'node:fs';
import type { Logger } from 'pino';
import { closeHttp, listenHttp } from '../ops/http-listen.js';
import { contentDisposition } from './content-disposition.js';
import type { MediaStore } from './media-store.js';

/**
 * The media store's listener (bots.yaml `media.listen`; docs/operations.md "Media"): `GET /<id>/<name>`
 * answers a stored file with the type it was stored with. On node:http, like the operations endpoint:
 * one read-only route whose headers must be exactly ours (a framework's content negotiation, compression
 * or default type would only be in the way), and bytes streamed from disk.
 *
 * Safe for what users upload: only PNG, JPEG, GIF and WebP are shown inline (their bytes were checked
 * to be one); everything else is a download (`attachment`); `nosniff`, and a sandbox with no sources,
 * so an HTML or SVG file opened from a link runs nothing. The id is 128 random bits; an unknown id, an
 * expired file or a wrong name is a 404 alike.
 */
export class MediaServer {
  private server: Server | undefined;
  private address: string | undefined;

  constructor(private readonly store: MediaStore, private readonly listenAt: string, private readonly log: Logger) {}

  /** Its address (`http://host:port`, after listen()). */
  get url(): string | undefined {
    return this.address;
  }

  /** Listens; rejects with the socket error (EADDRINUSE, EACCES). */
  async listen(): Promise<string> {
    const server = createServer((request, response) => {
      this.answer(request, response).catch((error: unknown) => {
        this.log.warn({ err: error }, 'a media request failed');
        if (!response.headersSent) send(response, 500, 'error');
        else response.destroy();
      });
    });
    server.keepAliveTimeout = 5_000;
    this.address = await listenHttp(server, this.listenAt);
    this.server = server;
    return this.address;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await closeHttp(server);
  }

  private async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('Allow', 'GET, HEAD');
      return send(response, 405, 'method not allowed');
    }
    const path = (request.url ?? '/').split('?')[0]!;
    const slash = path.indexOf('/', 1);
    const id = slash < 0 ? path.slice(1) : path.slice(1, slash);
    let name: string | undefined;
    try {
      name = slash < 0 ? undefined : decodeURIComponent(path.slice(slash + 1));
    } catch {
      name = undefined;
    }
    const file = name === undefined ? undefined : await this.store.stat(id);
    // The name is part of the link: a link with another name is no link to this file.
    if (!file || file.name !== name) return send(response, 404, 'not found');
    response.setHeader('Content-Type', file.contentType);
    response.setHeader('Content-Disposition', contentDisposition(file.name, file.contentType));
    response.setHeader('X-Content-Type-Options', 'nosniff');
    response.setHeader('Content-Security-Policy', "sandbox; default-src 'none'");
    // A link is the capability (its id unguessable): a proxy or CDN in front may keep it for a day.
    response.setHeader('Cache-Control', 'public, max-age=86400');
    response.setHeader('Accept-Ranges', 'bytes');
    const range = byteRange(request.headers.range, file.size);
    if (range === 'unsatisfiable') {
      response.setHeader('Content-Range', `bytes */${file.size}`);
      return send(response, 416, 'range not satisfiable');
    }
    const { start, end } = range ?? { start: 0, end: file.size - 1 };
    if (range) response.setHeader('Content-Range', `bytes ${start}-${end}/${file.size}`);
    response.setHeader('Content-Length', String(Math.max(0, end - start + 1)));
    response.statusCode = range ? 206 : 200;
    if (request.method === 'HEAD' || file.size === 0) {
      response.end();
      return;
    }
    const bytes = createReadStream(this.store.pathOf(id), { start, end });
    try {
      await new Promise<void>((resolve, reject) => bytes.once('open', () => resolve()).once('error', reject));
    } catch {
      // Removed since the stat (retention): gone.
      response.removeHeader('Content-Disposition');
      response.removeHeader('Content-Range');
      return send(response, 404, 'not found');
    }
    bytes.on('error', () => response.destroy());
    bytes.pipe(response);
  }
}

function send(response: ServerResponse, status: number, text: string): void {
  response.statusCode = status;
  response.setHeader('Content-Type', 'text/plain; charset=utf-8');
  response.setHeader('X-Content-Type-Options', 'nosniff');
  response.setHeader('Content-Length', String(Buffer.byteLength(text) + 1));
  response.end(`${text}\n`);
}

/** One `bytes=a-b` range (RFC 9110), or undefined for the whole file (absent, several ranges, malformed). */
function byteRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (!header || !header.startsWith('bytes=') || header.includes(',')) return undefined;
  const spec = header.slice(6).trim();
  const dash = spec.indexOf('-');
  if (dash < 0) return undefined;
  const first = spec.slice(0, dash).trim();
  const last = spec.slice(dash + 1).trim();
  const digits = (text: string) => text === '' || /^\d{1,15}$/.test(text);
  if (!digits(first) || !digits(last) || (first === '' && last === '')) return undefined;
  let start: number;
  let end: number;
  if (first === '') {
    // The last N bytes.
    const length = Number(last);
    if (length === 0) return 'unsatisfiable';
    start = Math.max(0, size - length);
    end = size - 1;
  } else {
    start = Number(first);
    end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
    if (last !== '' && Number(last) < start) return undefined;
  }
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
