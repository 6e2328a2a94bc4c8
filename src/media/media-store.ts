import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Attachment, FileBytes, MediaFiles } from './attachment.js';

/** What is kept beside a stored file's bytes (`<id>.json`). */
interface StoredMeta {
  name: string;
  contentType: string;
  size: number;
  image: boolean;
  storedAt: string;
}

/** What the caller says of a file it puts in the store. */
export interface StoredFileMeta {
  name: string;
  contentType: string;
  image: boolean;
}

/** The id: 128 random bits, hex (unguessable, safe in a path and a URL). */
const ID_PATTERN = /^[0-9a-f]{32}$/;

/**
 * The media store: a folder (under the state dir by default; shared between workers like the logger's
 * `dir`) holding each file said on a side once, as `<id>` beside `<id>.json`. Files are streamed in and
 * out, never held whole in memory. Written to a temporary name and renamed, so a kill -9 mid-download
 * leaves no half file under an id.
 */
export class MediaStore implements MediaFiles {
  constructor(readonly dir: string, private publicUrl?: string) {}

  /** The base of the links (`public_url`, or the listener's address once it listens); none: lines name files alone. */
  get linkBase(): string | undefined {
    return this.publicUrl;
  }

  set linkBase(url: string | undefined) {
    this.publicUrl = url;
  }

  /**
   * Streams `bytes` in; `limit` bytes at most (the stream is ended with an error past it). `meta` may be
   * asked for once the bytes are in (the intake knows an image's type from its first bytes).
   */
  async put(bytes: FileBytes, meta: StoredFileMeta | (() => StoredFileMeta), limit = Number.POSITIVE_INFINITY): Promise<Attachment> {
    await mkdir(this.dir, { recursive: true });
    const id = randomBytes(16).toString('hex');
    const partial = join(this.dir, `${id}.part`);
    let size = 0;
    const counted = async function* (source: AsyncIterable<Uint8Array>) {
      for await (const chunk of source) {
        size += chunk.byteLength;
        if (size > limit) throw new FileTooBigError(size, limit);
        yield chunk;
      }
    };
    try {
      await pipeline(bytes as AsyncIterable<Uint8Array>, counted, createWriteStream(partial));
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    const stored: StoredMeta = { ...(typeof meta === 'function' ? meta() : meta), size, storedAt: new Date().toISOString() };
    await writeFile(join(this.dir, `${id}.json`), JSON.stringify(stored));
    await rename(partial, this.pathOf(id));
    return this.attachment(id, stored);
  }

  /** A stored file's attachment (its meta read from disk); undefined when it is not (or no longer) there. */
  async stat(id: string): Promise<Attachment | undefined> {
    if (!ID_PATTERN.test(id)) return undefined;
    try {
      return this.attachment(id, JSON.parse(await readFile(join(this.dir, `${id}.json`), 'utf8')) as StoredMeta);
    } catch {
      return undefined;
    }
  }

  async open(id: string): Promise<Readable> {
    const stream = createReadStream(this.pathOf(id));
    // Fail here (ENOENT) rather than on the first read, so a relay can fall back to the link.
    await new Promise<void>((resolve, reject) => stream.once('open', () => resolve()).once('error', reject));
    return stream;
  }

  pathOf(id: string): string {
    if (!ID_PATTERN.test(id)) throw new Error(`not a media id: ${JSON.stringify(id)}`);
    return join(this.dir, id);
  }

  /** A stored file's attachment (with its link as the store makes links now). */
  attachment(id: string, meta: Omit<StoredMeta, 'storedAt'>): Attachment {
    const url = this.publicUrl ? `${this.publicUrl.replace(/\/+$/, '')}/${id}/${encodeURIComponent(meta.name)}` : undefined;
    return { id, name: meta.name, contentType: meta.contentType, size: meta.size, image: meta.image, ...(url ? { url } : {}) };
  }
}

/** A file's bytes ran past the store's cap (or a side's limit). */
export class FileTooBigError extends Error {
  constructor(readonly seen: number, readonly limit: number) {
    super(`file larger than ${limit} bytes`);
    this.name = 'FileTooBigError';
  }
}
