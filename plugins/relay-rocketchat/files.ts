import type { IncomingFile } from '../../src/index.js';
import type { RocketRest } from './rest.js';

/** A message's file fields as sendFileMessage makes them (the relay reads only these). */
export interface RocketFileFields {
  file?: { _id: string; name?: string; type?: string; size?: number };
  files?: Array<{ _id: string; name?: string; type?: string; size?: number }>;
  attachments?: Array<{
    title?: string;
    type?: string;
    title_link?: string;
    image_url?: string;
    image_type?: string;
    image_size?: number;
    audio_type?: string;
    audio_size?: number;
    video_type?: string;
    video_size?: number;
    size?: number;
    description?: string;
    fileId?: string;
  }>;
}

/** Rocket.Chat's FileUpload_MaxFileSize default (100 MB); -1 on a server means no limit. */
export const DEFAULT_MAX_FILE_SIZE = 104_857_600;

const FILE_PATH = /^\/file-upload\/[A-Za-z0-9]{5,40}\/[^?#\s]*$/;

/** The path of a file on this server, from a link as written: relative, or absolute on the server's own origin; undefined for anything else. */
export function filePathOf(link: string | undefined, serverUrl: string): string | undefined {
  if (link === undefined) return undefined;
  const origin = new URL(serverUrl).origin;
  let path = link;
  if (!link.startsWith('/')) {
    if (!link.startsWith(`${origin}/`)) return undefined;
    path = link.slice(origin.length);
  }
  if (!FILE_PATH.test(path)) return undefined;
  if (path.split('/').some((segment) => /^(\.|%2e){1,2}$/i.test(segment)) || /%2f|%5c|\\/i.test(path)) return undefined;
  return path;
}

/**
 * The files of a message, each read from this server's /file-upload/ with the bot's id and token (never
 * from another host: an attachment whose link points elsewhere, as an integration's may, is not a
 * file here). From its attachments' `title_link` (the file itself; `image_url` may be a thumbnail),
 * else its `file`; each path once.
 */
export function incomingFiles(rest: RocketRest, message: RocketFileFields, serverUrl: string): IncomingFile[] {
  const found = new Map<string, IncomingFile>();
  const known = new Map((message.files ?? (message.file ? [message.file] : [])).map((file) => [file._id, file]));
  for (const attachment of message.attachments ?? []) {
    const path = filePathOf(attachment.title_link, serverUrl);
    if (path === undefined || found.has(path)) continue;
    const file = attachment.fileId !== undefined ? known.get(attachment.fileId) : undefined;
    const contentType = attachment.image_type ?? attachment.audio_type ?? attachment.video_type ?? file?.type;
    const size = attachment.size ?? attachment.image_size ?? attachment.audio_size ?? attachment.video_size ?? file?.size;
    found.set(path, {
      name: attachment.title || file?.name || nameOf(path), ...(contentType ? { contentType } : {}), ...(typeof size === 'number' ? { size } : {}),
      open: (signal) => rest.download(path, signal),
    });
  }
  if (found.size === 0 && message.file) {
    const { file } = message;
    const path = filePathOf(`/file-upload/${file._id}/${encodeURI(file.name ?? 'file')}`, serverUrl);
    if (path !== undefined) {
      found.set(path, {
        name: file.name || 'file', ...(file.type ? { contentType: file.type } : {}), ...(typeof file.size === 'number' ? { size: file.size } : {}),
        open: (signal) => rest.download(path, signal),
      });
    }
  }
  return [...found.values()];
}

function nameOf(path: string): string {
  try {
    return decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)) || 'file';
  } catch {
    return 'file';
  }
}

/** A file message's text: its `msg`, else (older clients) the first attachment's description. */
export function captionOf(msg: string, message: RocketFileFields): string {
  if (msg.trim() !== '') return msg;
  return message.attachments?.find((attachment) => attachment.description)?.description ?? msg;
}

/**
 * The largest file the server takes, in bytes, from its public settings: FileUpload_MaxFileSize (-1:
 * no limit), or -1 when FileUpload_Enabled is off (every file then goes as its link). Throws when the
 * settings cannot be read.
 */
export async function uploadLimitOf(rest: RocketRest): Promise<number> {
  const { settings } = await rest.get<{ settings: Array<{ _id: string; value: unknown }> }>('settings.public', { _id: 'FileUpload_MaxFileSize,FileUpload_Enabled' });
  const value = (id: string) => settings.find((setting) => setting._id === id)?.value;
  if (value('FileUpload_Enabled') === false) return -1;
  const max = Number(value('FileUpload_MaxFileSize'));
  if (!Number.isFinite(max)) return DEFAULT_MAX_FILE_SIZE;
  return max < 0 ? Number.POSITIVE_INFINITY : max;
}
