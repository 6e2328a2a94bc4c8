import type { Readable } from 'node:stream';
import type { FilesCompleteUploadExternalResponse, WebClient } from '@slack/web-api';
import { request } from 'undici';
import type { Attachment, MediaFiles } from '../../src/index.js';

/** A file the store no longer has (its retention removed it): the line goes out with its link instead. */
export class FileGone extends Error {
  override name = 'FileGone';
  constructor(readonly file: Attachment, cause: unknown) {
    super(`the media store no longer has ${file.name}`, { cause });
  }
}

/** An uploaded file, as files.completeUploadExternal takes it. */
export interface UploadedFile {
  id: string;
  title: string;
}

/**
 * The first two steps of Slack's external upload flow (https://api.slack.com/messaging/files#uploading_files),
 * per file: files.getUploadURLExternal with its name and length, then its bytes POSTed to the upload
 * URL Slack answered, streamed from the media store (never held whole). Nothing shows in Slack until
 * files.completeUploadExternal shares them (an upload never completed is dropped by Slack): so a
 * crash here loses nothing and doubles nothing, the next try uploads again.
 * (The SDK's filesUploadV2 reads a whole file into memory first, so it is not used.)
 */
export class SlackUploads {
  constructor(private readonly web: WebClient, private readonly media: MediaFiles) {}

  async upload(files: readonly Attachment[]): Promise<UploadedFile[]> {
    const uploaded: UploadedFile[] = [];
    for (const file of files) {
      let bytes: Readable;
      try {
        bytes = await this.media.open(file.id);
      } catch (error) {
        throw new FileGone(file, error);
      }
      try {
        const target = await this.web.files.getUploadURLExternal({ filename: file.name, length: file.size });
        if (!target.upload_url || !target.file_id) throw new Error('files.getUploadURLExternal answered no upload_url or file_id');
        const answer = await request(target.upload_url, {
          method: 'POST', body: bytes, headers: { 'content-type': 'application/octet-stream', 'content-length': String(file.size) },
        });
        await answer.body.dump();
        if (answer.statusCode !== 200) throw new Error(`Slack's upload URL answered ${answer.statusCode}`);
        uploaded.push({ id: target.file_id, title: file.name });
      } finally {
        bytes.destroy();
      }
    }
    return uploaded;
  }
}

/** The ts of the message that shared the files in `channel`, when completeUploadExternal's answer has it already (Slack shares asynchronously). */
export function shareTs(answer: FilesCompleteUploadExternalResponse, channel: string): string | undefined {
  for (const file of answer.files ?? []) {
    const shares = (file as { shares?: Record<string, Record<string, Array<{ ts?: string }>>> }).shares;
    const ts = shares?.public?.[channel]?.[0]?.ts ?? shares?.private?.[channel]?.[0]?.ts;
    if (ts) return ts;
  }
  return undefined;
}
