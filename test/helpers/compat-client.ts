import yauzl from 'yauzl';
import { request } from 'undici';
import type { TestService } from './service.js';

/**
 * A client written the way public clients of the real service are (../shared/spec/field-notes.md
 * "Request forms real clients send"), for the compatibility suite (test/compat-*.test.ts): plain HTTP
 * requests, plain JSON.parse, the login and cookie habits they have. Our own code: no client's code.
 */
export interface CompatAuth {
  /** A Cookie header as the client builds it. */
  cookie?: string;
  /** An API token sent as `Authorization: Bearer`. */
  bearer?: string;
}

export interface CompatAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  json(): any;
}

export class CompatClient {
  auth: CompatAuth = {};
  /** Every request made, `METHOD /path?query`, to check the sequence a kind of client makes. */
  readonly requests: string[] = [];

  constructor(private readonly svc: TestService) {}

  async send(method: 'GET' | 'POST', path: string, params: Record<string, string | number> = {}, options: { headers?: Record<string, string>; body?: string } = {}): Promise<CompatAnswer> {
    const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
    const target = `/api/v1/${path}${query ? `?${query}` : ''}`;
    this.requests.push(`${method} ${target}`);
    const headers: Record<string, string> = { ...options.headers };
    if (this.auth.cookie) headers.cookie = this.auth.cookie;
    if (this.auth.bearer) headers.authorization = `Bearer ${this.auth.bearer}`;
    const response = await request(`${this.svc.baseUrl}${target}`, { method, headers, body: options.body, dispatcher: this.svc.dispatcher });
    const body = Buffer.from(await response.body.arrayBuffer());
    return { status: response.statusCode, headers: response.headers, body, json: () => JSON.parse(body.toString('utf8')) };
  }

  /** A call whose answer must be 200 JSON; anything else throws with the service's answer. */
  async ok(method: 'GET' | 'POST', path: string, params: Record<string, string | number> = {}): Promise<any> {
    const answer = await this.send(method, path, params);
    if (answer.status !== 200) throw new Error(`${method} ${path}: ${answer.status} ${answer.body.toString('utf8')}`);
    return answer.json();
  }

  /**
   * Pages a list to the end the way the field notes say clients do: `page_token` from
   * `next_page_token`, stopping when it is 0 or `has_more` is false; `firstToken0` sends
   * `page_token=0` on the first page, as one client does.
   */
  async all(method: 'GET' | 'POST', path: string, params: Record<string, string | number>, firstToken0 = false): Promise<any[]> {
    const items: any[] = [];
    let token: number | string | undefined = firstToken0 ? 0 : undefined;
    for (let pages = 0; pages < 1000; pages += 1) {
      const page = await this.ok(method, path, { ...params, ...(token === undefined ? {} : { page_token: token }) });
      items.push(...(page.data ?? []));
      if (!page.has_more || page.next_page_token === 0) return items;
      token = page.next_page_token;
    }
    throw new Error(`${path}: more than 1000 pages`);
  }
}

/** The files of a zip, read with yauzl. */
export function unzipAll(buffer: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true }, (error, zip) => {
      if (error || !zip) return reject(error);
      const files = new Map<string, Buffer>();
      zip.on('error', reject);
      zip.on('end', () => resolve(files));
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError);
          const chunks: Buffer[] = [];
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('end', () => {
            files.set(entry.fileName, Buffer.concat(chunks));
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}

export interface MboxEntry {
  fromLine: string;
  headers: Map<string, string>;
  body: string;
}

/**
 * An mbox read as the archive-mining tool's own reader does: a message starts at a `From ` line at the
 * start of the file or after an empty line; headers (folded lines joined) up to the first empty line.
 */
export function parseMbox(text: string): MboxEntry[] {
  const entries: MboxEntry[] = [];
  const lines = text.split('\n');
  let current: string[] | undefined;
  const finish = () => {
    if (!current) return;
    const [fromLine, ...rest] = current;
    const blank = rest.indexOf('');
    const headerLines = blank === -1 ? rest : rest.slice(0, blank);
    const headers = new Map<string, string>();
    let last = '';
    for (const line of headerLines) {
      if (/^[ \t]/.test(line) && last) {
        headers.set(last, `${headers.get(last)} ${line.trim()}`);
        continue;
      }
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      last = line.slice(0, colon).toLowerCase();
      headers.set(last, line.slice(colon + 1).trim());
    }
    entries.push({ fromLine: fromLine!, headers, body: blank === -1 ? '' : rest.slice(blank + 1).join('\n') });
  };
  lines.forEach((line, index) => {
    if (line.startsWith('From ') && (index === 0 || lines[index - 1] === '')) {
      finish();
      current = [line];
    } else current?.push(line);
  });
  finish();
  return entries;
}
