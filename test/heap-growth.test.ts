import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_HEAP_GROWTH_PERCENT, heapGrowthPercent, limitHeapGrowth } from '../src/cli/heap-growth.js';

const MODULE = fileURLToPath(new URL('../src/cli/heap-growth.ts', import.meta.url));

/**
 * A process that keeps some 30 MB live and turns over a few hundred MB of short-lived objects (as a
 * bridge relaying lines does), after `limitHeapGrowth()` with `env`: the largest heap V8 gave it
 * (heapTotal, read every 20 rounds) and what was live at the end (after a full collection), in MB.
 */
function churn(env: Record<string, string>): { peakHeapMB: number; liveMB: number; percent: number | null } {
  const script = `
    const { limitHeapGrowth } = await import(${JSON.stringify(MODULE)});
    const percent = limitHeapGrowth(${JSON.stringify(env)}, []) ?? null;
    const live = [];
    for (let i = 0; i < 120_000; i += 1) live.push({ text: 'x'.repeat(150) + i, copies: { a: String(i), b: [i] } });
    let recent = [];
    let peak = 0;
    for (let round = 0; round < 1000; round += 1) {
      for (let i = 0; i < 2000; i += 1) recent.push({ text: 'y'.repeat(60) + i, n: [i, round] });
      if (recent.length > 20_000) recent = recent.slice(10_000);
      if (round % 20 === 0) peak = Math.max(peak, process.memoryUsage().heapTotal);
    }
    globalThis.gc();
    const liveBytes = process.memoryUsage().heapUsed;
    process.stdout.write(JSON.stringify({ peakHeapMB: peak / 1048576, liveMB: liveBytes / 1048576, percent, kept: live.length + recent.length }));
  `;
  const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`the child failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as { peakHeapMB: number; liveMB: number; percent: number | null };
}

describe('the heap growth limit of groupwire run (#32 part 2)', () => {
  it('keeps the heap V8 holds within 1 + the percent of what is live, plus V8\'s steps', () => {
    const limited = churn({});
    expect(limited.percent).toBe(DEFAULT_HEAP_GROWTH_PERCENT);
    // 1.2x live, with V8's minimum growing step and the young generation (up to 32 MB) on top: about 2.3x live here;
    // V8's own rule reaches about 4.8x live in the same child (4x, plus the young generation).
    expect(limited.peakHeapMB).toBeLessThan(limited.liveMB * 3);
  }, 30_000);

  it('reads GROUPWIRE_HEAP_GROWTH: a percent, v8 for V8\'s own rule, a clear error otherwise', () => {
    expect(heapGrowthPercent(undefined)).toBe(DEFAULT_HEAP_GROWTH_PERCENT);
    expect(heapGrowthPercent(' 20 ')).toBe(20);
    expect(heapGrowthPercent('v8')).toBeUndefined();
    for (const bad of ['0', '301', '1.5', '-3', 'lots']) expect(() => heapGrowthPercent(bad)).toThrow(/GROUPWIRE_HEAP_GROWTH=.*a whole percent from 1 to 300/);
    // node's own --heap-growing-percent wins: nothing is set.
    expect(limitHeapGrowth({ GROUPWIRE_HEAP_GROWTH: '20' }, ['--heap-growing-percent=80'])).toBeUndefined();
  });
});
