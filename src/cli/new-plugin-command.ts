import { existsSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { isBuiltinPlugin } from '../config/plugin-catalogue.js';
import { describeUnmet, installCommand, TYPESCRIPT_PACKAGES, unmetPackages } from '../config/optional-packages.js';
import { packageRoot } from '../config/package-root.js';
import { parseFlags } from './command.js';
import { botsYaml, pluginSource, readme, testSource } from './new-plugin/templates.js';
import { UsageError } from './usage-error.js';

export const NEW_PLUGIN_HELP = `Usage: groupwire new-plugin NAME [--dir DIR]

Writes a ready plugin into a new folder NAME (or DIR): NAME.ts (TypeScript, typed options with a
strict zod schema), NAME.test.ts (node:test), a bots.yaml that uses it and a README. groupwire loads
the .ts directly (compiled by esbuild, an optional package: npm install esbuild@0.28 once where
groupwire is installed) and lends it groupwire and zod. Then:

  groupwire check NAME/bots.yaml     validate
  groupwire test-plugin NAME         run its tests
  groupwire run NAME/bots.yaml       run it (against the local service inside the process)

Options:
  --dir DIR    where to write (default ./NAME); it must not exist yet, or be empty
  -h, --help   this text
`;

export async function newPluginCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args, options: { help: { type: 'boolean', short: 'h' }, dir: { type: 'string' } }, allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(NEW_PLUGIN_HELP);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('give the plugin a NAME (groupwire new-plugin greeter)');
  const name = positionals[0]!;
  if (!/^[a-z][a-z0-9-]*$/.test(name)) throw new UsageError(`a plugin name is lower-case letters, digits and -, starting with a letter; got ${name}`);
  if (isBuiltinPlugin(name)) throw new UsageError(`${name} is a built-in plugin's name; choose another`);
  const dir = resolve(values.dir ?? name);
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new UsageError(`${dir} exists and is not empty; give another NAME or --dir`);
  }
  const esbuildInstall = installCommand(TYPESCRIPT_PACKAGES);
  // esbuild is optional (only TypeScript plugins need it): say so now rather than at the first check.
  const unmet = unmetPackages(TYPESCRIPT_PACKAGES);
  await mkdir(dir, { recursive: true });
  const files: Array<[string, string]> = [
    [`${name}.ts`, pluginSource(name)],
    [`${name}.test.ts`, testSource(name)],
    ['bots.yaml', botsYaml(name)],
    ['README.md', readme(name, groupwireCheckout(), esbuildInstall)],
  ];
  for (const [file, text] of files) await writeFile(join(dir, file), text, { flag: 'wx' });
  const shown = relative(process.cwd(), dir) || '.';
  process.stdout.write(`wrote ${shown}/: ${files.map(([file]) => file).join(', ')}\n\n` +
    (unmet.length > 0 ? `${describeUnmet(`${name}.ts, a TypeScript plugin,`, TYPESCRIPT_PACKAGES, unmet)}\n\n` : '') +
    `  groupwire check ${shown}/bots.yaml\n  groupwire test-plugin ${shown}\n  groupwire run ${shown}/bots.yaml\n`);
  return 0;
}

/** The checkout groupwire runs from (its sources are there), or none for an installed package (dist, docs only). */
function groupwireCheckout(): string | undefined {
  const root = resolve(packageRoot());
  return existsSync(join(root, 'src', 'cli', 'main.ts')) ? root : undefined;
}
