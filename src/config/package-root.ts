import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The root of the running groupwire's code: the directory holding src/ and plugins/. That is dist/
 * for the tsc build the package runs, another build directory for the benches, or the checkout when
 * groupwire runs from its TypeScript sources (tests).
 */
export const CODE_ROOT = new URL('../../', import.meta.url);

/** True when groupwire runs from its TypeScript sources (tests, through tsx or vitest). */
export const FROM_SOURCE = import.meta.url.endsWith('.ts');

let root: string | undefined;

/** The directory of groupwire's package.json (the installed package, or the checkout), found upwards from the running code. */
export function packageRoot(): string {
  if (root) return root;
  for (let dir = fileURLToPath(CODE_ROOT); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'groupwire') return (root = dir);
    if (dirname(dir) === dir) throw new Error(`groupwire's package.json was not found above ${fileURLToPath(CODE_ROOT)}`);
  }
}
