import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { oneLineName, type Attachment, type MediaFiles, type RefusedFile } from '../../src/index.js';
import { escapeForDiscord } from './render.js';

/** Discord takes at most this many files in one message. */
export const FILES_PER_MESSAGE = 10;
/** Discord's limit of a message's content, in characters. */
const CONTENT_MAX = 2_000;

/**
 * The files of a line that go up with its post: in order, as many as one message takes, while their
 * sizes together stay within `maxSize` (Discord's upload limit is per message). The others show as links.
 */
export function uploadable(files: readonly Attachment[], maxSize: number): Attachment[] {
  const chosen: Attachment[] = [];
  let total = 0;
  for (const file of files) {
    if (chosen.length === FILES_PER_MESSAGE) break;
    if (file.size === 0 || total + file.size > maxSize) continue;
    chosen.push(file);
    total += file.size;
  }
  return chosen;
}

/**
 * Files shown as links on Discord, one line each (`[image: photo.png <https://…>]`, as fileLines says
 * them elsewhere): the name escaped like any text, the link in angle brackets (left whole, and no
 * preview); refused files say why.
 */
export function discordFileLines(files: readonly Attachment[] | undefined, refused?: readonly RefusedFile[]): string[] {
  const lines = (files ?? []).map((file) => `[${file.image ? 'image' : 'file'}: ${escapeForDiscord(oneLineName(file.name))}${file.url ? ` <${file.url}>` : ''}]`);
  for (const file of refused ?? []) lines.push(escapeForDiscord(`[a file was not relayed: ${oneLineName(file.name)}: ${file.reason}]`));
  return lines;
}

/** A post's content with file lines after it, within Discord's 2,000 characters (the text is cut, not the links). */
export function withFileLines(content: string, lines: readonly string[]): string {
  if (lines.length === 0) return content;
  const tail = lines.join('\n').slice(0, CONTENT_MAX);
  if (content === '') return tail;
  const room = CONTENT_MAX - tail.length - 1;
  if (content.length <= room) return `${content}\n${tail}`;
  return room > 1 ? `${content.slice(0, room - 1)}…\n${tail}` : tail;
}

/** A multipart/form-data body and what its headers say of it. */
export interface MultipartBody {
  /** Read anew each time it is iterated (the REST client may send a request again): the files from disk as they are sent. */
  body: AsyncIterable<Uint8Array>;
  contentType: string;
  length: number;
}

/**
 * A message with files as Discord takes it (https://discord.com/developers/docs/reference#uploading-files):
 * multipart/form-data, `payload_json` (with `attachments` naming each part) and `files[n]`, each part's
 * bytes read from the media store as they are sent, with backpressure (never whole in memory), its
 * length known beforehand (Content-Length). Undefined when the store no longer has one of the files
 * (its retention removed it): the post shows their links instead.
 */
export async function multipartOf(payload: Record<string, unknown>, files: readonly Attachment[], media: MediaFiles): Promise<MultipartBody | undefined> {
  const sizes: number[] = [];
  for (const file of files) {
    try {
      sizes.push((await stat(media.pathOf(file.id))).size);
    } catch {
      return undefined;
    }
  }
  const boundary = `groupwire-${randomBytes(16).toString('hex')}`;
  const json = JSON.stringify({ ...payload, attachments: files.map((file, index) => ({ id: index, filename: file.name })) });
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="payload_json"\r\nContent-Type: application/json\r\n\r\n${json}\r\n`);
  const parts = files.map((file, index) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="files[${index}]"; filename="${quoted(file.name)}"\r\n`
    + `Content-Type: ${file.contentType.replace(/[\r\n]/g, '')}\r\n\r\n`));
  const crlf = Buffer.from('\r\n');
  const tail = Buffer.from(`--${boundary}--\r\n`);
  const length = head.length + parts.reduce((total, part, index) => total + part.length + sizes[index]! + crlf.length, 0) + tail.length;
  const body = {
    async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
      yield head;
      for (const [index, file] of files.entries()) {
        yield parts[index]!;
        const bytes = await media.open(file.id);
        try {
          for await (const chunk of bytes) yield chunk as Uint8Array;
        } finally {
          bytes.destroy();
        }
        yield crlf;
      }
      yield tail;
    },
  };
  return { body, contentType: `multipart/form-data; boundary=${boundary}`, length };
}

/** A file name in a part's header: line breaks and quotes percent-encoded, as browsers and undici do. */
function quoted(name: string): string {
  return name.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}
