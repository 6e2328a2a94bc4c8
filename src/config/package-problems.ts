import type { YamlSource } from './yaml-source.js';
import {
  COORDINATION_PACKAGES, describeUnmet, isTypeScriptPlugin, PLUGIN_PACKAGES, TYPESCRIPT_PACKAGES, unmetPackages, type OptionalPackage,
} from './optional-packages.js';

/** bots.yaml as written (before or after the schema): only the keys that need optional packages are read. */
type RawConfig = { bots?: unknown; coordination?: unknown } | null;

/**
 * The features a bots.yaml uses whose optional packages (optional-packages.ts) are missing or of
 * another major, each as `file:line:col: relay-matrix needs matrix-js-sdk@^36.2.0: npm install
 * matrix-js-sdk@36` at the `use:` (or `coordination:`) that needs them. Found without loading
 * anything, so `check` says it before a plugin's import would fail with the loader's own words.
 */
export function packageProblems(config: RawConfig, source: YamlSource, fromDir?: string): string[] {
  const problems: string[] = [];
  const need = (feature: string, needed: readonly OptionalPackage[], path: Array<string | number>) => {
    const unmet = unmetPackages(needed, fromDir);
    if (unmet.length > 0) problems.push(`${source.where(path)}: ${describeUnmet(feature, needed, unmet, fromDir)}`);
  };
  const bots = Array.isArray(config?.bots) ? (config.bots as Array<{ plugins?: unknown } | null>) : [];
  bots.forEach((bot, botIndex) => {
    const plugins = Array.isArray(bot?.plugins) ? (bot.plugins as Array<{ use?: unknown } | null>) : [];
    plugins.forEach((plugin, index) => {
      const use = plugin?.use;
      if (typeof use !== 'string') return;
      const path = ['bots', botIndex, 'plugins', index, 'use'];
      const platform = PLUGIN_PACKAGES[use];
      if (platform) need(use, platform, path);
      else if (isTypeScriptPlugin(use)) need(`a TypeScript plugin (${use})`, TYPESCRIPT_PACKAGES, path);
    });
  });
  if (config?.coordination !== undefined && config.coordination !== null) need('coordination (workers sharing the bots through Redis)', COORDINATION_PACKAGES, ['coordination']);
  return problems;
}
