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
  /**
   * For a store that keeps older entries only here (the message map, #32): append() that returns the
   * line's handle (a file: its byte offset; Redis: its place in the list), valid until the next rewrite.
   */
  appendLine(entry: unknown): number;
  /** The line (JSON text) at a handle. */
  readLine(handle: number): string;
  /** readLine for many lines at once (a file: one descriptor for all of them). */
  withLines<T>(use: (read: (handle: number) => string) => T): T;
  /** rewrite() from JSON texts, told each line's handle in order. */
  rewriteTexts(texts: Iterable<string>, placed?: (handle: number) => void): void;
}

/**
 * Where the durable stores write (docs/scale-out.md): files under state_dir (the default), or Redis when
 * workers share the bots. Paths stay file paths everywhere; a Redis storage maps them to keys of its unit.
 */
export interface Storage {
  readonly kind: 'files' | 'redis';
  /** A journal's text ('' when there is none yet). */
  readText(path: string): string;
  /**
   * Each entry of a journal with its line's handle (as Journal.readLine takes it), oldest first;
   * `lines` read, and `complete`: it ends with a newline (nothing cut short), so it may be resumed.
   */
  forEachLine(path: string, what: string, visit: (entry: unknown, handle: number) => void): { lines: number; complete: boolean };
  /** The line at a handle forEachLine gave, before the journal is resumed. */
  readLine(path: string, handle: number): string;
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
  forEachLine: (path, what, visit) => JsonLinesFile.forEachInFile(path, what, visit),
  readLine: (path, handle) => JsonLinesFile.readLine(path, handle),
  journal: (path, entries) => JsonLinesFile.create(path, entries),
  resume: (path, lines) => JsonLinesFile.resume(path, lines),
  readDocument: (path, fallback, what) => readJsonFileSync(path, fallback, what),
  writeDocument: (path, value) => writeJsonFileSync(path, value),
  remove: (path) => rmSync(path, { force: true }),
  durable: () => DONE,
};
