import { openAsBlob } from 'node:fs';
import type { Logger } from 'pino';
import { failureFields, fileLines, oneLineName, type Attachment, type MediaFiles, type RefusedFile } from '../../src/index.js';
import { MattermostError, type MattermostRest } from './session.js';

/**
 * Files to Mattermost: each uploaded with POST /api/v4/files (multipart: the channel id and the file,
 * streamed from the media store), then attached to the line's post by `file_ids`. Over the server's
 * MaxFileSize (or `max_file_size`), past the 10 files a post takes, with file attachments off, or
 * refused by the server: the file's link line in the text instead.
 */

/** A post takes at most 10 files (the server's limit). */
export const FILES_PER_POST = 10;
/** An upload may take this long at least (request_timeout_ms when longer): a file takes longer than a post. */
export const FILE_TIMEOUT_MS = 300_000;

/** What the server lets the relay upload (its client config, or the relay's options). */
export interface FileSettings {
  enabled: boolean;
  maxFileSize: number;
}

/** Mattermost's own default MaxFileSize (100 MB), when the server does not say and `max_file_size` is unset. */
export const DEFAULT_MAX_FILE_SIZE = 104_857_600;

/** The client config's file settings (strings, as its `format=old` gives them); `max_file_size`, when set, wins over MaxFileSize. */
export function fileSettingsOf(config: Record<string, string>, maxFileSize: number | undefined): FileSettings {
  const serverMax = Number(config.MaxFileSize);
  return {
    enabled: config.EnableFileAttachments !== 'false',
    maxFileSize: maxFileSize ?? (Number.isFinite(serverMax) && serverMax > 0 ? serverMax : DEFAULT_MAX_FILE_SIZE),
  };
}

/** What the upload of a line's files came to: the file ids to attach, in order, and the files shown as links. */
export interface Uploaded {
  fileIds: string[];
  links: Attachment[];
}

/**
 * Uploads the files of a line not uploaded yet (`done`: attachment id → file id, kept with the attempt
 * across a retry or a restart, so a file is uploaded once however often the post is tried), noting
 * each new one with `remember` before the next. A failure trying again may change (the network, a
 * 5xx, a 429) is thrown; what the server refuses for good becomes a link.
 */
export async function uploadFiles(
  options: { rest: MattermostRest; media: MediaFiles; settings: FileSettings; log: Logger; timeoutMs: number; counters: { files_sent: number } },
  channelId: string, files: readonly Attachment[], done: Record<string, string>, remember: (done: Record<string, string>) => Promise<void>, signal: AbortSignal,
): Promise<Uploaded> {
  const { rest, media, settings, log } = options;
  const fileIds: string[] = [];
  const links: Attachment[] = [];
  const known = { ...done };
  for (const file of files) {
    const already = known[file.id];
    if (already !== undefined) {
      fileIds.push(already);
      continue;
    }
    if (!settings.enabled || file.size > settings.maxFileSize || fileIds.length >= FILES_PER_POST) {
      links.push(file);
      continue;
    }
    let blob: Blob;
    try {
      // Read from disk as the request is written: never the whole file in memory.
      blob = await openAsBlob(media.pathOf(file.id), { type: file.contentType });
    } catch {
      // The store's retention took it: its link says so where it leads.
      links.push(file);
      continue;
    }
    const form = new FormData();
    form.append('channel_id', channelId);
    form.append('files', blob, file.name);
    try {
      const answer = await rest.call<{ file_infos?: Array<{ id?: string }> }>('post', rest.client.getFilesRoute(), form, signal, options.timeoutMs);
      const id = answer.file_infos?.[0]?.id;
      if (typeof id !== 'string') throw new Error('Mattermost answered an upload without a file id');
      known[file.id] = id;
      fileIds.push(id);
      options.counters.files_sent += 1;
      await remember({ ...known });
    } catch (error) {
      // 413 too large, 501 attachments off, 403 not allowed, 400 a file it will not take: its link instead. 401 and 429 are the caller's.
      if (signal.aborted || !(error instanceof MattermostError) || error.status < 400 || error.status === 401 || error.status === 429 || (error.status >= 500 && error.status !== 501)) throw error;
      log.warn({ channel: channelId, file: file.id, status: error.status, error_id: error.errorId, ...failureFields(error) }, 'Mattermost refused a file: its link goes instead');
      links.push(file);
    }
  }
  return { fileIds, links };
}

/**
 * The link lines of files not attached (and of refused ones), as markdown: `[image: photo.jpg](https://…)`,
 * the name escaped and the URL's parentheses and spaces percent-encoded, so Mattermost links the whole
 * URL (the plain `[image: photo.jpg https://…]` escaped as text would end its autolink in `\]`).
 * Without a link (media `public_url` unset and no listener) the line names the file, as text.
 */
export function markdownFileLines(files: readonly Attachment[], refused: readonly RefusedFile[] | undefined, escape: (text: string) => string): string[] {
  const lines = files.map((file) => {
    const label = `${file.image ? 'image' : 'file'}: ${escape(oneLineName(file.name))}`;
    return file.url ? `[${label}](${file.url.replace(/[() ]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)})` : `\\[${label}\\]`;
  });
  return [...lines, ...fileLines(undefined, refused).map(escape)];
}
