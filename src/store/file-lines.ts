import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { openPrivateSync } from './private-files.js';

/** One line of a file: its text (without the newline) and where it lies, in bytes. */
export interface FileLine {
  text: string;
  /** Byte offset of its first character. */
  start: number;
  /** Byte offset just past its newline (past its last byte when it has none). */
  end: number;
  /** False for a last line without its newline (a write cut short by a crash). */
  complete: boolean;
}

const CHUNK = 1 << 16;

/**
 * The lines of a file from byte `from` on, read a chunk at a time (synchronously): a journal far
 * larger than memory is read line by line, never whole. None when the file does not exist. Lines are
 * cut at the byte 0x0A, which no other UTF-8 character contains.
 */
export function* readFileLines(path: string, from = 0): Generator<FileLine> {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    const chunk = Buffer.allocUnsafe(CHUNK);
    let parts: Buffer[] = [];
    let position = from;
    let lineStart = from;
    for (;;) {
      const read = readSync(fd, chunk, 0, CHUNK, position);
      if (read === 0) break;
      let at = 0;
      while (at < read) {
        const newline = chunk.indexOf(10, at);
        if (newline === -1 || newline >= read) {
          parts.push(Buffer.from(chunk.subarray(at, read)));
          break;
        }
        const piece = chunk.subarray(at, newline);
        const text = parts.length > 0 ? Buffer.concat([...parts, piece]).toString('utf8') : piece.toString('utf8');
        parts = [];
        const end = position + newline + 1;
        yield { text, start: lineStart, end, complete: true };
        lineStart = end;
        at = newline + 1;
      }
      position += read;
    }
    if (parts.length > 0) yield { text: Buffer.concat(parts).toString('utf8'), start: lineStart, end: position, complete: false };
  } finally {
    closeSync(fd);
  }
}

/** Writes a new file (0600) line by line through a buffer: a journal is rewritten without holding it whole. */
export class FileLineWriter {
  private readonly fd: number;
  private buffered: string[] = [];
  private bufferedBytes = 0;
  /** Bytes written so far (buffered included): the offset of the next line. */
  bytes = 0;
  lines = 0;

  constructor(path: string) {
    this.fd = openPrivateSync(path, 'w');
  }

  /** Writes one line (`text` without its newline). */
  line(text: string): void {
    const line = `${text}\n`;
    const size = Buffer.byteLength(line);
    this.buffered.push(line);
    this.bufferedBytes += size;
    this.bytes += size;
    this.lines += 1;
    if (this.bufferedBytes >= CHUNK * 4) this.flush();
  }

  close(): void {
    try {
      this.flush();
    } finally {
      closeSync(this.fd);
    }
  }

  private flush(): void {
    if (this.buffered.length === 0) return;
    const data = Buffer.from(this.buffered.join(''), 'utf8');
    let written = 0;
    while (written < data.length) written += writeSync(this.fd, data, written, data.length - written);
    this.buffered = [];
    this.bufferedBytes = 0;
  }
}
