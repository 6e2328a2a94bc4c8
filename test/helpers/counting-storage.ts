import type { Journal, Storage } from '../../src/store/storage.js';

/** A storage in memory that counts what its journals write: appended bytes, rewritten bytes, rewrites. */
export function countingStorage() {
  const written = { appended: 0, rewritten: 0, rewrites: 0 };
  const texts = new Map<string, string[]>();
  const storage: Storage = {
    kind: 'files',
    readText: (path) => (texts.get(path) ?? []).join(''),
    journal(path, entries) {
      const journal = journalAt(path, 0);
      journal.rewrite(entries);
      written.rewritten = 0;
      written.rewrites = 0;
      return journal;
    },
    resume: (path, lines) => journalAt(path, lines),
    readDocument: (_path, fallback) => fallback,
    writeDocument: () => undefined,
    remove: (path) => void texts.delete(path),
    durable: () => Promise.resolve(),
  };
  /** A journal of `path` that has `start` lines already (a resumed one keeps its text). */
  function journalAt(path: string, start: number): Journal {
    let lines = start;
    if (!texts.has(path)) texts.set(path, []);
    const journal: Journal = {
      get lines() {
        return lines;
      },
      append(entry) {
        const line = `${JSON.stringify(entry)}\n`;
        texts.get(path)!.push(line);
        written.appended += line.length;
        lines += 1;
      },
      rewrite(all) {
        const rendered = all.map((entry) => `${JSON.stringify(entry)}\n`);
        texts.set(path, rendered);
        written.rewritten += rendered.reduce((sum, line) => sum + line.length, 0);
        written.rewrites += 1;
        lines = rendered.length;
      },
    };
    return journal;
  }
  return { storage, written };
}
