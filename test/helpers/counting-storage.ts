import type { Journal, Storage } from '../../src/store/storage.js';

/** A storage in memory that counts what its journals write: appended bytes, rewritten bytes, rewrites. */
export function countingStorage() {
  const written = { appended: 0, rewritten: 0, rewrites: 0 };
  const texts = new Map<string, string[]>();
  const storage: Storage = {
    kind: 'files',
    readText: (path) => (texts.get(path) ?? []).join(''),
    journal(path, entries) {
      let lines = 0;
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
      journal.rewrite(entries);
      written.rewritten = 0;
      written.rewrites = 0;
      return journal;
    },
    readDocument: (_path, fallback) => fallback,
    writeDocument: () => undefined,
    remove: (path) => void texts.delete(path),
    durable: () => Promise.resolve(),
  };
  return { storage, written };
}
