import { openAsBlob } from 'node:fs';
import { extname } from 'node:path';
import { fileLines, type Attachment, type IncomingFile, type MediaFiles } from '../../src/index.js';
import { ZulipError, type ZulipClient } from './client.js';
import { escapeForZulip } from './render.js';

/** A file said in a Zulip message: the link's text and its path on the server (`/user_uploads/2/ab/xyz/photo.png`). */
export interface UploadLink {
  name: string;
  path: string;
}

/** Zulip's default `max_file_upload_size_mib` (what the server says in register wins; the option wins over both). */
export const DEFAULT_MAX_MIB = 25;

const UPLOAD_PATH = /^\/user_uploads\/\d{1,12}\/[^?#\s]+$/;

/** The path of an upload on this server, from a link as written: relative, or absolute on the server's own origin; undefined for anything else. */
export function uploadPathOf(href: string, serverUrl: string): string | undefined {
  const origin = new URL(serverUrl).origin;
  let path = href;
  if (!href.startsWith('/')) {
    if (!href.startsWith(`${origin}/`)) return undefined;
    path = href.slice(origin.length);
  }
  if (!UPLOAD_PATH.test(path) || path.startsWith('/user_uploads/temporary/')) return undefined;
  // No way out of /user_uploads/: a `..` or `.` segment, raw or encoded, is not an upload.
  if (path.split('/').some((segment) => /^(\.|%2e){1,2}$/i.test(segment)) || /%2f|%5c|\\/i.test(path)) return undefined;
  return path;
}

/**
 * The uploads a message's markdown links to (`[photo.png](/user_uploads/2/ab/xyz/photo.png)`, as
 * Zulip's composer writes them), and its text without them (a line left empty by one goes). Links to
 * other hosts stay in the text, untouched: never fetched. One forward scan: the latest `[` of the
 * line is remembered, and at each `](` the link's target is read up to its `)`; each character is
 * looked at a bounded number of times.
 */
export function uploadLinks(content: string, serverUrl: string): { text: string; links: UploadLink[] } {
  const links: UploadLink[] = [];
  const seen = new Set<string>();
  let out = '';
  let from = 0;
  let open = -1;
  /** Where each removed link stood in `out` (increasing). */
  const emptied: number[] = [];
  for (let i = 0; i < content.length; i += 1) {
    const c = content[i];
    if (c === '\n') open = -1;
    else if (c === '[') open = i;
    else if (c === ']' && content[i + 1] === '(' && open >= 0) {
      let end = i + 2;
      while (end < content.length && content[end] !== ')' && content[end] !== '\n' && content[end] !== ' ') end += 1;
      if (content[end] !== ')') {
        // No `)` before the stop: no `](` in between can end a link either, so the scan goes on from the stop.
        i = end - 1;
        continue;
      }
      const path = uploadPathOf(content.slice(i + 2, end), serverUrl);
      if (path !== undefined) {
        const written = content.slice(open + 1, i).trim();
        let name = written;
        try {
          name ||= decodeURIComponent(path.slice(path.lastIndexOf('/') + 1));
        } catch {
          name ||= 'file';
        }
        // The same upload linked twice is one file.
        if (!seen.has(path)) links.push({ name, path });
        seen.add(path);
        out += content.slice(from, open);
        from = end + 1;
        emptied.push(out.length);
      }
      open = -1;
      i = end;
    }
  }
  out += content.slice(from);
  if (links.length === 0) return { text: content, links };
  // Lines a link stood alone on go; the rest keep their blank lines as written.
  const kept: string[] = [];
  let at = 0;
  let next = 0;
  for (const line of out.split('\n')) {
    const end = at + line.length;
    let touched = false;
    while (next < emptied.length && emptied[next]! <= end) {
      touched ||= emptied[next]! >= at;
      next += 1;
    }
    at = end + 1;
    if (!(touched && line.trim() === '')) kept.push(line);
  }
  return { text: kept.join('\n').trim(), links };
}

const TYPES: Record<string, string> = {
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp',
  '.pdf': 'application/pdf', '.txt': 'text/plain', '.log': 'text/plain', '.zip': 'application/zip',
};

/** A linked upload as the gateway reads it: through the bot's key only (client.download), never from another host. */
export function incomingFile(client: ZulipClient, link: UploadLink): IncomingFile {
  const type = TYPES[extname(link.path).toLowerCase()];
  return { name: link.name, ...(type ? { contentType: type } : {}), open: (signal) => client.download(link.path, signal) };
}

/**
 * A line's files for its Zulip message: each within the limit uploaded (streamed from the media store's
 * file) and linked as `[name](/user_uploads/…)` (Zulip shows an image inline); one over the limit, or
 * gone from the store, as its link line; refused ones as theirs. The lines come after the text.
 */
export async function filesForZulip(
  client: ZulipClient,
  media: MediaFiles,
  line: {
    files: readonly Attachment[];
    refusedLines: readonly string[];
    /** Files an earlier attempt uploaded (media id → upload path): linked, not uploaded again. */
    uploads: Readonly<Record<string, string>>;
    /** Told each upload as it is made (the caller notes it durably). */
    uploaded: (id: string, path: string) => Promise<void>;
  },
  limitBytes: number,
  signal: AbortSignal,
): Promise<string[]> {
  const lines: string[] = [];
  const { files, refusedLines, uploads, uploaded } = line;
  for (const file of files) {
    const done = uploads[file.id];
    if (done !== undefined) {
      lines.push(linkOf(file.name, done));
      continue;
    }
    if (file.size > limitBytes) {
      lines.push(...fileLines([file]).map(escapeForZulip));
      continue;
    }
    let blob: Blob;
    try {
      blob = await openAsBlob(media.pathOf(file.id), { type: file.contentType });
    } catch {
      // The store's retention removed it: its link line (which says the name) stands in.
      lines.push(...fileLines([file]).map(escapeForZulip));
      continue;
    }
    let path: string;
    try {
      path = await client.upload(file.name, blob, signal);
    } catch (error) {
      // The server refused this file for good (larger than it takes after all, a type it will not keep): its link line.
      if (!(error instanceof ZulipError && (error.status === 400 || error.status === 413))) throw error;
      lines.push(...fileLines([file]).map(escapeForZulip));
      continue;
    }
    await uploaded(file.id, path);
    lines.push(linkOf(file.name, path));
  }
  return [...lines, ...refusedLines.map(escapeForZulip)];
}

/** An upload's link as the relay writes it: `[name](/user_uploads/…)`, the name escaped. */
function linkOf(name: string, path: string): string {
  return `[${escapeForZulip(name.replace(/[\r\n]+/g, ' '))}](${path})`;
}

/** A line the relay put after a message's text for a file: an upload's link, or an escaped link line. */
function isFileLine(line: string): boolean {
  if (line.startsWith('[') && line.endsWith(')')) {
    const middle = line.indexOf('](/user_uploads/');
    return middle > 0 && !line.slice(middle + 2, -1).includes(' ');
  }
  return /^\\\[(image|file|a file was not relayed): /.test(line) && line.endsWith('\\]');
}

/**
 * The file lines at the end of a message the relay posted (its uploads' links, its link lines): an edit
 * of the line keeps them, so the picture does not leave the message when its caption changes. A text
 * whose own last lines read exactly like link lines would keep those too.
 */
export function fileTail(content: string): string[] {
  const lines = content.split('\n');
  let start = lines.length;
  while (start > 1 && isFileLine(lines[start - 1]!)) start -= 1;
  return lines.slice(start);
}
