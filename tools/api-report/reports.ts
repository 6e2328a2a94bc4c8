import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliReport } from './cli-report.js';
import { configSchemaReport } from './config-schema-report.js';
import { exportsReport, sourceProgram } from './exports-report.js';
import { metricsReport } from './metrics-report.js';
import { unifiedDiff } from './unified-diff.js';

/** The command that rewrites the reports; a failing check names it. */
export const UPDATE_COMMAND = 'npm run api:update';

/**
 * The checked-in reports of the public API (api/): what a user of the package can depend on. A
 * change to any of them is a change of the public API, and a version per CHANGELOG.md's policy.
 */
export async function generateReports(root: string): Promise<Map<string, string>> {
  const program = sourceProgram(root);
  // The exports first: the checker's first look at the inferred types is the declaration emit's.
  const exports = exportsReport(root, program);
  return new Map([
    ['api/groupwire.api.md', exports],
    ['api/cli.md', cliReport(root, program)],
    ['api/bots-yaml.schema.json', await configSchemaReport()],
    ['api/metrics.txt', await metricsReport()],
  ]);
}

/** Each report that differs from its checked-in file, with a unified diff of the change. */
export async function reportChanges(root: string, reports: Map<string, string>): Promise<Array<{ file: string; diff: string }>> {
  const changes: Array<{ file: string; diff: string }> = [];
  for (const [file, text] of reports) {
    const checkedIn = await readFile(join(root, file), 'utf8').catch(() => '');
    if (checkedIn !== text) changes.push({ file, diff: unifiedDiff(checkedIn, text, file) });
  }
  return changes;
}
