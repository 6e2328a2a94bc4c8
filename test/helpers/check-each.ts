import { readFileSync, writeFileSync } from 'node:fs';
import { checkCommand } from '../../src/cli/run-command.js';
import { ConfigError } from '../../src/config/yaml-source.js';
import { readSeedFile } from '../../src/service/seed.js';

/**
 * `groupwire check` (its command, checkCommand) on many files in one process, as the CLI runs it
 * (`node --import tsx`): one process instead of one per docs example keeps the docs' test to a second
 * or two. `node --import tsx check-each.ts JOBS.json RESULTS.json`; each job names a file, its kind and
 * the environment variables it needs.
 */

interface Job {
  file: string;
  kind: 'check' | 'seed';
  env: Record<string, string>;
}

export interface JobResult {
  file: string;
  ok: boolean;
  /** What check printed, or what it refused. */
  said: string;
}

const [jobsFile, resultsFile] = process.argv.slice(2);
const jobs = JSON.parse(readFileSync(jobsFile!, 'utf8')) as Job[];
const results: JobResult[] = [];
const write = process.stdout.write.bind(process.stdout);
for (const job of jobs) {
  const printed: string[] = [];
  process.stdout.write = ((chunk: string | Uint8Array) => {
    printed.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  Object.assign(process.env, job.env);
  try {
    if (job.kind === 'seed') await readSeedFile(job.file);
    else if ((await checkCommand([job.file])) !== 0) throw new Error('check did not exit 0');
    results.push({ file: job.file, ok: true, said: printed.join('') });
  } catch (error) {
    const said = error instanceof ConfigError ? error.problems.join('\n') : String((error as Error).message ?? error);
    results.push({ file: job.file, ok: false, said });
  } finally {
    process.stdout.write = write;
    for (const name of Object.keys(job.env)) delete process.env[name];
  }
}
writeFileSync(resultsFile!, JSON.stringify(results));
