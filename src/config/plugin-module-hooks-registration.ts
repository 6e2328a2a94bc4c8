import { readFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { installCommand, TYPESCRIPT_PACKAGES } from './optional-packages.js';
import { CODE_ROOT, FROM_SOURCE, packageRoot } from './package-root.js';
import { PLUGIN_HOOKS_SOURCE, type PluginHooksData } from './plugin-module-hooks.js';

let registered = false;

/**
 * Registers the plugin module hooks (see plugin-module-hooks.ts) once per process, before the first
 * plugin that is not a built-in is imported.
 */
export function ensurePluginModuleHooks(): void {
  if (registered) return;
  registered = true;
  const data: PluginHooksData = {
    entries: ownEntries(),
    zodParent: import.meta.url,
    ownRoot: CODE_ROOT.href,
    esbuild: esbuildUrl(),
    esbuildInstall: installCommand(TYPESCRIPT_PACKAGES),
  };
  register(`data:text/javascript,${encodeURIComponent(PLUGIN_HOOKS_SOURCE)}`, { data });
}

/**
 * esbuild's entry, or undefined when it is not installed: it is an optional package, needed only by
 * TypeScript plugins (optional-packages.ts), and bots.yaml's check refuses those without it first.
 */
function esbuildUrl(): string | undefined {
  try {
    return pathToFileURL(createRequire(import.meta.url).resolve('esbuild')).href;
  } catch {
    return undefined;
  }
}

/**
 * What `groupwire` and `groupwire/<subpath>` mean, from package.json's `exports`. The map names the
 * tsc build under ./dist/; its targets are taken relative to the code that is running instead, so a
 * plugin gets the very modules the supervisor uses (and the .ts sources when that is what runs).
 */
function ownEntries(): Record<string, string> {
  const root = packageRoot();
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports?: Record<string, unknown> };
  const entries: Record<string, string> = {};
  for (const [key, target] of Object.entries(pkg.exports ?? {})) {
    const file = exportFile(target);
    if (!file) continue;
    const specifier = key === '.' ? 'groupwire' : `groupwire/${key.replace(/^\.\//, '')}`;
    if (file.startsWith('./dist/')) {
      const url = new URL(file.slice('./dist/'.length), CODE_ROOT).href;
      entries[specifier] = FROM_SOURCE ? url.replace(/\.js$/, '.ts') : url;
    } else {
      entries[specifier] = pathToFileURL(join(root, file)).href;
    }
  }
  return entries;
}

function exportFile(target: unknown): string | undefined {
  if (typeof target === 'string') return target;
  if (!target || typeof target !== 'object') return undefined;
  const conditions = target as Record<string, unknown>;
  return exportFile(conditions.import) ?? exportFile(conditions.default);
}

