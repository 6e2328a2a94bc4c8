import { sizeInWords, visibleControls } from '../../src/index.js';

/**
 * The files of a relayed line (#34), as transcripts record them: the jsonl entry's `files` and
 * `refused_files` (logged-message.ts), and how the other formats show them. The formats read them from
 * the entry's fields, so an export from the jsonl files shows them as the logger did.
 */

/** A file said with a relayed line, as the jsonl entry keeps it. */
export interface LoggedFile {
  name: string;
  content_type: string;
  size: number;
  /** An image (the media store checked the bytes): html shows it as a thumbnail when it has a url. */
  image: boolean;
  /** The media store's public link; absent when the store has no public_url. */
  url?: string;
}

export interface LoggedRefusal {
  name: string;
  reason: string;
}

/** What a message may carry beside the chat_message fields (read from jsonl, anything could be there). */
interface WithFiles {
  files?: unknown;
  refused_files?: unknown;
}

const isFile = (file: unknown): file is LoggedFile => typeof file === 'object' && file !== null
  && typeof (file as LoggedFile).name === 'string' && typeof (file as LoggedFile).content_type === 'string' && typeof (file as LoggedFile).size === 'number';

const isRefusal = (file: unknown): file is LoggedRefusal => typeof file === 'object' && file !== null
  && typeof (file as LoggedRefusal).name === 'string' && typeof (file as LoggedRefusal).reason === 'string';

export function filesOf(message: object): LoggedFile[] {
  const files = (message as WithFiles).files;
  return Array.isArray(files) ? files.filter(isFile) : [];
}

export function refusalsOf(message: object): LoggedRefusal[] {
  const refused = (message as WithFiles).refused_files;
  return Array.isArray(refused) ? refused.filter(isRefusal) : [];
}

/** A link only when it is http(s): anything else (javascript:, data:) is not made a link. */
export function safeLink(url: string | undefined): string | undefined {
  return url !== undefined && /^https?:\/\/[^\s]+$/i.test(url) ? url : undefined;
}

/** `(image/png, 150 KB)`: the type and the size, the type shown as text (controls visible). */
export function fileDetails(file: LoggedFile): string {
  return `(${visibleControls(file.content_type)}, ${sizeInWords(file.size)})`;
}

const kindOf = (file: LoggedFile) => (file.image ? 'image' : 'file');

/**
 * The text format's lines for a message's files, like the chat's own file lines with the type and
 * size added: `[image: cat.png (image/png, 150 KB) https://…]`, and
 * `[a file was not relayed: big.iso: too big (40 MB, limit 25 MB)]`. Names and reasons on one line,
 * controls shown as `\u{XX}`.
 */
export function textFileLines(message: object): string[] {
  const lines = filesOf(message).map((file) => {
    const url = safeLink(file.url);
    return `[${kindOf(file)}: ${visibleControls(file.name)} ${fileDetails(file)}${url ? ` ${visibleControls(url)}` : ''}]`;
  });
  for (const refusal of refusalsOf(message)) lines.push(`[a file was not relayed: ${visibleControls(refusal.name)}: ${visibleControls(refusal.reason)}]`);
  return lines;
}
