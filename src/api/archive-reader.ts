import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type yauzl from 'yauzl';
import { loadYauzl } from './zip-library.js';

/** One message of an archive's mbox. */
export interface MboxMessage {
  /** The envelope line without its `From ` (sender address and date). */
  envelope: string;
  /** Header fields by lower-case name (a repeated field keeps its last value). */
  headers: Record<string, string>;
  /** The body, with mboxrd quoting undone (`>From ` back to `From `). */
  body: string;
}

/**
 * Opens the archive's `messages.mbox` inside the zip as a stream (nothing is read whole into memory).
 * yauzl is loaded here, when an archive is read, not by every client (#20); it is an optional package
 * (#37): missing, this fails with the command that installs it.
 */
async function openMbox(zipFile: string): Promise<Readable> {
  const unzip = await loadYauzl();
  return new Promise((resolve, reject) => {
    unzip.open(zipFile, { lazyEntries: true, autoClose: true }, (error, zip) => {
      if (error || !zip) return reject(error ?? new Error(`cannot open ${zipFile}`));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName !== 'messages.mbox') return zip.readEntry();
        zip.openReadStream(entry, (streamError, stream) => (streamError || !stream ? reject(streamError) : resolve(stream)));
      });
      zip.on('end', () => reject(new Error(`${zipFile} holds no messages.mbox`)));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

/** The messages of a downloaded archive, one by one, in the order of the file. */
export async function* readArchive(zipFile: string): AsyncGenerator<MboxMessage> {
  yield* readMbox(await openMbox(zipFile));
}

/**
 * Parses an mboxrd stream: a message starts at a `From ` line; `>From ` lines in bodies are unquoted.
 * The exact inverse of the service's writer (src/service/mbox.ts), so bodies come back unchanged.
 */
export async function* readMbox(input: Readable): AsyncGenerator<MboxMessage> {
  let current: { envelope: string; lines: string[] } | undefined;
  for await (const line of mboxLines(input)) {
    if (line.startsWith('From ')) {
      if (current) yield toMessage(current.envelope, current.lines);
      current = { envelope: line.slice(5), lines: [] };
    } else if (current) current.lines.push(line);
  }
  if (current) yield toMessage(current.envelope, current.lines);
}

/**
 * The lines of an mbox. A line ends with `\n` alone (readline would also end one at a lone `\r`, which
 * is part of a body). A file written with CRLF (its first line ends so) has the `\r` of each line taken
 * off. A last line without its `\n` still counts; an empty one after the final `\n` does not.
 */
async function* mboxLines(input: Readable): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let crlf: boolean | undefined;
  const finish = (line: string): string => {
    crlf ??= line.endsWith('\r');
    return crlf && line.endsWith('\r') ? line.slice(0, -1) : line;
  };
  for await (const chunk of input) {
    pending += typeof chunk === 'string' ? chunk : decoder.write(chunk as Buffer);
    let end = pending.indexOf('\n');
    let start = 0;
    for (; end !== -1; start = end + 1, end = pending.indexOf('\n', start)) yield finish(pending.slice(start, end));
    pending = pending.slice(start);
  }
  pending += decoder.end();
  if (pending !== '') yield finish(pending);
}

function toMessage(envelope: string, lines: string[]): MboxMessage {
  const headers: Record<string, string> = {};
  let index = 0;
  let last = '';
  for (; index < lines.length && lines[index] !== ''; index += 1) {
    const line = lines[index]!;
    if (/^[ \t]/.test(line) && last) headers[last] += ` ${line.trim()}`;
    else {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      last = line.slice(0, colon).trim().toLowerCase();
      headers[last] = line.slice(colon + 1).trim();
    }
  }
  const body = lines.slice(index + 1);
  // The blank line that separates messages belongs to the file, not the body.
  if (body.at(-1) === '') body.pop();
  // mboxrd: exactly one `>` comes off a line that starts with `>` then `>*From ` (the writer's inverse).
  return { envelope, headers, body: body.map((line) => line.replace(/^>(>*From )/, '$1')).join('\n') };
}
