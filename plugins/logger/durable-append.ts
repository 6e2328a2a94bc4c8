import { open } from 'node:fs/promises';
import { openPrivate } from '../../src/index.js';

/** Appends `data` to a file and fsyncs it before answering. */
export async function appendSynced(path: string, data: Buffer): Promise<void> {
  const handle = await openPrivate(path, 'a');
  try {
    await handle.appendFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes a new file's directory entry durable too (where the platform allows it). */
export async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Not every platform can open or sync a directory; the file's own data is synced.
  }
}
