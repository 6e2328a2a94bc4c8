import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateReports, reportChanges, UPDATE_COMMAND } from './reports.js';

/**
 * `npm run api:update` rewrites the reports of the public API (api/) from the code; with `--check` it
 * writes nothing and exits 1 when one differs, printing the diff (what test/api-report.test.ts does).
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const check = process.argv.includes('--check');
const reports = await generateReports(root);
const changes = await reportChanges(root, reports);
for (const { file, diff } of changes) {
  if (check) {
    process.stdout.write(`${diff}\n`);
  } else {
    await mkdir(dirname(join(root, file)), { recursive: true });
    await writeFile(join(root, file), reports.get(file)!);
    process.stdout.write(`updated ${file}\n`);
  }
}
if (changes.length === 0) process.stdout.write('the API reports are up to date\n');
else if (check) {
  process.stdout.write(`\nThe public API changed: ${changes.map((c) => c.file).join(', ')}. If that is meant, run ${UPDATE_COMMAND} and commit the reports (and say it in CHANGELOG.md).\n`);
  process.exitCode = 1;
}
