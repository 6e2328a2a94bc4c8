import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { IncomingFile } from '../../src/index.js';

/** A file of a POST, kept in the uploads folder until the gateway took its line (part of an IntakeItem). */
export interface PostedFile {
  /** Its name in the uploads folder (random hex). */
  file: string;
  /** The name the client gave it (made safe: safeFileName). */
  name: string;
  content_type: string;
  size: number;
}

const STORED_NAME = /^[0-9a-f]{32}$/;

/**
 * A file name as a client gave it, made one safe line: the last part of a path (a client's own folders
 * say nothing), controls and line breaks gone, at most 255 characters; `file` when nothing is left.
 */
export function safeFileName(given: string | undefined): string {
  const base = (given ?? '').split(/[/\\]/).pop() ?? '';
  const flat = base.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g, ' ').trim();
  const cut = flat.length > 255 ? flat.slice(0, 255) : flat;
  return cut === '' || cut === '.' || cut === '..' ? 'file' : cut;
}

/** A content type as a client gave it: `type/subtype` in lower case, parameters dropped; octet-stream when it is no such thing. */
export function safeContentType(given: string | undefined): string {
  const bare = (given ?? '').split(';')[0]!.trim().toLowerCase();
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(bare) ? bare : 'application/octet-stream';
}

/**
 * The plugin's uploads folder (`uploads/` in its state): each file of a multipart POST is streamed
 * into a file of its own here (never held whole in memory) and fsynced before the 202, so the queued
 * line's files survive a crash as the line does; a file goes once the gateway took its line.
 */
export class UploadDir {
  constructor(readonly dir: string) {}

  /** Streams `bytes` into a new file; resolves with its name and size. A failed write leaves nothing. */
  async write(bytes: Readable): Promise<{ file: string; size: number }> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = randomBytes(16).toString('hex');
    const path = join(this.dir, file);
    let size = 0;
    const counted = async function* (source: AsyncIterable<Buffer>) {
      for await (const chunk of source) {
        size += chunk.byteLength;
        yield chunk;
      }
    };
    try {
      await pipeline(bytes, counted, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
      // On disk before the 202 (a power loss would otherwise keep the line and lose its file).
      const handle = await open(path, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    } catch (error) {
      await rm(path, { force: true });
      throw error;
    }
    return { file, size };
  }

  /** What the gateway reads: the temp file, streamed. */
  incoming(posted: PostedFile): IncomingFile {
    const path = join(this.dir, posted.file);
    return {
      name: posted.name,
      contentType: posted.content_type,
      size: posted.size,
      open: async (signal) => {
        const stream = createReadStream(path, { signal });
        // Fail here (ENOENT) rather than on the first read.
        await new Promise<void>((resolve, reject) => stream.once('open', () => resolve()).once('error', reject));
        return stream;
      },
    };
  }

  async remove(files: readonly string[]): Promise<void> {
    await Promise.all(files.filter((file) => STORED_NAME.test(file)).map((file) => rm(join(this.dir, file), { force: true })));
  }

  /** Removes every file no queued line names (left by a crash between a line being taken and its files removed, or mid-upload). */
  async sweep(keep: ReadonlySet<string>): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return 0;
    }
    const stale = names.filter((name) => !keep.has(name));
    await Promise.all(stale.map((name) => rm(join(this.dir, name), { force: true, recursive: true })));
    return stale.length;
  }
}
