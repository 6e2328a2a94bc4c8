import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * The path of a program the tests run (a server, a checker), or one line saying which Debian package
 * to install (the packages are listed in README.md "Development" and installed by .ci/run): a test run
 * on a machine without it fails with that line, not with "spawn ... ENOENT" or a server that never
 * answers. `command` is an absolute path, or a name looked up in PATH.
 */
export function requireTool(command: string, debianPackage: string): string {
  const candidates = isAbsolute(command)
    ? [command]
    : (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '').map((dir) => join(dir, command));
  for (const path of candidates) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Not here: the next directory of PATH.
    }
  }
  throw new Error(`${command} not found: apt-get install ${debianPackage}`);
}
