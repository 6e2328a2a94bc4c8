import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { prepareArchiveDestination, reasonOf } from './archive-destination.js';
import type { ClientAccess } from './client-access.js';
import type { DownloadArchivesParams } from './params.js';
import type { RawResponse, WireParams } from './transport.js';

/** Where GroupsClient.downloadArchives writes the zip, and how it reports progress. */
export interface DownloadOptions {
  /**
   * Where the zip goes. It is written beside as `<out>.part` and renamed when complete. A folder (an
   * existing one, or a path ending in `/`) gets `<group>.zip` inside it.
   */
  out: string;
  /** Called as bytes arrive (the service streams the zip, so there is usually no total). */
  onProgress?: (bytes: number, total: number | undefined) => void;
}

/** A complete download: the zip's path and its size in bytes. */
export interface DownloadResult {
  /** The zip, renamed from `.part` once whole. */
  file: string;
  /** Its size. */
  bytes: number;
}

/**
 * The download was answered (so the day's allowance is spent) but stopped before the zip was whole:
 * writing failed (disk full, file too large, ...) or the connection broke. The bytes that arrived and
 * could be written are kept in `partialFile`.
 */
export class ArchiveIncompleteError extends Error {
  constructor(readonly partialFile: string, readonly bytes: number, readonly stage: 'write' | 'receive', cause: unknown) {
    const what = stage === 'write' ? `writing ${partialFile} failed` : 'the connection broke';
    super(`the archive download stopped after ${bytes} bytes: ${what}: ${reasonOf(cause)}; ` +
      `the bytes received are kept in ${partialFile}`, { cause });
    this.name = 'ArchiveIncompleteError';
  }
}

/** The name a folder given as `out` gets: the group's, as the service's Content-Disposition says. */
function defaultZipName(params: DownloadArchivesParams): string {
  const group = params.group_name ?? `group-${String(params.group_id)}`;
  return `${basename(group.replace(/[\\/]/g, '_'))}.zip`;
}

/** `start_time` must be exactly `YYYY-MM-DDThh:mm:ssZ` (spec 4.2). */
export function formatStartTime(value: string | Date): string {
  return typeof value === 'string' ? value : value.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Streams `downloadarchives` to disk, never whole in memory. The destination is checked before the
 * request (ArchiveDestinationError: nothing was spent). A refusal (the 24-hour rule included) throws its
 * error class before any file is written; a transfer that stops half-way keeps what arrived
 * (ArchiveIncompleteError names the file), since the day's download is spent either way.
 */
export async function downloadArchiveToFile(client: ClientAccess, params: DownloadArchivesParams, options: DownloadOptions): Promise<DownloadResult> {
  const out = await prepareArchiveDestination(options.out, defaultZipName(params));
  const time = (value: string | Date | undefined) => (value === undefined ? undefined : formatStartTime(value));
  const wire: WireParams = { ...params, start_time: time(params.start_time), end_time: time(params.end_time) };
  const response = await client.run('downloadarchives', 'GET', async (): Promise<RawResponse> => {
    const answer = await client.transport.send('downloadarchives', 'GET', wire, client.authHeaders());
    const contentType = String(answer.headers['content-type'] ?? '');
    if (answer.status === 200 && !contentType.includes('json')) return answer;
    await client.transport.readJson('downloadarchives', answer); // throws the error the answer carries
    throw new Error('downloadarchives answered JSON where a zip was expected');
  });
  const total = Number(response.headers['content-length']) || undefined;
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      options.onProgress?.(bytes, total);
      done(null, chunk);
    },
  });
  const partial = `${out}.part`;
  const file = createWriteStream(partial);
  let writeFailed = false;
  file.once('error', () => {
    writeFailed = true;
  });
  try {
    await pipeline(response.body, counter, file);
  } catch (error) {
    // What reached the disk: the stream's own count, not what was received but could not be written.
    const kept = file.bytesWritten;
    if (kept === 0 && !writeFailed) await rm(partial, { force: true });
    throw kept === 0 && !writeFailed ? error : new ArchiveIncompleteError(partial, kept, writeFailed ? 'write' : 'receive', error);
  }
  try {
    await rename(partial, out);
  } catch (error) {
    throw new Error(`the archive is complete in ${partial} but could not be renamed to ${out}: ${reasonOf(error)}`, { cause: error });
  }
  return { file: out, bytes };
}
