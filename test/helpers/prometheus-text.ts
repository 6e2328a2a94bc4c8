import { spawnSync } from 'node:child_process';
import { requireTool } from './require-tool.js';

/** One sample of a scrape: the full name (with `_bucket`, `_sum`, ... suffixes), its labels and value. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Checks an exposition with Prometheus's own parser (`promtool check metrics`, Debian's prometheus
 * package): a parse error fails. Lint remarks are returned (promtool exits 3 for them).
 */
export function promtoolCheck(text: string): string[] {
  const run = spawnSync(requireTool('promtool', 'prometheus'), ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (run.error) throw new Error(`promtool could not run: ${run.error.message}`);
  const said = `${run.stdout}${run.stderr}`.trim();
  if (run.status !== 0 && run.status !== 3) throw new Error(`promtool refused the exposition (exit ${run.status}): ${said}`);
  return said === '' ? [] : said.split('\n');
}

/** Reads the samples of an exposition (already checked by promtoolCheck). */
export function samples(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    const raw = match[3]!;
    out.push({ name: match[1]!, labels, value: raw === '+Inf' ? Number.POSITIVE_INFINITY : raw === '-Inf' ? Number.NEGATIVE_INFINITY : Number(raw) });
  }
  return out;
}
