import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { mkdir, open, writeFile, type FileHandle } from 'node:fs/promises';

/**
 * Every file and directory groupwire makes under the state dir and the transcript dir is made here,
 * owner-only: files 0600, directories 0700 (docs/deploy.md, "Files and their permissions"). They hold
 * message texts (transcripts, the gateways' message map, the relays' queues), positions and tokens of
 * the HTTP API's callers: nothing for another account on the machine.
 *
 * The modes are given when a file or directory is created, so the umask still applies (it can only
 * take more away) and nothing existing is changed: a directory the user made (say a transcript
 * directory shared with a group) keeps its mode, and so does a file made by an older version (a file
 * replaced by rename, as most state files are, is made new and gets 0600).
 */

/** The mode of a file groupwire makes. */
export const PRIVATE_FILE_MODE = 0o600;
/** The mode of a directory groupwire makes. */
export const PRIVATE_DIR_MODE = 0o700;

/** Makes the directory and any missing parent 0700; an existing one is left as it is. */
export function mkdirPrivateSync(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/** As mkdirPrivateSync, without blocking: the directory and any missing parent 0700. */
export async function mkdirPrivate(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/** Writes (creates or truncates) a file; a new one is 0600. */
export function writeFilePrivateSync(path: string, data: string | Uint8Array): void {
  writeFileSync(path, data, { mode: PRIVATE_FILE_MODE });
}

/** As writeFilePrivateSync, without blocking: a new file is 0600. */
export async function writeFilePrivate(path: string, data: string | Uint8Array): Promise<void> {
  await writeFile(path, data, { mode: PRIVATE_FILE_MODE });
}

/**
 * Appends to a file; a new one is 0600. Open, write, close, as appendFileSync does, without its
 * options handling and its copy of a string into a Buffer: a relay's queue appends a line before each
 * line it sends, and these were a third of that append's time on a profile (#32 part 1).
 */
export function appendFilePrivateSync(path: string, data: string | Uint8Array): void {
  const fd = openSync(path, 'a', PRIVATE_FILE_MODE);
  try {
    writeWholeSync(fd, data);
  } finally {
    closeSync(fd);
  }
}

/** Writes all of `data` at the descriptor's position (at the end, for one opened to append). */
export function writeWholeSync(fd: number, data: string | Uint8Array): void {
  const written = typeof data === 'string' ? writeSync(fd, data) : writeSync(fd, data, 0, data.byteLength);
  const length = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
  // A regular file takes the whole write; should it not, the rest follows (as appendFileSync would).
  if (written < length) {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    for (let offset = written; offset < length;) offset += writeSync(fd, bytes, offset, length - offset);
  }
}

/** Opens a file (`flags` as for fs.open: 'a', 'w', 'wx', ...); one it creates is 0600. */
export function openPrivateSync(path: string, flags: string): number {
  return openSync(path, flags, PRIVATE_FILE_MODE);
}

/** As openPrivateSync, as a FileHandle: a file it creates is 0600. */
export function openPrivate(path: string, flags: string): Promise<FileHandle> {
  return open(path, flags, PRIVATE_FILE_MODE);
}
