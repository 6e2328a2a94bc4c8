import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, ok } from './answers.js';
import { BOT, TEAM, TOKENS, type Clock } from './state.js';
import type { Answer, StoredMessage } from './web-api.js';

/**
 * The fake Slack's files, written from Slack's documented shapes:
 * - a person's file (`FakeSlack.shareFile`): a file object with `url_private` and
 *   `url_private_download` on the fake's host (`/files-pri/<team>-<id>/[download/]<name>`), served only
 *   with the bot token (`Authorization: Bearer`); without it Slack redirects to its sign-in page (302);
 * - the external upload flow (https://api.slack.com/messaging/files#uploading_files):
 *   files.getUploadURLExternal (`filename`, `length`) answers `upload_url` (a signed URL of the fake's
 *   `/upload/v1/<secret>`) and `file_id`; the bytes are POSTed there raw; files.completeUploadExternal
 *   (`files` [{id, title}], `channel_id`, `thread_ts`, `initial_comment`) shares them in one message
 *   (user the bot, `upload: true`, `files`, the comment as its text) and answers the file objects with
 *   their `shares`. A file not uploaded, or uploaded with another length than asked, is refused.
 * Counts: `downloads` (with the token), `refusedDownloads`, `uploads` (bytes POSTed), and `shares`.
 */

export interface FakeFile {
  id: string;
  name: string;
  title: string;
  mimetype: string;
  user: string;
  bytes: Buffer;
  /** Where the file was shared: channel → the messages' ts. */
  shares: Record<string, Array<{ ts: string; thread_ts?: string }>>;
}

/** One completeUploadExternal that shared files in a channel. */
export interface Shared {
  channel: string;
  ts: string;
  thread_ts?: string;
  /** The initial_comment (the message's text). */
  text: string;
  files: FakeFile[];
}

interface PendingUpload {
  id: string;
  filename: string;
  length: number;
  bytes?: Buffer;
}

export class FakeFiles {
  readonly files = new Map<string, FakeFile>();
  readonly shares: Shared[] = [];
  downloads = 0;
  refusedDownloads = 0;
  uploads = 0;
  private readonly pending = new Map<string, PendingUpload>();
  private count = 0;

  constructor(private readonly base: () => string, private readonly clock: Clock, private readonly revoked: ReadonlySet<string>) {}

  /** A person's file (not yet in a message: FakeSlack.shareFile says it). */
  add(user: string, file: { name: string; mimetype: string; bytes: Buffer; title?: string }): FakeFile {
    const stored: FakeFile = { id: this.nextId(), name: file.name, title: file.title ?? file.name, mimetype: file.mimetype, user, bytes: file.bytes, shares: {} };
    this.files.set(stored.id, stored);
    return stored;
  }

  /** A file as Slack's API shows it (https://api.slack.com/types/file). */
  object(file: FakeFile): Record<string, unknown> {
    const path = `${this.base()}/files-pri/${TEAM.id}-${file.id}`;
    const name = encodeURIComponent(file.name);
    return {
      id: file.id, created: 1_700_000_000, timestamp: 1_700_000_000, name: file.name, title: file.title, mimetype: file.mimetype,
      filetype: file.name.split('.').pop() ?? '', pretty_type: file.mimetype, user: file.user, user_team: TEAM.id, editable: false,
      size: file.bytes.length, mode: 'hosted', is_external: false, external_type: '', is_public: true, public_url_shared: false,
      display_as_bot: false, url_private: `${path}/${name}`, url_private_download: `${path}/download/${name}`,
      permalink: `https://${TEAM.domain}.slack.com/files/${file.user}/${file.id}/${name}`, shares: { public: file.shares },
    };
  }

  getUploadURLExternal(args: Record<string, string>): Answer {
    const length = Number(args.length);
    if (!args.filename || !Number.isInteger(length) || length < 0) return fail('invalid_arguments');
    const secret = randomBytes(12).toString('hex');
    const id = this.nextId();
    this.pending.set(secret, { id, filename: args.filename, length });
    return ok({ upload_url: `${this.base()}/upload/v1/${secret}`, file_id: id });
  }

  /**
   * files.completeUploadExternal: the uploaded files shared in `channel` (already checked: the app is in
   * it) in one message, kept with `store`.
   */
  complete(args: Record<string, string>, channel: string, store: (message: StoredMessage) => void): Answer {
    let asked: Array<{ id?: string; title?: string }>;
    try {
      asked = JSON.parse(args.files ?? '') as Array<{ id?: string; title?: string }>;
    } catch {
      return fail('invalid_arguments');
    }
    if (!Array.isArray(asked) || asked.length === 0 || asked.length > 10) return fail('invalid_arguments');
    const uploads: Array<[string, PendingUpload]> = [];
    for (const { id } of asked) {
      const found = [...this.pending].find(([, upload]) => upload.id === id);
      if (!found || !found[1].bytes) return fail('file_not_found');
      if (found[1].bytes.length !== found[1].length) return fail('file_upload_size_mismatch');
      uploads.push(found);
    }
    const ts = this.clock.ts();
    const files = uploads.map(([secret, upload], index) => {
      this.pending.delete(secret);
      const file: FakeFile = {
        id: upload.id, name: upload.filename, title: asked[index]!.title ?? upload.filename, mimetype: mimetypeOf(upload.filename),
        user: BOT.userId, bytes: upload.bytes!, shares: { [channel]: [{ ts, ...(args.thread_ts ? { thread_ts: args.thread_ts } : {}) }] },
      };
      this.files.set(file.id, file);
      return file;
    });
    const text = args.initial_comment ?? '';
    this.shares.push({ channel, ts, text, files, ...(args.thread_ts ? { thread_ts: args.thread_ts } : {}) });
    store({
      type: 'message', subtype: 'file_share', ts, text, user: BOT.userId, bot_id: BOT.botId, upload: true,
      files: files.map((file) => this.object(file)), ...(args.thread_ts ? { thread_ts: args.thread_ts } : {}),
    });
    return ok({ files: files.map((file) => this.object(file)) });
  }

  /** Serves `/files-pri/...` (downloads, with the bot token) and `/upload/v1/...` (the bytes of an upload); false for other paths. */
  serve(request: IncomingMessage, response: ServerResponse, path: string): boolean {
    const upload = /^\/upload\/v1\/([0-9a-f]+)$/.exec(path);
    if (upload && request.method === 'POST') {
      void this.receive(request, response, upload[1]!);
      return true;
    }
    const download = /^\/files-pri\/[A-Z0-9]+-(F[A-Z0-9]+)\/(?:download\/)?[^/]+$/.exec(path);
    if (!download || request.method !== 'GET') return false;
    const bearer = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    const file = this.files.get(download[1]!);
    if (bearer !== TOKENS.bot || this.revoked.has('bot')) {
      this.refusedDownloads += 1;
      response.writeHead(302, { location: `${this.base()}/?redir=${encodeURIComponent(path)}` });
      response.end();
      return true;
    }
    if (!file) {
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('file not found');
      return true;
    }
    this.downloads += 1;
    response.writeHead(200, { 'content-type': file.mimetype, 'content-length': String(file.bytes.length) });
    response.end(file.bytes);
    return true;
  }

  private async receive(request: IncomingMessage, response: ServerResponse, secret: string): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const pending = this.pending.get(secret);
    if (!pending) {
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('unknown upload');
      return;
    }
    pending.bytes = Buffer.concat(chunks);
    this.uploads += 1;
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(`OK - ${pending.bytes.length}`);
  }

  private nextId(): string {
    this.count += 1;
    return `F0FILE${String(this.count).padStart(4, '0')}`;
  }
}

function mimetypeOf(name: string): string {
  const extension = name.split('.').pop()?.toLowerCase();
  return extension === 'png' ? 'image/png' : extension === 'jpg' || extension === 'jpeg' ? 'image/jpeg' : extension === 'txt' ? 'text/plain' : 'application/octet-stream';
}
