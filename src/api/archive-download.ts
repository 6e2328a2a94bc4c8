import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { GroupsClient } from './client.js';
import type { DownloadArchivesParams } from './params.js';
import type { RawResponse, WireParams } from './transport.js';

export interface DownloadOptions {
  /** Where the zip goes. It is written beside as `<out>.part` and renamed when complete. */
  out: string;
  /** Called as bytes arrive (the service streams the zip, so there is usually no total). */
  onProgress?: (bytes: number, total: number | undefined) => void;
}

export interface DownloadResult {
  file: string;
  bytes: number;
}

/** `start_time` must be exactly `YYYY-MM-DDThh:mm:ssZ` (spec 4.2). */
export function formatStartTime(value: string | Date): string {
  return typeof value === 'string' ? value : value.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Streams `downloadarchives` to disk, never whole in memory. A refusal (the 24-hour rule included)
 * throws its error class before any file is written; a broken transfer leaves no file behind.
 */
export async function downloadArchiveToFile(client: GroupsClient, params: DownloadArchivesParams, options: DownloadOptions): Promise<DownloadResult> {
  const wire: WireParams = { ...params, start_time: params.start_time === undefined ? undefined : formatStartTime(params.start_time) };
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
  const partial = `${options.out}.part`;
  try {
    await pipeline(response.body, counter, createWriteStream(partial));
    await rename(partial, options.out);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  return { file: options.out, bytes };
}
