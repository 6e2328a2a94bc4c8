import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { RESULTS_DIR } from './paths.js';

/** The machine a figure was taken on: these machines are shared and noisy, so every result names it. */
export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  kernel: string;
  node: string;
}

export function machine(): Machine {
  const all = cpus();
  return {
    cpu: all[0]?.model.trim() ?? 'unknown',
    cores: all.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
  };
}

/**
 * One headline number of a bench, stated against a baseline measured in the same run. `ratio` is
 * groupwire's figure over the baseline's; `limit` is the bound the issue sets (a figure past it is poor).
 */
export interface Figure {
  label: string;
  value: number;
  unit: string;
  baseline: { label: string; value: number };
  ratio: number;
  /** How to read the ratio, e.g. "of the bare client's rate (higher is better)". */
  ratioMeaning: string;
  limit?: { text: string; ok: boolean };
}

export interface BenchResult {
  name: string;
  title: string;
  taken: string;
  machine: Machine;
  table: { columns: string[]; rows: Array<Array<string | number>> };
  figures: Figure[];
  notes: string[];
}

export function printTable(columns: string[], rows: Array<Array<string | number>>): string {
  const cells = [columns, ...rows.map((row) => row.map(formatCell))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => String(row[i] ?? '').length)));
  const line = (row: Array<string | number>) => row.map((cell, i) => String(cell).padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export function formatCell(value: string | number): string {
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  return Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 10 ? value.toFixed(1) : value.toFixed(2);
}

/** Prints the bench's table and figures, and writes bench/results/<name>.json. */
export function report(result: Omit<BenchResult, 'taken' | 'machine'>): BenchResult {
  const full: BenchResult = { ...result, taken: new Date().toISOString(), machine: machine() };
  const out = [
    `\n## ${full.title}`,
    printTable(full.table.columns, full.table.rows),
    '',
    ...full.figures.map((f) =>
      `${f.label}: ${formatCell(f.value)} ${f.unit} vs ${f.baseline.label} ${formatCell(f.baseline.value)} ${f.unit}` +
      ` -> ratio ${f.ratio.toFixed(2)} ${f.ratioMeaning}${f.limit ? ` [${f.limit.ok ? 'ok' : 'POOR'}: ${f.limit.text}]` : ''}`),
    ...full.notes.map((n) => `note: ${n}`),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, `${full.name}.json`), `${JSON.stringify(full, null, 2)}\n`);
  return full;
}
