import { readFileSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import { mkdirPrivateSync, writeFilePrivateSync } from './private-files.js';

/**
 * Small state files written synchronously and atomically (a temporary file, then rename): what is
 * written survives a crash whole, or not at all.
 */
export function writeJsonFileSync(path: string, value: unknown): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFilePrivateSync(temporary, JSON.stringify(value));
  renameSync(temporary, path);
}

/** The file's JSON, or `fallback` when there is no file yet (its directory is made). */
export function readJsonFileSync<T>(path: string, fallback: T, what: string): T {
  mkdirPrivateSync(dirname(path));
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return fallback;
    throw new Error(`${path}: unreadable ${what} (${(error as Error).message})`);
  }
}
