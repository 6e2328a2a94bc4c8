import { setFlagsFromString } from 'node:v8';
import { UsageError } from './usage-error.js';

/**
 * How far past the live heap V8 may let the old generation grow before its next full collection, in
 * percent, for `groupwire run` (#32 part 2). V8's own rule lets it grow up to 4 times what survived
 * the last full collection when the process allocates quickly and collects quickly, which a bridge
 * relaying lines does: in the soak a bot with some 50 MB live held 230 MB of heap (RSS 80 → 300 MB
 * over 60,000 lines) though nothing it kept had grown. At 20% the heap stays within 1.2 times the live
 * size (plus V8's minimum step), for a few more incremental collections, done off the main thread's
 * critical path for the most part. (It was 50% until the soak's RSS after 100,000 lines had to stay
 * within 1.1 times its RSS after 10,000: at 50% the heap's slack alone grew by half of what the live
 * heap grew; the same soak at 20% took the same CPU time a line.)
 */
export const DEFAULT_HEAP_GROWTH_PERCENT = 20;
export const HEAP_GROWTH_VARIABLE = 'GROUPWIRE_HEAP_GROWTH';
const V8_FLAG = '--heap-growing-percent';

/**
 * Sets V8's heap growing factor for this process from GROUPWIRE_HEAP_GROWTH (a whole percent, 1-300;
 * `v8` leaves V8's own rule), DEFAULT_HEAP_GROWTH_PERCENT when unset. A `--heap-growing-percent`
 * given to node itself wins. Answers the percent set, or undefined when V8's own rule is kept.
 * Call it before the bots start: V8 reads the flag at each full collection, so it applies from the
 * next one on.
 */
export function limitHeapGrowth(env: NodeJS.ProcessEnv = process.env, execArgv: readonly string[] = process.execArgv): number | undefined {
  if (execArgv.some((arg) => arg.startsWith(V8_FLAG) || arg.startsWith('--heap_growing_percent'))) return undefined;
  const percent = heapGrowthPercent(env[HEAP_GROWTH_VARIABLE]);
  if (percent !== undefined) setFlagsFromString(`${V8_FLAG}=${percent}`);
  return percent;
}

/** The percent GROUPWIRE_HEAP_GROWTH asks for (undefined: V8's own rule); a clear error for anything else. */
export function heapGrowthPercent(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return DEFAULT_HEAP_GROWTH_PERCENT;
  const text = value.trim();
  if (text === 'v8') return undefined;
  const percent = Number(text);
  if (!/^\d+$/.test(text) || percent < 1 || percent > 300) {
    throw new UsageError(`${HEAP_GROWTH_VARIABLE}=${JSON.stringify(value)}: write a whole percent from 1 to 300 (how far the heap may grow past what is live before a full collection; default ${DEFAULT_HEAP_GROWTH_PERCENT}), or v8 for V8's own rule`);
  }
  return percent;
}
