import { openAsBlob } from 'node:fs';
import { FormData } from 'undici';
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

/**
 * A message with files as Discord takes it (https://discord.com/developers/docs/reference#uploading-files):
 * multipart/form-data, `payload_json` (with `attachments` naming each part) and `files[n]`, each read
 * from the media store's file on disk as it is sent (a Blob backed by the file: never whole in memory).
 * undici's FormData, for the REST client's requests go through undici's fetch (relay.ts).
 * Undefined when the store no longer has one (its retention removed it): the post shows links instead.
 */
export async function multipartOf(payload: Record<string, unknown>, files: readonly Attachment[], media: MediaFiles): Promise<FormData | undefined> {
  const blobs: Blob[] = [];
  for (const file of files) {
    try {
      blobs.push(await openAsBlob(media.pathOf(file.id), { type: file.contentType }));
    } catch {
      return undefined;
    }
  }
  const form = new FormData();
  form.append('payload_json', JSON.stringify({ ...payload, attachments: files.map((file, index) => ({ id: index, filename: file.name })) }));
  files.forEach((file, index) => form.append(`files[${index}]`, blobs[index]!, file.name));
  return form;
}
