import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { keepYoungGenerationSmall, youngGenerationMode } from '../src/cli/young-generation.js';

const MODULE = fileURLToPath(new URL('../src/cli/young-generation.ts', import.meta.url));

/**
 * A child that turns over short-lived objects with some survivors (as a bridge relaying lines does),
 * after keepYoungGenerationSmall() with `env`: the largest young generation V8 gave it, in MB.
 */
function largestYoungGeneration(env: Record<string, string>): { set: boolean; youngMB: number } {
  const script = `
    const { getHeapSpaceStatistics } = await import('node:v8');
    const { keepYoungGenerationSmall } = await import(${JSON.stringify(MODULE)});
    const set = keepYoungGenerationSmall(${JSON.stringify(env)}, []);
    const kept = [];
    let recent = [];
    let largest = 0;
    for (let i = 0; i < 1_500_000; i += 1) {
      recent.push({ text: 'line ' + i, n: [i] });
      if (recent.length > 20_000) recent = [];
      if (i % 100 === 0) kept.push({ i, text: 'kept ' + i });
      if (i % 10_000 === 0) largest = Math.max(largest, getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
    }
    process.stdout.write(JSON.stringify({ set, youngMB: largest / 1048576, kept: kept.length }));
  `;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`the child failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as { set: boolean; youngMB: number };
}

describe('the young generation of groupwire run (#32 part 2)', () => {
  it('stays at the size it has when set (2 to 4 MB), where node lets it grow to 32 MB', () => {
    const small = largestYoungGeneration({});
    expect(small.set).toBe(true);
    // 2 MB at node's start; loading tsx in the child before the call may have grown it once.
    expect(small.youngMB).toBeLessThanOrEqual(4);
    const v8 = largestYoungGeneration({ GROUPWIRE_YOUNG_GENERATION: 'v8' });
    expect(v8.set).toBe(false);
    expect(v8.youngMB).toBeGreaterThanOrEqual(16);
  }, 60_000);

  it('reads GROUPWIRE_YOUNG_GENERATION, and a size given to node itself wins', () => {
    expect(youngGenerationMode(undefined)).toBe('small');
    expect(youngGenerationMode(' small ')).toBe('small');
    expect(youngGenerationMode('v8')).toBe('v8');
    expect(() => youngGenerationMode('tiny')).toThrow(/GROUPWIRE_YOUNG_GENERATION="tiny": write small .* or v8/);
    expect(keepYoungGenerationSmall({}, ['--max-semi-space-size=8'])).toBe(false);
    expect(keepYoungGenerationSmall({ NODE_OPTIONS: '--max-old-space-size=512 --max-semi-space-size=4' }, [])).toBe(false);
  });
});
