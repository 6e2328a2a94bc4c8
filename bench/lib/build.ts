import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './paths.js';

/**
 * The benches measure groupwire as the package runs it: from a tsc build (dist/ is what `npm start`
 * and the `groupwire` command run). Through tsx every closure would be wrapped by esbuild's keepNames
 * (a `name` property set per closure made): some 4 KB more per chat, and about 2.5 µs a message in
 * the throughput bench, costs the package does not have.
 */
export const BUILD = join(ROOT, 'dist', 'bench-build');

let built = false;

/** Builds src/ and plugins/ into BUILD (incrementally: the second bench of a run finds it made). */
export function buildOnce(): void {
  if (built) return;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const made = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', BUILD, '--incremental', 'true',
    '--tsBuildInfoFile', join(BUILD, '.tsbuildinfo'), '--declaration', 'false', '--sourceMap', 'false'], { cwd: ROOT, stdio: 'inherit' });
  if (made.status !== 0) throw new Error(`tsc failed (${made.status ?? made.signal})`);
  built = true;
}

/** Imports a module of the build by its path in the repository, e.g. 'src/supervisor/supervisor.js'. */
export function importBuilt<T>(path: string, build = BUILD): Promise<T> {
  return import(pathToFileURL(join(build, path)).href) as Promise<T>;
}
