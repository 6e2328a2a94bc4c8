import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FROM_SOURCE } from '../config/package-root.js';
import { describeUnmet, TYPESCRIPT_PACKAGES, unmetPackages } from '../config/optional-packages.js';
import { parseFlags } from './command.js';
import { UsageError } from './usage-error.js';

export const TEST_PLUGIN_HELP = `Usage: groupwire test-plugin [PATH...]

Runs a plugin's tests (files named *.test.ts, *.test.mts, *.test.js or *.test.mjs in PATH, default
the current directory, and below it) with node's test runner (node --test), loaded as groupwire
loads plugins: TypeScript compiled on load, and groupwire and zod lent to a folder that has none.
The exit code is the test runner's: 0 when every test passes, 1 when one fails.
`;

const TEST_FILE = /\.test\.m?[jt]s$/;

export async function testPluginCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags({ args, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  if (values.help) {
    process.stdout.write(TEST_PLUGIN_HELP);
    return 0;
  }
  const files = (positionals.length ? positionals : ['.']).flatMap((path) => testFiles(resolve(path)));
  if (files.length === 0) throw new UsageError(`no test files (*.test.ts, *.test.js) in ${positionals.join(' ') || 'the current directory'}`);
  // TypeScript is compiled on load by esbuild, an optional package: say the command rather than let each test fail.
  const unmet = files.some((file) => /\.m?ts$/.test(file)) ? unmetPackages(TYPESCRIPT_PACKAGES) : [];
  if (unmet.length > 0) throw new Error(describeUnmet('TypeScript tests', TYPESCRIPT_PACKAGES, unmet));
  // node --test, with the plugin hooks registered first in it and in each test file's process
  // (--import is handed on to them); this process's own flags too (tsx, when groupwire runs from source).
  const hooks = new URL(`../config/register-plugin-hooks.${FROM_SOURCE ? 'ts' : 'js'}`, import.meta.url).href;
  const child = spawn(process.execPath, [...process.execArgv, '--import', hooks, '--test', ...files], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

function testFiles(path: string): string[] {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    throw new UsageError(`${path} does not exist`);
  }
  if (stats.isFile()) return [path];
  const found: string[] = [];
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const full = join(path, entry.name);
    if (entry.isDirectory()) found.push(...testFiles(full));
    else if (TEST_FILE.test(entry.name)) found.push(full);
  }
  return found.sort();
}
