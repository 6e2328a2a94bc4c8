import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The packages groupwire uses for one feature only, which a project installs when it uses that
 * feature: package.json lists each as an optional peer dependency (and a dev dependency of the repo,
 * for the tests and the benches), with the range given here (a test compares the two). `check`,
 * `run` and `reload` refuse a bots.yaml that uses a feature whose packages are missing or of another
 * major, saying where and the one command that installs them. docs/install.md says why each is here.
 */
export interface OptionalPackage {
  name: string;
  /** A caret range: what package.json's peerDependencies says. */
  range: string;
}

/** The platform libraries of the relays, by the plugin's `use:` name. */
export const PLUGIN_PACKAGES: Readonly<Record<string, readonly OptionalPackage[]>> = {
  'relay-irc': [{ name: 'irc-framework', range: '^4.14.0' }],
  'relay-slack': [{ name: '@slack/web-api', range: '^7.19.0' }, { name: '@slack/socket-mode', range: '^2.0.7' }],
  'relay-discord': [
    { name: '@discordjs/core', range: '^2.6.0' }, { name: '@discordjs/rest', range: '^2.6.3' }, { name: '@discordjs/ws', range: '^2.0.4' },
  ],
  'relay-matrix': [{ name: 'matrix-js-sdk', range: '^36.2.0' }],
  'relay-xmpp': [{ name: '@xmpp/client', range: '^0.14.0' }],
  'relay-telegram': [{ name: 'grammy', range: '^1.46.0' }],
  'relay-mattermost': [{ name: '@mattermost/client', range: '^11.9.0' }, { name: '@mattermost/types', range: '^11.9.0' }],
};

/** `coordination: { redis: ... }`: workers sharing the bots through Redis. */
export const COORDINATION_PACKAGES: readonly OptionalPackage[] = [{ name: 'ioredis', range: '^5.11.1' }];

/** A plugin written in TypeScript (`use: ./greeter.ts`, `groupwire test-plugin`): compiled on load by esbuild. */
export const TYPESCRIPT_PACKAGES: readonly OptionalPackage[] = [{ name: 'esbuild', range: '^0.28.2' }];

/** Reading a downloaded archive (a zip): `groupwire archive download`, and readArchive() of the public API. */
export const ARCHIVE_PACKAGES: readonly OptionalPackage[] = [{ name: 'yauzl', range: '^3.4.0' }];

/** Every optional package, once each: what package.json's peerDependencies must list. */
export function allOptionalPackages(): OptionalPackage[] {
  const all = new Map<string, OptionalPackage>();
  for (const pkg of [...Object.values(PLUGIN_PACKAGES).flat(), ...COORDINATION_PACKAGES, ...TYPESCRIPT_PACKAGES, ...ARCHIVE_PACKAGES]) {
    all.set(pkg.name, pkg);
  }
  return [...all.values()];
}

/** Whether a `use:` is a TypeScript file of the user's (groupwire compiles it with esbuild). */
export function isTypeScriptPlugin(use: string): boolean {
  return (use.startsWith('.') || use.startsWith('/')) && /\.m?ts$/.test(use);
}

/** A needed package that is not there (`installed` undefined) or of a version outside its range. */
export interface UnmetPackage extends OptionalPackage {
  installed?: string;
}

/**
 * Where groupwire's code resolves packages from: Node looks for `node_modules/<name>` in this
 * directory and each one above it, as it does for the plugins' own imports (they sit in the same
 * package, beside src/), so what is found here is what the plugin will load.
 */
const CODE_DIR = dirname(fileURLToPath(import.meta.url));

/** The packages of `needed` that cannot be loaded from `fromDir` (default: groupwire's own code). */
export function unmetPackages(needed: readonly OptionalPackage[], fromDir = CODE_DIR): UnmetPackage[] {
  const unmet: UnmetPackage[] = [];
  for (const pkg of needed) {
    const installed = installedVersion(pkg.name, fromDir);
    if (installed === undefined) unmet.push({ ...pkg });
    else if (!satisfiesCaret(installed, pkg.range)) unmet.push({ ...pkg, installed });
  }
  return unmet;
}

/**
 * The version in `node_modules/<name>/package.json` in `fromDir` or the nearest directory above it
 * that has one: Node's own lookup for a bare import (read, not loaded: nothing of it runs).
 */
export function installedVersion(name: string, fromDir: string): string | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const manifest = join(dir, 'node_modules', name, 'package.json');
    if (existsSync(manifest)) {
      try {
        const version = (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: unknown }).version;
        return typeof version === 'string' ? version : '(no version)';
      } catch {
        return '(an unreadable package.json)';
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Whether `version` is in the caret range `^X.Y.Z`: the same major (for 0.x, the same minor) and
 * not older. Pre-release tags are ignored (36.3.0-rc.1 counts as 36.3.0).
 */
export function satisfiesCaret(version: string, range: string): boolean {
  const want = numbers(range.replace(/^\^/, ''));
  const have = numbers(version);
  if (!want || !have) return false;
  const compatible = want[0] > 0 ? have[0] === want[0] : have[0] === 0 && have[1] === want[1];
  if (!compatible) return false;
  for (let at = 0; at < 3; at += 1) {
    if (have[at]! !== want[at]!) return have[at]! > want[at]!;
  }
  return true;
}

function numbers(version: string): [number, number, number] | undefined {
  const parts = version.split('-')[0]!.split('.');
  if (parts.length !== 3 || parts.some((part) => !/^\d+$/.test(part))) return undefined;
  return [Number(parts[0]), Number(parts[1]), Number(parts[2])];
}

/** What `npm install` is given for a range: its major (`matrix-js-sdk@36`), or `0.minor` below 1 (`@xmpp/client@0.14`). */
export function installSpec(pkg: OptionalPackage): string {
  const want = numbers(pkg.range.replace(/^\^/, ''));
  if (!want) return `${pkg.name}@${pkg.range}`;
  return `${pkg.name}@${want[0] > 0 ? want[0] : `0.${want[1]}`}`;
}

/**
 * One line for a feature whose packages are unmet: `relay-matrix needs matrix-js-sdk@^36.2.0:
 * npm install matrix-js-sdk@36` (with what is installed instead, when it is another version). The
 * command names every package of the feature, so one run installs matching versions of them all.
 */
export function describeUnmet(feature: string, needed: readonly OptionalPackage[], unmet: readonly UnmetPackage[], codeDir = CODE_DIR): string {
  const names = unmet.map((pkg) => `${pkg.name}@${pkg.range}${pkg.installed ? ` (${pkg.installed} is installed)` : ''}`);
  return `${feature} needs ${listed(names)}: ${installCommand(needed, codeDir)}`;
}

/**
 * `npm install <each spec>` where groupwire is installed as a package; with `-g` when it is installed
 * globally (`npm install -g groupwire`): its plugins then find the libraries beside it in the global
 * node_modules. Where groupwire is the project itself (a checkout, or docs/deploy.md's /opt/groupwire
 * after `npm ci --omit=dev`), package.json lists them as optional peers, which a plain `npm install
 * <name>` keeps and so leaves out: `--save-prod --no-save --omit=dev` installs them and nothing else,
 * and rewrites neither package.json nor the lock.
 */
export function installCommand(needed: readonly OptionalPackage[], codeDir = CODE_DIR): string {
  const specs = needed.map(installSpec).join(' ');
  if (!codeDir.split(sep).includes('node_modules')) return `npm install --save-prod --no-save --omit=dev ${specs}`;
  return `npm install${isGlobalInstall(codeDir) ? ' -g' : ''} ${specs}`;
}

/** Whether `codeDir` is inside npm's global node_modules (<prefix>/lib/node_modules, or <prefix>\\node_modules on Windows). */
function isGlobalInstall(codeDir: string): boolean {
  const prefix = process.env.npm_config_prefix ?? (process.platform === 'win32' ? dirname(process.execPath) : dirname(dirname(process.execPath)));
  const globalModules = process.platform === 'win32' ? join(prefix, 'node_modules') : join(prefix, 'lib', 'node_modules');
  return codeDir.startsWith(`${globalModules}${sep}`);
}

function listed(items: string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
