import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { readme } from '../src/cli/new-plugin/templates.js';
import { cleanEnv, ROOT, runCli, succeeded } from './helpers/cli.js';

/**
 * The README of `groupwire new-plugin`: its command for an editor's type checking must work before
 * groupwire is published. Running it takes npm most of a minute (it walks the linked checkout), so
 * the test checks what it names: groupwire's checkout and the zod and TypeScript inside it, which
 * `npm install --save-dev <folder>` links (tried by hand: check, test-plugin and tsc --noEmit then
 * pass in the plugin's folder).
 */

const home = mkdtempSync(join(tmpdir(), 'gw-new-plugin-readme-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** The words of a shell line made of plain words and single-quoted ones (what the README writes). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let at = 0; at < line.length; at += 1) {
    const char = line[at]!;
    if (char === ' ') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (char === "'") {
      const end = line.indexOf("'", at + 1);
      word = (word ?? '') + line.slice(at + 1, end);
      at = end;
    } else {
      word = (word ?? '') + char;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

describe('groupwire new-plugin: the README', () => {
  test('names a dev-dependency install that works from this checkout today, and the plain one for once groupwire is published', async () => {
    succeeded(await runCli(['new-plugin', 'greeter'], cleanEnv(), home));
    const text = readFileSync(join(home, 'greeter', 'README.md'), 'utf8');
    const installs = text.split('\n').filter((line) => line.startsWith('npm install --save-dev '));
    expect(installs).toHaveLength(2);
    const [fromCheckout, published] = installs.map((line) => shellWords(line.replace(/ +#.*$/, '')).slice(3));
    expect(published).toEqual(['groupwire', 'zod', 'typescript']);
    expect(fromCheckout).toHaveLength(3);
    const packageName = (dir: string) => (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string }).name;
    expect(fromCheckout!.map((dir) => existsSync(join(dir, 'package.json')) && packageName(dir))).toEqual(['groupwire', 'zod', 'typescript']);
    expect(realpathSync(fromCheckout![0]!)).toBe(realpathSync(ROOT));
    // Its types are the build's: the checkout's npm install (prepare) or npm start made it.
    expect(text).toContain('npm run build');
  });

  test('made by an installed groupwire (no checkout): esbuild and TypeScript beside it, groupwire and zod are there', () => {
    // package-install.test.ts runs this line in a project that installed the packed groupwire.
    const installs = readme('greeter', undefined).split('\n').filter((line) => line.startsWith('npm install'));
    expect(installs.map((line) => line.replace(/ +#.*$/, ''))).toEqual(['npm install esbuild@0.28 typescript']);
  });
});
