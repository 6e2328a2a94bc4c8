import type yauzl from 'yauzl';
import { ARCHIVE_PACKAGES, describeUnmet, unmetPackages } from '../config/optional-packages.js';

/**
 * yauzl, which reads zip archives: an optional package (src/config/optional-packages.ts), loaded only
 * when an archive is read. Missing, or of another major, it is refused in one line with the command that
 * installs it (`reading an archive needs yauzl@^3.4.0: npm install yauzl@3`), before anything of it is
 * loaded. `fromDir`: where groupwire's code is (tests give a project folder of their own).
 */
export async function loadYauzl(fromDir?: string): Promise<typeof yauzl> {
  const unmet = unmetPackages(ARCHIVE_PACKAGES, fromDir);
  if (unmet.length > 0) throw new Error(describeUnmet('reading an archive', ARCHIVE_PACKAGES, unmet, fromDir));
  return (await import('yauzl')).default;
}
