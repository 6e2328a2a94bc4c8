import { readFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Fastify from 'fastify';

// Issue 13 item 15: `npm install` on Node 20 warned `EBADENGINE cookie@2 requires node >= 22`
// (fastify -> light-my-request 6.8 -> cookie 2). package.json's `overrides` pins light-my-request to
// 6.6.0 (cookie ^1, Node >= 18). These tests fail when any installed package again declares an
// `engines.node` that excludes the running Node or the oldest Node the README names. Overrides apply
// only to this checkout's install: for a project that installs groupwire, light-my-request 6.6.0 is
// also a direct dependency, which npm places first and fastify's ^6.0.0 then takes (#37).

const root = join(import.meta.dirname, '..');

// semver is already installed (fastify depends on it) and is what npm itself uses for this check.
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string, options?: { includePrerelease?: boolean }): boolean;
  minVersion(range: string): { version: string } | null;
};

interface LockPackage { engines?: { node?: string } | string[]; optional?: boolean }

/** Every package of the lockfile that is installed, with the `engines.node` of its installed package.json. */
function installedEngines(): { name: string; version: string; node: string }[] {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockPackage> };
  const found: { name: string; version: string; node: string }[] = [];
  for (const path of Object.keys(lock.packages)) {
    if (!path.startsWith('node_modules/')) continue; // '' is the project itself
    const manifestPath = join(root, path, 'package.json');
    // Optional packages for other platforms (esbuild's binaries) are in the lockfile but not installed.
    if (!existsSync(manifestPath)) continue;
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { name: string; version: string; engines?: { node?: unknown } };
    const node = manifest.engines?.node;
    if (typeof node === 'string') found.push({ name: manifest.name, version: manifest.version, node });
  }
  return found;
}

function excluding(nodeVersion: string): string[] {
  return installedEngines()
    .filter(({ node }) => !semver.satisfies(nodeVersion, node, { includePrerelease: true }))
    .map(({ name, version, node }) => `${name}@${version} requires node ${node}`);
}

describe('installed packages and the Node versions we support', () => {
  it('reads a real set of engines (the walk finds the installed packages)', () => {
    const names = installedEngines().map(({ name }) => name);
    expect(names).toEqual(expect.arrayContaining(['undici', 'ws', 'vitest']));
    expect(names.length).toBeGreaterThan(20);
  });

  it('no installed package excludes the running Node', () => {
    expect(excluding(process.version)).toEqual([]);
  });

  it('no installed package excludes the oldest Node package.json (and the README) names', () => {
    const ours = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    const oldest = semver.minVersion(ours)?.version;
    expect(oldest).toBe('20.19.0');
    expect(excluding(oldest!)).toEqual([]);
  });

  it('fastify.inject works with the overridden light-my-request', async () => {
    // The one fastify loads (nested under it, or beside it: a direct dependency since #37, so that a
    // project installing groupwire, where our overrides do not apply, gets it too).
    const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
    const installed = JSON.parse(readFileSync(fromFastify.resolve('light-my-request/package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe('6.6.0');
    const app = Fastify();
    app.get('/hello', (request) => ({ cookie: request.headers.cookie ?? null }));
    try {
      const reply = await app.inject({ method: 'GET', url: '/hello', cookies: { a: 'b' } });
      expect(reply.statusCode).toBe(200);
      expect(reply.json()).toEqual({ cookie: 'a=b' });
    } finally {
      await app.close();
    }
  });
});
