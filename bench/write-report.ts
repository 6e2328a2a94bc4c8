import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ratioChart } from './lib/chart.js';
import { ROOT, RESULTS_DIR } from './lib/paths.js';
import { formatCell, type BenchResult } from './lib/report.js';

/**
 * Writes the figures of bench/results/*.json into BENCHMARKS.md (between its two markers, so the
 * hand-written findings around them stay) and draws bench/results/chart.svg.
 */
const START = '<!-- figures:start (written by `npm run bench`; edit outside the markers) -->';
const END = '<!-- figures:end -->';
const ORDER = ['throughput', 'footprint', 'many-chats', 'relay-latency', 'irc-pacing', 'gateway-latency', 'gateway-platforms', 'gateway-files', 'mail-announce', 'workers', 'soak', 'overload', 'restart', 'install-size'];

const results = readdirSync(RESULTS_DIR)
  .filter((file) => file.endsWith('.json'))
  .map((file) => JSON.parse(readFileSync(join(RESULTS_DIR, file), 'utf8')) as BenchResult)
  .sort((a, b) => ORDER.indexOf(a.name) - ORDER.indexOf(b.name));

writeFileSync(join(RESULTS_DIR, 'chart.svg'), ratioChart(results));

function markdownTable(columns: string[], rows: Array<Array<string | number>>): string {
  return [
    `| ${columns.join(' | ')} |`,
    `|${columns.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.map((cell) => formatCell(cell)).join(' | ')} |`),
  ].join('\n');
}

const sections = results.map((result) => {
  const m = result.machine;
  return [
    `### ${result.title}`,
    '',
    `Taken ${result.taken.slice(0, 16).replace('T', ' ')} UTC on ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Linux ${m.kernel}, Node ${m.node}.`,
    '',
    markdownTable(result.table.columns, result.table.rows),
    '',
    ...result.figures.map((f) => `- **${f.label}**: ${formatCell(f.value)} ${f.unit} against ${f.baseline.label} ${formatCell(f.baseline.value)} ${f.unit}: ` +
      `**${f.ratio.toFixed(2)}×** ${f.ratioMeaning}${f.limit ? ` — ${f.limit.ok ? 'within' : '**past**'} the limit (${f.limit.text})` : ''}`),
    ...result.notes.map((note) => `- ${note}`),
  ].join('\n');
});

const figures = [START, '', '![groupwire against its baselines](bench/results/chart.svg)', '', ...sections.flatMap((s) => [s, '']), END].join('\n');
const path = join(ROOT, 'BENCHMARKS.md');
const current = existsSync(path) ? readFileSync(path, 'utf8') : `# Benchmarks\n\n${START}\n${END}\n`;
const from = current.indexOf(START);
const to = current.indexOf(END);
if (from < 0 || to < 0) throw new Error(`BENCHMARKS.md has lost its markers; put back ${START} and ${END}`);
writeFileSync(path, current.slice(0, from) + figures + current.slice(to + END.length));
process.stdout.write(`\nwrote BENCHMARKS.md and bench/results/chart.svg from ${results.length} results\n`);
