import type { Journal, Storage } from '../../src/store/storage.js';

/** A storage in memory that counts what its journals write: appended bytes, rewritten bytes, rewrites. */
export function countingStorage() {
  const written = { appended: 0, rewritten: 0, rewrites: 0 };
  const texts = new Map<string, string[]>();
  const storage: Storage = {
    kind: 'files',
    readText: (path) => (texts.get(path) ?? []).join(''),
    forEachLine(path, _what, visit) {
      const lines = texts.get(path) ?? [];
      lines.forEach((line, index) => visit(JSON.parse(line), index));
      return { lines: lines.length, complete: true };
    },
    readLine: (path, handle) => texts.get(path)![handle]!.slice(0, -1),
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
        journal.appendLine(entry);
      },
      appendLine(entry) {
        const line = `${JSON.stringify(entry)}\n`;
        const list = texts.get(path)!;
        list.push(line);
        written.appended += line.length;
        lines += 1;
        return list.length - 1;
      },
      readLine: (handle) => texts.get(path)![handle]!.slice(0, -1),
      withLines: (use) => use((handle) => journal.readLine(handle)),
      rewrite(all) {
        journal.rewriteTexts(all.map((entry) => JSON.stringify(entry)));
      },
      rewriteTexts(all, placed) {
        const rendered = [...all].map((text) => `${text}\n`);
        rendered.forEach((_, index) => placed?.(index));
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
