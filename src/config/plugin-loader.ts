import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isPluginDefinition, type PluginDefinition } from '../pipeline/plugin.js';
import type { LoadedConfig, PluginConfig } from './bots-config.js';
import { nearestName } from './nearest-name.js';
import { BUILTIN_PLUGIN_NAMES, isBuiltinPlugin } from './plugin-catalogue.js';
import { ensurePluginModuleHooks } from './plugin-module-hooks-registration.js';
import { ConfigError } from './yaml-source.js';

/** The plugins that ship with groupwire, by the name `use:` gives them (plugin-catalogue.ts). */
export const BUILTIN_PLUGINS = BUILTIN_PLUGIN_NAMES;

export const DEFAULT_PLUGIN_TIMEOUT_MS = 10_000;

export interface LoadedPlugin {
  name: string;
  definition: PluginDefinition;
  /** The `with:` options, validated by the plugin's own schema. */
  options: unknown;
  timeoutMs: number;
}

/**
 * Resolves a `use:`: a built-in name, a path relative to bots.yaml (or absolute), or an npm package
 * name resolved from the config's directory.
 */
function moduleUrl(use: string, configDir: string): string {
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
class UnknownPluginName extends Error {
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

/** Loads and validates one bot's plugin chain; every problem names its place in bots.yaml. */
export async function loadPlugins(loaded: LoadedConfig, botIndex: number): Promise<LoadedPlugin[]> {
  const bot = loaded.config.bots[botIndex]!;
  const plugins: LoadedPlugin[] = [];
  const problems: string[] = [];
  for (const [index, entry] of bot.plugins.entries()) {
    const path = ['bots', botIndex, 'plugins', index];
    try {
      plugins.push(await loadPlugin(loaded, entry, path));
    } catch (error) {
      if (error instanceof ConfigError) problems.push(...error.problems);
      else if (error instanceof UnknownPluginName) problems.push(`${loaded.source.where([...path, 'use'])}: ${error.message}`);
      else problems.push(`${loaded.source.where([...path, 'use'])}: cannot load plugin ${entry.use}: ${oneLine(error)}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return plugins;
}

async function loadPlugin(loaded: LoadedConfig, entry: PluginConfig, path: Array<string | number>): Promise<LoadedPlugin> {
  const url = moduleUrl(entry.use, loaded.dir);
  // A plugin of the user's may import groupwire and zod without installing them, and be TypeScript.
  if (!isBuiltinPlugin(entry.use)) ensurePluginModuleHooks();
  const module = (await import(url)) as { default?: unknown; plugin?: unknown };
  const definition = [module.default, module.plugin].find(isPluginDefinition);
  if (!definition) {
    throw new ConfigError([`${loaded.source.where([...path, 'use'])}: ${entry.use} does not export a plugin (export default definePlugin({...}))`]);
  }
  const options = loaded.source.validate(definition.options, entry.with ?? {}, [...path, 'with']);
  return {
    name: definition.name,
    definition,
    options,
    timeoutMs: entry.timeout_ms ?? definition.timeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS,
  };
}

/** The gist of a module loading error, on one line, without the loader's internal paths. */
function oneLine(error: unknown): string {
  const message = (error as Error)?.message ?? String(error);
  // esbuild's "Transform failed with 1 error:" says what failed on the next line (file:line:col: ERROR: ...).
  const lines = message.split('\n');
  if (/^Transform failed/.test(lines[0]!) && lines[1]) return lines[1].replace(/ERROR: /, '');
  return lines[0]!.replace(/ imported from \S+$/, '').replace(/^Cannot find (module|package) /, 'no such $1 ');
}
