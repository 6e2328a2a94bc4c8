import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ConfigError, YamlSource } from '../src/config/yaml-source.js';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { packageProblems } from '../src/config/package-problems.js';
import {
  allOptionalPackages, describeUnmet, installCommand, installSpec, PLUGIN_PACKAGES, satisfiesCaret, unmetPackages,
} from '../src/config/optional-packages.js';
import { loadYauzl } from '../src/api/zip-library.js';
import { ROOT } from './helpers/cli.js';

/**
 * #37 item 2: the platform libraries are optional peer dependencies. A bots.yaml that uses a relay
 * whose library is missing, or of another major, is refused at its `use:` with the command that
 * installs it, found the way Node finds the package (node_modules folders upwards), nothing loaded.
 */

const home = mkdtempSync(join(tmpdir(), 'gw-optional-packages-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** A project folder whose node_modules holds the given packages (only their package.json). */
function project(name: string, installed: Record<string, string>): string {
  const dir = join(home, name);
  for (const [pkg, version] of Object.entries(installed)) {
    mkdirSync(join(dir, 'node_modules', pkg), { recursive: true });
    writeFileSync(join(dir, 'node_modules', pkg, 'package.json'), JSON.stringify({ name: pkg, version }));
  }
  mkdirSync(codeIn(dir), { recursive: true });
  return dir;
}

/** groupwire's code as a project that installed it has it: node_modules/groupwire/dist/src/config. */
const codeIn = (dir: string) => join(dir, 'node_modules', 'groupwire', 'dist', 'src', 'config');

const YAML = `service:
  base_url: https://groups.example.com
bots:
  - name: b
    login: { email: b@example.com, password: x }
    chats: [{ group: g, chat: c }]
    plugins:
      - use: logger
      - use: relay-matrix
        with: { homeserver: https://m.example.com, user_id: "@b:m.example.com", access_token: t, rooms: { c: "!r:m.example.com" } }
      - use: relay-discord
        with: {}
      - use: ./mine.ts
coordination:
  redis: redis://127.0.0.1:6379
`;

async function problemsIn(dir: string): Promise<string[]> {
  const file = join(dir, 'bots.yaml');
  writeFileSync(file, YAML);
  const source = await YamlSource.read(file);
  return packageProblems(source.toJS() as Parameters<typeof packageProblems>[0], source, codeIn(dir));
}

describe('optional packages', () => {
  test('missing ones: each refused at its use: (file:line:col) with the exact install command', async () => {
    const dir = project('none', {});
    const file = join(dir, 'bots.yaml');
    expect(await problemsIn(dir)).toEqual([
      `${file}:9:14: relay-matrix needs matrix-js-sdk@^36.2.0: npm install matrix-js-sdk@36`,
      `${file}:11:14: relay-discord needs @discordjs/core@^2.6.0, @discordjs/rest@^2.6.3 and @discordjs/ws@^2.0.4: npm install @discordjs/core@2 @discordjs/rest@2 @discordjs/ws@2`,
      `${file}:13:14: a TypeScript plugin (./mine.ts) needs esbuild@^0.28.2: npm install esbuild@0.28`,
      `${file}:15:3: coordination (workers sharing the bots through Redis) needs ioredis@^5.11.1: npm install ioredis@5`,
    ]);
  });

  test('another major (or an older minor) is refused the same way, saying what is installed; the right ones pass', async () => {
    const dir = project('versions', {
      'matrix-js-sdk': '35.1.0', '@discordjs/core': '2.6.0', '@discordjs/rest': '2.7.1', '@discordjs/ws': '2.0.3',
      esbuild: '0.28.9', ioredis: '5.11.1',
    });
    const file = join(dir, 'bots.yaml');
    expect(await problemsIn(dir)).toEqual([
      `${file}:9:14: relay-matrix needs matrix-js-sdk@^36.2.0 (35.1.0 is installed): npm install matrix-js-sdk@36`,
      `${file}:11:14: relay-discord needs @discordjs/ws@^2.0.4 (2.0.3 is installed): npm install @discordjs/core@2 @discordjs/rest@2 @discordjs/ws@2`,
    ]);
  });

  test('from groupwire\'s own code (this checkout: every one a dev dependency) nothing is refused', async () => {
    // From groupwire's own code, the checkout's node_modules has them all: nothing to say.
    const dir = project('checkout', {});
    const file = join(dir, 'bots.yaml');
    writeFileSync(file, YAML.replace('      - use: ./mine.ts\n', '').replace(/coordination:\n.*\n/, ''));
    const error = await loadBotsConfig(file).then(() => undefined, (e: unknown) => e);
    // Valid but for the relays' options (checked when the plugins load): no package problem.
    expect(error === undefined || (error instanceof ConfigError && !error.problems.some((p) => p.includes(' needs ')))).toBe(true);
    expect(unmetPackages(allOptionalPackages())).toEqual([]);
  });

  test('reading an archive: yauzl missing or of another major is one line with the command; installed, it loads', async () => {
    const message = (failed: Promise<unknown>) => failed.then(() => 'loaded', (error: Error) => error.message);
    expect(await message(loadYauzl(codeIn(project('no-yauzl', {}))))).toBe('reading an archive needs yauzl@^3.4.0: npm install yauzl@3');
    expect(await message(loadYauzl(codeIn(project('old-yauzl', { yauzl: '2.10.0' })))))
      .toBe('reading an archive needs yauzl@^3.4.0 (2.10.0 is installed): npm install yauzl@3');
    expect(typeof (await loadYauzl()).open).toBe('function');
  });

  test('caret ranges: same major (0.x: same minor), not older; prereleases count as their version', () => {
    expect(satisfiesCaret('36.2.0', '^36.2.0')).toBe(true);
    expect(satisfiesCaret('36.10.1', '^36.2.0')).toBe(true);
    expect(satisfiesCaret('36.1.9', '^36.2.0')).toBe(false);
    expect(satisfiesCaret('37.0.0', '^36.2.0')).toBe(false);
    expect(satisfiesCaret('0.14.3', '^0.14.0')).toBe(true);
    expect(satisfiesCaret('0.15.0', '^0.14.0')).toBe(false);
    expect(satisfiesCaret('36.3.0-rc.1', '^36.2.0')).toBe(true);
    expect(satisfiesCaret('garbage', '^36.2.0')).toBe(false);
    expect(installSpec({ name: '@xmpp/client', range: '^0.14.0' })).toBe('@xmpp/client@0.14');
    expect(describeUnmet('relay-matrix', PLUGIN_PACKAGES['relay-matrix']!, [{ name: 'matrix-js-sdk', range: '^36.2.0' }], codeIn(home)))
      .toBe('relay-matrix needs matrix-js-sdk@^36.2.0: npm install matrix-js-sdk@36');
  });

  test('the command: -g when groupwire is installed globally; --save-prod --no-save --omit=dev where groupwire is the project', () => {
    const prefix = process.env.npm_config_prefix ?? dirname(dirname(process.execPath));
    const globalCode = join(prefix, 'lib', 'node_modules', 'groupwire', 'dist', 'src', 'config');
    expect(installCommand(PLUGIN_PACKAGES['relay-matrix']!, globalCode)).toBe('npm install -g matrix-js-sdk@36');
    expect(installCommand(PLUGIN_PACKAGES['relay-matrix']!, join(home, 'project', 'node_modules', 'groupwire', 'dist', 'src', 'config')))
      .toBe('npm install matrix-js-sdk@36');
    expect(installCommand(PLUGIN_PACKAGES['relay-matrix']!, join('/opt', 'groupwire', 'dist', 'src', 'config')))
      .toBe('npm install --save-prod --no-save --omit=dev matrix-js-sdk@36');
  });

  test('the table is package.json: each an optional peer dependency with its range, and a dev dependency of the repo', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>; devDependencies: Record<string, string>;
      peerDependencies: Record<string, string>; peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const table = Object.fromEntries(allOptionalPackages().map((p) => [p.name, p.range]));
    expect(pkg.peerDependencies).toEqual(table);
    for (const name of Object.keys(table)) {
      expect(pkg.peerDependenciesMeta[name]).toEqual({ optional: true });
      expect(pkg.devDependencies[name]).toBe(table[name]);
      expect(pkg.dependencies[name]).toBeUndefined();
    }
  });
});
