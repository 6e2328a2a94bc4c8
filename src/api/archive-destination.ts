import { open, stat, statfs, unlink } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Where a downloaded archive goes, checked before the request is sent: the service allows one
 * download per person and group every 24 hours, so a destination that cannot take the file must be
 * found while nothing has been spent.
 */

/** Below this much free space the destination is refused: the archive's size is not known in advance. */
export const MIN_FREE_BYTES = 1024 * 1024;

/** The destination cannot take the archive; nothing was requested, so the day's download is not spent. */
export class ArchiveDestinationError extends Error {
  constructor(readonly path: string, reason: string) {
    super(`cannot write the archive to ${path}: ${reason} (nothing was downloaded)`);
    this.name = 'ArchiveDestinationError';
  }
}

async function statOf(path: string): Promise<Stats | undefined> {
  try {
    return await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** `EACCES: permission denied` from Node's `EACCES: permission denied, open '/path'`. */
export const reasonOf = (error: unknown): string => String((error as Error).message ?? error).split(', ')[0]!;

/**
 * Resolves `out` to the file to write and proves it can be written: a folder (an existing one, or a
 * path ending in `/`) gets `defaultName` inside it; the folder holding the file must exist and take a
 * new file (a probe file is made and removed); an existing file must be a regular file (never
 * replace a device, a link's target folder or the like); the file system must have some room. The
 * `.part` file beside it, where the bytes go first, is checked the same way.
 */
export async function prepareArchiveDestination(out: string, defaultName: string): Promise<string> {
  if (out === '') throw new ArchiveDestinationError(out, 'no file name given');
  let file = out;
  const given = await statOf(out);
  if (given?.isDirectory()) file = join(out, defaultName);
  else if (/[\\/]$/.test(out)) throw new ArchiveDestinationError(out, 'no such folder');
  const folder = dirname(file);
  const folderStats = await statOf(folder);
  if (!folderStats) throw new ArchiveDestinationError(file, `the folder ${folder} does not exist`);
  if (!folderStats.isDirectory()) throw new ArchiveDestinationError(file, `${folder} is not a folder`);
  for (const path of [file, `${file}.part`]) {
    const existing = await statOf(path);
    if (existing?.isDirectory()) throw new ArchiveDestinationError(file, `${path} is a folder`);
    if (existing && !existing.isFile()) throw new ArchiveDestinationError(file, `${path} exists and is not a regular file`);
  }
  // access(2) says yes to root everywhere and knows nothing of quotas: making a file is the real test.
  const probe = join(folder, `.groupwire-probe-${process.pid}-${Date.now()}`);
  try {
    await (await open(probe, 'wx', 0o600)).close();
    await unlink(probe);
  } catch (error) {
    throw new ArchiveDestinationError(file, `cannot make a file in ${folder}: ${reasonOf(error)}`);
  }
  const space = await statfs(folder).catch(() => undefined);
  if (space && space.bavail * space.bsize < MIN_FREE_BYTES) {
    throw new ArchiveDestinationError(file, `only ${space.bavail * space.bsize} bytes free in ${folder}`);
  }
  return file;
}
