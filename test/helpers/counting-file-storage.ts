import { FILE_STORAGE, type Journal, type Storage } from '../../src/store/storage.js';

/** The file storage, counting the lines its journals appended and the entries their rewrites wrote (work per line, not time). */
export function countingStorage(): Storage & { appended: number; rewritten: number } {
  const counts = { appended: 0, rewritten: 0 };
  const counted = (inner: Journal): Journal => ({
    get lines() {
      return inner.lines;
    },
    append(entry: unknown) {
      counts.appended += 1;
      inner.append(entry);
    },
    appendLine(entry: unknown) {
      counts.appended += 1;
      return inner.appendLine(entry);
    },
    readLine: (handle: number) => inner.readLine(handle),
    withLines: <T>(use: (read: (handle: number) => string) => T) => inner.withLines(use),
    rewrite(all: readonly unknown[]) {
      counts.rewritten += all.length;
      inner.rewrite(all);
    },
    rewriteTexts(texts: Iterable<string>, placed?: (handle: number) => void) {
      const all = [...texts];
      counts.rewritten += all.length;
      inner.rewriteTexts(all, placed);
    },
  });
  return Object.assign(counts, FILE_STORAGE, {
    journal(file: string, entries: readonly unknown[]): Journal {
      counts.rewritten += entries.length;
      return counted(FILE_STORAGE.journal(file, entries));
    },
    resume: (file: string, lines: number): Journal => counted(FILE_STORAGE.resume(file, lines)),
  });
}
