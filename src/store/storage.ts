import { rmSync } from 'node:fs';
import { readJsonFileSync, writeJsonFileSync } from './json-file-sync.js';
import { JsonLinesFile } from './json-lines-file.js';

/** A journal of JSON lines (see JsonLinesFile): appended to, and rewritten whole now and then. */
export interface Journal {
  /** Lines since it was last rewritten. */
  readonly lines: number;
  /** Adds one entry as a line; durable before this returns (a file: written synchronously). */
  append(entry: unknown): void;
  /** Replaces the whole journal with these entries: the compaction its owner does now and then. */
  rewrite(entries: readonly unknown[]): void;
}

/**
 * Where the durable stores write (docs/scale-out.md): files under state_dir (the default), or Redis when
 * workers share the bots. Paths stay file paths everywhere; a Redis storage maps them to keys of its unit.
 */
export interface Storage {
  readonly kind: 'files' | 'redis';
  /** A journal's text ('' when there is none yet). */
  readText(path: string): string;
  /** A journal started afresh with `entries`. */
  journal(path: string, entries: readonly unknown[]): Journal;
  /**
   * The journal as it is, appended to from here: it holds `lines` lines, and its text (read just before)
   * ends with a newline. For a store whose journal is within its bound at open, so is not rewritten.
   */
  resume(path: string, lines: number): Journal;
  /** A small JSON document, or `fallback` when there is none yet. */
  readDocument<T>(path: string, fallback: T, what: string): T;
  /** Written whole (files: synchronously and atomically). */
  writeDocument(path: string, value: unknown): void;
  /** Removes a document or journal (a store's file of an earlier version, read into its new form); none is fine. */
  remove(path: string): void;
  /**
   * Resolves once every write made so far is durable and, in Redis, was accepted under the unit's
   * lease; rejects with LeaseLostError when it was not or the lease is no longer provably valid.
   * Awaited before any effect outside groupwire (a post, an IRC line): a worker that lost its lease acts on nothing.
   */
  durable(): Promise<void>;
}

/** The unit's lease is gone (or cannot be proved): nothing more may be written or done for it. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

const DONE = Promise.resolve();

/** The file backend: every write is on disk (in the page cache) before the call returns. */
export const FILE_STORAGE: Storage = {
  kind: 'files',
  readText: (path) => JsonLinesFile.readText(path),
  journal: (path, entries) => JsonLinesFile.create(path, entries),
  resume: (path, lines) => JsonLinesFile.resume(path, lines),
  readDocument: (path, fallback, what) => readJsonFileSync(path, fallback, what),
  writeDocument: (path, value) => writeJsonFileSync(path, value),
  remove: (path) => rmSync(path, { force: true }),
  durable: () => DONE,
};
