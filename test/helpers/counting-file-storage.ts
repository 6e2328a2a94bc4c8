import { FILE_STORAGE, type Journal, type Storage } from '../../src/store/storage.js';

/** The file storage, counting the lines its journals appended and the entries their rewrites wrote (work per line, not time). */
export function countingStorage(): Storage & { appended: number; rewritten: number } {
  const counts = { appended: 0, rewritten: 0 };
  return Object.assign(counts, FILE_STORAGE, {
    journal(file: string, entries: readonly unknown[]): Journal {
      const inner = FILE_STORAGE.journal(file, entries);
      counts.rewritten += entries.length;
      return {
        get lines() {
          return inner.lines;
        },
        append(entry: unknown) {
          counts.appended += 1;
          inner.append(entry);
        },
        rewrite(all: readonly unknown[]) {
          counts.rewritten += all.length;
          inner.rewrite(all);
        },
      };
    },
  });
}
