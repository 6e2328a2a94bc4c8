import { oneLineName } from '../text/attributed-lines.js';
import type { Attachment, RefusedFile } from './attachment.js';

/**
 * How files show on a side that does not take them (the chat, IRC, a side where the file is too big):
 * one plain-text line per file, `[image: photo.jpg https://…]` or `[file: notes.pdf https://…]`, and
 * `[a file was not relayed: big.iso: too big (40 MB, limit 25 MB)]` for one refused. Without a public
 * URL (media `public_url` unset) the line names the file alone. Each relay escapes the lines for its
 * platform as it escapes text; the speaker goes before them (attributedLines) like any line.
 */
export function fileLines(files: readonly Attachment[] | undefined, refused?: readonly RefusedFile[]): string[] {
  const lines = (files ?? []).map((file) => `[${file.image ? 'image' : 'file'}: ${oneLineName(file.name)}${file.url ? ` ${file.url}` : ''}]`);
  for (const file of refused ?? []) lines.push(`[a file was not relayed: ${oneLineName(file.name)}: ${file.reason}]`);
  return lines;
}

/** A size in the unit people read (`40 MB`, `512 KB`, `12 bytes`): decimal, as platforms state their limits. */
export function sizeInWords(bytes: number): string {
  if (bytes >= 1_000_000) return `${+(bytes / 1_000_000).toFixed(bytes >= 10_000_000 ? 0 : 1)} MB`;
  if (bytes >= 1_000) return `${Math.round(bytes / 1_000)} KB`;
  return `${bytes} bytes`;
}
