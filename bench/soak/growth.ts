import type { ProcessSample } from '../lib/process-probe.js';
import { totalBytes } from '../lib/process-probe.js';
import { spread } from '../lib/stats.js';
import { hopLatencies, type Hop, type Line } from './tally.js';

/** A sample with the number of counted lines said when it was taken. */
export interface Taken {
  sample: ProcessSample;
  said: number;
}

/** The figures of a sample whose growth the soak follows. */
export const GAUGES = {
  rss: { label: 'RSS', unit: 'MB', of: (s: ProcessSample) => s.rssMB },
  heap: { label: 'heap used', unit: 'MB', of: (s: ProcessSample) => s.heapUsedMB },
  fds: { label: 'open fds', unit: 'fds', of: (s: ProcessSample) => s.fds },
  state: { label: 'state dir', unit: 'KB', of: (s: ProcessSample) => totalBytes(s.stateFiles) / 1024 },
  transcripts: { label: 'transcripts', unit: 'KB', of: (s: ProcessSample) => totalBytes(s.transcriptFiles) / 1024 },
  lag: { label: 'event-loop lag p99', unit: 'ms', of: (s: ProcessSample) => s.lagP99Ms },
} as const;
export type Gauge = keyof typeof GAUGES;

/**
 * The least-squares slope of `value` against lines said, over the samples (NaN readings left out):
 * how much the figure grows per line. A steady bot grows its transcripts per line and nothing else.
 */
export function slopePerLine(taken: readonly Taken[], value: (s: ProcessSample) => number): number {
  const points = taken.map((t) => [t.said, value(t.sample)] as const).filter(([, y]) => Number.isFinite(y));
  if (points.length < 2) return Number.NaN;
  const mx = points.reduce((a, [x]) => a + x, 0) / points.length;
  const my = points.reduce((a, [, y]) => a + y, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}

/** The figure 10,000 lines after the baseline at the fitted slope, as a ratio to the baseline. */
export function per10kRatio(taken: readonly Taken[], gauge: Gauge): number {
  const of = GAUGES[gauge].of;
  const base = of(taken[0]!.sample);
  return (base + slopePerLine(taken, of) * 10_000) / base;
}

/** p50/p99 of a hop over the lines said with seq in (from, to], as "p50 / p99". */
export function hopCell(lines: readonly Line[], hop: Hop, from: number, to: number): string {
  const s = spread(hopLatencies(lines.filter((l) => l.seq > from && l.seq <= to), hop));
  return s.count === 0 ? '-' : `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)}`;
}

export function ratioCell(value: number, base: number): string {
  return Number.isFinite(value) && Number.isFinite(base) && base !== 0 ? `${(value / base).toFixed(2)}x` : '-';
}

/**
 * Each file of the state and transcript dirs: its size at the baseline and at the end, and its growth
 * per 10,000 lines said between them (KB), biggest growth first.
 */
export function fileGrowth(first: Taken, last: Taken): Array<{ file: string; firstKB: number; lastKB: number; per10kKB: number }> {
  const files = new Map<string, [number, number]>();
  const add = (prefix: string, sizes: ReadonlyMap<string, number>, at: 0 | 1) => {
    for (const [file, size] of sizes) {
      const pair = files.get(prefix + file) ?? [0, 0];
      pair[at] = size;
      files.set(prefix + file, pair);
    }
  };
  add('state/', first.sample.stateFiles, 0);
  add('transcripts/', first.sample.transcriptFiles, 0);
  add('state/', last.sample.stateFiles, 1);
  add('transcripts/', last.sample.transcriptFiles, 1);
  const lines = Math.max(1, last.said - first.said);
  return [...files].map(([file, [a, b]]) => ({ file, firstKB: a / 1024, lastKB: b / 1024, per10kKB: ((b - a) / 1024) * (10_000 / lines) }))
    .sort((x, y) => y.per10kKB - x.per10kKB || y.lastKB - x.lastKB);
}
