import { join } from 'node:path';
import { packageRoot } from '../config/package-root.js';
import { installCommand, PLUGIN_PACKAGES, unmetPackages } from '../config/optional-packages.js';
import { PLUGIN_CATALOGUE } from '../config/plugin-catalogue.js';
import { parseFlags } from './command.js';
import { UsageError } from './usage-error.js';

export const PLUGINS_HELP = `Usage: groupwire plugins

Lists the plugins that ship with groupwire (use: NAME in bots.yaml), one line each with its page,
then each relay's platform library: installed, or the command that installs it.
The pages are docs/plugins/NAME.md in the groupwire package (the installed package's docs/ holds
them, as does the repository). Your own plugin: groupwire new-plugin NAME.
`;

export async function pluginsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags({ args, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  if (values.help) {
    process.stdout.write(PLUGINS_HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`plugins takes no arguments, got ${positionals.join(' ')}`);
  const nameWidth = Math.max(...PLUGIN_CATALOGUE.map((plugin) => plugin.name.length));
  const summaryWidth = Math.max(...PLUGIN_CATALOGUE.map((plugin) => plugin.summary.length));
  const lines = PLUGIN_CATALOGUE.map((plugin) => `  ${plugin.name.padEnd(nameWidth)}  ${plugin.summary.padEnd(summaryWidth)}  ${plugin.docs}`);
  process.stdout.write([
    'Built-in plugins (use: NAME in bots.yaml):',
    '',
    ...lines,
    '',
    'Their platform libraries, optional packages installed where groupwire is (docs/install.md):',
    '',
    ...libraryLines(nameWidth),
    '',
    `The pages are in the groupwire package's docs/ (here: ${join(packageRoot(), 'docs', 'plugins')}).`,
    'Your own plugin: groupwire new-plugin NAME (docs/bots.md, "Writing a plugin").',
    '',
  ].join('\n'));
  return 0;
}

/** Each relay's libraries: installed, or the command that installs them (what check says when a bots.yaml uses it). */
function libraryLines(nameWidth: number): string[] {
  return Object.entries(PLUGIN_PACKAGES).map(([name, needed]) => {
    const unmet = unmetPackages(needed);
    const packages = needed.map((pkg) => `${pkg.name}@${pkg.range}`).join(', ');
    return `  ${name.padEnd(nameWidth)}  ${packages}: ${unmet.length === 0 ? 'installed' : `not installed (${installCommand(needed)})`}`;
  });
}
