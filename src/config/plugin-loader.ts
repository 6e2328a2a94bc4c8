import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isPluginDefinition, type PluginDefinition } from '../pipeline/plugin.js';
import type { LoadedConfig, PluginConfig } from './bots-config.js';
import { ConfigError } from './yaml-source.js';

/** The plugins that ship with groupwire, by the name `use:` gives them. */
export const BUILTIN_PLUGINS = ['logger', 'responder'] as const;

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
  if ((BUILTIN_PLUGINS as readonly string[]).includes(use)) {
    // Built-ins sit in plugins/ beside src/ (and beside dist/src/ once compiled).
    return new URL(`../../plugins/${use}/index.js`, import.meta.url).href;
  }
  if (use.startsWith('.') || isAbsolute(use)) return pathToFileURL(resolve(configDir, use)).href;
  const require = createRequire(join(configDir, 'bots.yaml'));
  return pathToFileURL(require.resolve(use)).href;
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
      else problems.push(`${loaded.source.where([...path, 'use'])}: cannot load plugin ${entry.use}: ${(error as Error).message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return plugins;
}

async function loadPlugin(loaded: LoadedConfig, entry: PluginConfig, path: Array<string | number>): Promise<LoadedPlugin> {
  const module = (await import(moduleUrl(entry.use, loaded.dir))) as { default?: unknown; plugin?: unknown };
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
