import { setFlagsFromString } from 'node:v8';
import { UsageError } from './usage-error.js';

export const YOUNG_GENERATION_VARIABLE = 'GROUPWIRE_YOUNG_GENERATION';
/** V8's flag read each time the young generation would grow: 1 keeps it at its size at start. */
const GROWTH_FLAG = '--semi-space-growth-factor';
/** Flags by which the user sized the young generation for node themselves (theirs wins). */
const USER_FLAGS = ['--max-semi-space-size', '--max_semi_space_size', '--semi-space-growth-factor', '--semi_space_growth_factor', '--min-semi-space-size', '--min_semi_space_size'];

/**
 * Keeps V8's young generation at the size it starts with (two 1 MB semi-spaces on a 64-bit machine)
 * for `groupwire run` (#32 part 2), unless GROUPWIRE_YOUNG_GENERATION is `v8`. Node lets it grow to
 * 2 × 16 MB when a process allocates quickly, which a bridge relaying lines does, and gives it back
 * only when V8's memory reducer runs on an idle process, if it does: the bot's resident memory then
 * moved by some 30 MB between samples of the same state, more than anything it keeps grows by.
 * Short-lived objects (a line's parsing and rendering) still die young; what survives two
 * collections is promoted sooner, which the old generation's limit (heap-growth.ts) bounds.
 *
 * V8 reads the growth factor whenever it would grow the young generation, so setting it after the
 * start applies (the semi-space's maximum, by contrast, is fixed when node starts). A young generation
 * sized for node itself (`--max-semi-space-size`, also through NODE_OPTIONS) wins: nothing is set.
 * Answers whether the factor was set.
 */
export function keepYoungGenerationSmall(env: NodeJS.ProcessEnv = process.env, execArgv: readonly string[] = process.execArgv): boolean {
  const given = [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)];
  if (given.some((arg) => USER_FLAGS.some((flag) => arg.startsWith(flag)))) return false;
  if (youngGenerationMode(env[YOUNG_GENERATION_VARIABLE]) === 'v8') return false;
  setFlagsFromString(`${GROWTH_FLAG}=1`);
  return true;
}

/** What GROUPWIRE_YOUNG_GENERATION asks for: `small` (the default) or `v8` (node's own sizing); a clear error otherwise. */
export function youngGenerationMode(value: string | undefined): 'small' | 'v8' {
  const text = (value ?? '').trim();
  if (text === '' || text === 'small') return 'small';
  if (text === 'v8') return 'v8';
  throw new UsageError(`${YOUNG_GENERATION_VARIABLE}=${JSON.stringify(value)}: write small (the young generation stays at its size at start, the default) or v8 (node lets it grow to 32 MB)`);
}
