import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { nearestName } from './nearest-name.js';
import { BUILTIN_PLUGIN_NAMES, isBuiltinPlugin } from './plugin-catalogue.js';

/**
 * Resolves a `use:`: a built-in name, a path relative to bots.yaml (or absolute), or an npm package
 * name resolved from the config's directory.
 */
export function moduleUrl(use: string, configDir: string): string {
  if (isBuiltinPlugin(use)) {
    // Built-ins sit in plugins/ beside src/ (and beside dist/src/ once compiled).
    return new URL(`../../plugins/${use}/index.js`, import.meta.url).href;
  }
  if (use.startsWith('.') || isAbsolute(use)) return pathToFileURL(resolve(configDir, use)).href;
  try {
    return pathToFileURL(packageEntry(use, configDir)).href;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
    throw new UnknownPluginName(use);
  }
}

/** A `use:` that is neither a built-in, nor a path, nor an installed package: most often a typo. */
export class UnknownPluginName extends Error {
  constructor(use: string) {
    const nearest = nearestName(use, BUILTIN_PLUGIN_NAMES);
    super(`no plugin named ${use}${nearest ? ` (did you mean ${nearest}?)` : ''}: the built-ins are ` +
      `${BUILTIN_PLUGIN_NAMES.join(', ')} ('groupwire plugins' lists them), a file is given as a path ` +
      '(./my-plugin.js), and no package of that name is installed next to bots.yaml');
  }
}

/**
 * An installed package's ESM entry, found from the config's directory upwards: `exports` (its
 * `import` or `default` condition), else `module`, else `main`. CommonJS resolution is the fallback.
 */
function packageEntry(name: string, fromDir: string): string {
  for (let dir = resolve(fromDir); ; dir = dirname(dir)) {
    const root = join(dir, 'node_modules', name);
    const manifest = join(root, 'package.json');
    if (existsSync(manifest)) {
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: unknown; module?: string; main?: string };
      const entry = exportTarget(pkg.exports) ?? pkg.module ?? pkg.main ?? 'index.js';
      return join(root, entry);
    }
    if (dirname(dir) === dir) break;
  }
  return createRequire(join(fromDir, 'noop.js')).resolve(name);
}

function exportTarget(exports: unknown): string | undefined {
  if (typeof exports === 'string') return exports;
  if (!exports || typeof exports !== 'object') return undefined;
  const root = (exports as Record<string, unknown>)['.'] ?? exports;
  if (typeof root === 'string') return root;
  if (!root || typeof root !== 'object') return undefined;
  const conditions = root as Record<string, unknown>;
  for (const condition of ['import', 'node', 'default']) {
    const target = exportTarget(conditions[condition]);
    if (target) return target;
  }
  return undefined;
}

/**
 * What is wrong with a `use:` that names neither a built-in, a path nor an installed package (most
 * often a typo), without loading anything; undefined when it names something that is there to load.
 */
export function unknownPluginName(use: string, configDir: string): string | undefined {
  try {
    moduleUrl(use, configDir);
    return undefined;
  } catch (error) {
    if (error instanceof UnknownPluginName) return error.message;
    return undefined;
  }
}
