import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The fake Discord's attachments, from Discord's developer docs:
 * - an attachment object (https://discord.com/developers/docs/resources/message#attachment-object):
 *   `id`, `filename`, `content_type`, `size`, `url` and `proxy_url` on the CDN, signed as Discord signs
 *   them (`ex`, `is`, `hm` query parameters: https://discord.com/developers/docs/reference#signed-attachment-cdn-urls);
 *   the CDN (`/attachments/<channel>/<id>/<filename>` on the fake's host) serves the bytes only for a
 *   URL whose signature holds, else 404 "This content is no longer available."; counted in
 *   `downloads` and `refusedDownloads`;
 * - uploads (https://discord.com/developers/docs/reference#uploading-files): a multipart/form-data body
 *   with `payload_json` (its `attachments` [{id, filename}] naming the parts) and `files[n]` parts;
 *   the files kept with their bytes (`uploads` counts them).
 */

export interface FakeAttachment {
  id: string;
  filename: string;
  content_type: string;
  size: number;
  url: string;
  proxy_url: string;
}

export interface StoredFile {
  attachment: FakeAttachment;
  bytes: Buffer;
}

/** A multipart body's JSON (payload_json) and its files, in the order of their `files[n]` names. */
export interface Multipart {
  json: Record<string, unknown>;
  files: Array<{ index: number; filename: string; contentType: string; bytes: Buffer }>;
}

export class FakeDiscordFiles {
  /** Every attachment's bytes, by attachment id. */
  readonly stored = new Map<string, StoredFile>();
  downloads = 0;
  refusedDownloads = 0;
  uploads = 0;
  private readonly secret = randomBytes(16);

  constructor(private readonly base: () => string, private readonly snowflake: () => string) {}

  /** Keeps a file in a channel and answers its attachment object (with a signed CDN URL). */
  add(channelId: string, file: { filename: string; contentType: string; bytes: Buffer }): FakeAttachment {
    const id = this.snowflake();
    const path = `/attachments/${channelId}/${id}/${encodeURIComponent(file.filename)}`;
    const ex = (Math.floor(Date.now() / 1000) + 86_400).toString(16);
    const is = Math.floor(Date.now() / 1000).toString(16);
    const url = `${this.base()}${path}?ex=${ex}&is=${is}&hm=${this.sign(path, ex, is)}&`;
    const attachment: FakeAttachment = { id, filename: file.filename, content_type: file.contentType, size: file.bytes.length, url, proxy_url: url };
    this.stored.set(id, { attachment, bytes: file.bytes });
    return attachment;
  }

  /** Serves the CDN's `/attachments/...`; false for other paths. */
  serve(request: IncomingMessage, response: ServerResponse, url: URL): boolean {
    const match = /^\/attachments\/\d+\/(\d+)\/[^/]+$/.exec(url.pathname);
    if (!match || request.method !== 'GET') return false;
    const file = this.stored.get(match[1]!);
    const ex = url.searchParams.get('ex') ?? '';
    const is = url.searchParams.get('is') ?? '';
    if (!file || url.searchParams.get('hm') !== this.sign(url.pathname, ex, is) || Number.parseInt(ex, 16) * 1000 < Date.now()) {
      this.refusedDownloads += 1;
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('This content is no longer available.');
      return true;
    }
    this.downloads += 1;
    response.writeHead(200, { 'content-type': file.attachment.content_type, 'content-length': String(file.bytes.length) });
    response.end(file.bytes);
    return true;
  }

  /** A message body: JSON, or multipart with payload_json and files[n]. */
  async parse(body: Buffer, contentType: string | undefined): Promise<Multipart> {
    if (!contentType?.startsWith('multipart/form-data')) return { json: body.length ? JSON.parse(body.toString('utf8')) as Record<string, unknown> : {}, files: [] };
    const form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
    const json = JSON.parse(String(form.get('payload_json') ?? '{}')) as Record<string, unknown>;
    const files: Multipart['files'] = [];
    for (const [name, value] of form) {
      const index = /^files\[(\d+)\]$/.exec(name)?.[1];
      if (index === undefined || typeof value === 'string') continue;
      files.push({ index: Number(index), filename: value.name, contentType: value.type || 'application/octet-stream', bytes: Buffer.from(await value.arrayBuffer()) });
    }
    return { json, files };
  }

  /** The attachments of a posted message (counted as uploads): each `files[n]` kept, under the filename payload_json's `attachments` gives it. */
  attach(channelId: string, upload: Multipart): FakeAttachment[] {
    const named = (upload.json.attachments as Array<{ id: number | string; filename?: string }> | undefined) ?? [];
    this.uploads += upload.files.length;
    return upload.files.map((file) => {
      const filename = named.find((entry) => Number(entry.id) === file.index)?.filename ?? file.filename;
      return this.add(channelId, { filename, contentType: file.contentType, bytes: file.bytes });
    });
  }

  private sign(path: string, ex: string, is: string): string {
    return createHmac('sha256', this.secret).update(`${path}\n${ex}\n${is}`).digest('hex');
  }
}
