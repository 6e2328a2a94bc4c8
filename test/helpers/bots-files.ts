import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temp folder for one test file's bots.yaml files: `write` makes one, `remove` cleans up (afterAll). */
export function botsFiles(prefix: string): { dir: string; write(lines: string[]): string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let counter = 0;
  return {
    dir,
    write(lines) {
      const file = join(dir, `bots-${++counter}.yaml`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      return file;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** `file:line:col` of the first occurrence of `needle` on the 1-based line `line`. */
export function at(file: string, lines: string[], line: number, needle: string): string {
  const col = lines[line - 1]!.indexOf(needle);
  if (col < 0) throw new Error(`"${needle}" is not on line ${line}`);
  return `${file}:${line}:${col + 1}`;
}
