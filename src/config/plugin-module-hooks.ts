/**
 * Module hooks for plugins that live anywhere (`use: /tmp/x/my-plugin.ts`), registered with
 * `module.register` the first time a plugin is loaded from a path or a package. They do two things:
 *
 * - **Imports a plugin's folder cannot resolve.** `groupwire`, `groupwire/<subpath>` and `zod` (with
 *   its subpaths) are resolved normally first, from the plugin's own folder; only when that fails
 *   (`ERR_MODULE_NOT_FOUND`: the folder has no node_modules with them) do they fall back to the
 *   groupwire that is running and the zod it uses. So a plugin shares groupwire's module instances
 *   (`instanceof PostFailedError` holds) and nobody has to `npm install` anything beside a plugin.
 *   A plugin folder that does install its own groupwire or zod keeps them.
 * - **TypeScript plugin files** (`.ts`, `.mts`) outside node_modules and outside groupwire's own code
 *   are compiled as ES modules with esbuild's `transform` (types stripped, nothing type-checked), which
 *   is imported in the loader thread on the first such file only. Node 20 has no type stripping of
 *   its own. A relative import written the TypeScript way (`./helper.js` for `helper.ts`, or without
 *   an extension) is found too.
 *
 * The hooks run in Node's module loader thread. They are plain JavaScript in a string, registered
 * as a `data:` URL, so they load the same from the tsc build (dist/), from the TypeScript sources
 * (tests, through tsx) and inside vitest: a hooks file of our own would be `.ts` in two of the three.
 * Everything they need from the main thread comes in `data` ({@link PluginHooksData}).
 */
export interface PluginHooksData {
  /** `groupwire`, `groupwire/responder`, ... to the URL of the running groupwire's module for it. */
  entries: Record<string, string>;
  /** A file URL inside the running groupwire, to resolve `zod` from. */
  zodParent: string;
  /** URL prefix of groupwire's own code: its TypeScript (when it runs from source) is not ours to compile. */
  ownRoot: string;
  /** File URL of esbuild's entry, imported on the first TypeScript plugin file; undefined when it is not installed. */
  esbuild: string | undefined;
  /** The command that installs esbuild, for the error when it is not installed. */
  esbuildInstall: string;
}

export const PLUGIN_HOOKS_SOURCE = String.raw`
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let settings;
let esbuild;

export function initialize(data) {
  settings = data;
}

/** A file of the user's own: not installed in node_modules, not groupwire's own code. */
function isUserFile(url) {
  return Boolean(url) && url.startsWith('file:') && !url.includes('/node_modules/') && !url.startsWith(settings.ownRoot);
}

function isPluginTypeScript(url) {
  return isUserFile(url) && /\.m?ts$/.test(new URL(url).pathname);
}

/** The "type" of the package.json nearest to a file, or undefined when none says. */
function declaredType(url) {
  for (let dir = dirname(fileURLToPath(url)); ; dir = dirname(dir)) {
    try {
      return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).type;
    } catch {
      if (dirname(dir) === dir) return undefined;
    }
  }
}

function isRelative(specifier) {
  return specifier.startsWith('./') || specifier.startsWith('../');
}

/** Where else a relative import of a TypeScript file may point: helper.js -> helper.ts, helper -> helper.ts. */
function typeScriptCandidates(specifier) {
  if (/\.js$/.test(specifier)) return [specifier.replace(/\.js$/, '.ts')];
  if (/\.mjs$/.test(specifier)) return [specifier.replace(/\.mjs$/, '.mts')];
  if (!/\.[A-Za-z0-9]+$/.test(specifier)) return [specifier + '.ts', specifier + '/index.ts'];
  return [];
}

async function fallback(specifier, context, nextResolve) {
  const own = settings.entries[specifier];
  if (own) return nextResolve(own, context);
  if (specifier === 'zod' || specifier.startsWith('zod/')) {
    return nextResolve(specifier, { ...context, parentURL: settings.zodParent });
  }
  if (isRelative(specifier) && isPluginTypeScript(context.parentURL)) {
    for (const candidate of typeScriptCandidates(specifier)) {
      try {
        return await nextResolve(candidate, context);
      } catch {
        // try the next candidate
      }
    }
  }
  return undefined;
}

export async function resolve(specifier, context, nextResolve) {
  let result;
  try {
    result = await nextResolve(specifier, context);
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    result = await fallback(specifier, context, nextResolve);
    if (!result) throw error;
  }
  // A plugin's TypeScript is an ES module whatever package.json is (or is not) around it.
  if (isPluginTypeScript(result.url)) return { ...result, format: 'module' };
  // A .js plugin no package.json gives a type is taken as Node takes it, by its syntax (import/export:
  // an ES module). Only another loader in the chain (tsx, when groupwire runs from its sources) says
  // commonjs here, and its require() would not come through these hooks.
  if (result.format === 'commonjs' && isUserFile(result.url) && /\.js$/.test(result.url) && declaredType(result.url) === undefined) {
    return { ...result, format: undefined };
  }
  return result;
}

export async function load(url, context, nextLoad) {
  if (!isPluginTypeScript(url)) return nextLoad(url, context);
  if (!esbuild) {
    if (!settings.esbuild) throw new Error('a TypeScript plugin (' + fileURLToPath(url) + ') needs esbuild: ' + settings.esbuildInstall);
    const module = await import(settings.esbuild);
    esbuild = module.transform ? module : module.default;
  }
  const file = fileURLToPath(url);
  const { code } = await esbuild.transform(await readFile(file, 'utf8'), {
    loader: 'ts', format: 'esm', target: 'node20', sourcefile: file, sourcemap: 'inline',
  });
  return { format: 'module', source: code, shortCircuit: true };
}
`;
