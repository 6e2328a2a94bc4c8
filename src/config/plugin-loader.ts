import { isPluginDefinition, type PluginDefinition } from '../pipeline/plugin.js';
import type { LoadedConfig, PluginConfig } from './bots-config.js';
import { BUILTIN_PLUGIN_NAMES, isBuiltinPlugin } from './plugin-catalogue.js';
import { ensurePluginModuleHooks } from './plugin-module-hooks-registration.js';
import { moduleUrl, UnknownPluginName } from './plugin-resolution.js';
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
  /** The plugin's warnings about its options (definition.warnings), each as `file:line:col: message`. */
  warnings?: string[];
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
  const warnings = (definition.warnings?.(options) ?? []).map((w) => `${loaded.source.where([...path, 'with', ...w.path])}: ${w.message}`);
  return {
    name: definition.name,
    definition,
    options,
    timeoutMs: entry.timeout_ms ?? definition.timeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS,
    ...(warnings.length > 0 ? { warnings } : {}),
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
