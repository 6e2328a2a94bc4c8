import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root folder. */
export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const RESULTS_DIR = resolve(ROOT, 'bench/results');
