import { createHash } from 'node:crypto';

/** What a worker should do now to reach its fair share: units to take (free ones), and units to hand over. */
export interface BalanceMoves {
  target: number;
  acquire: string[];
  handOver: string[];
}

/** How many units a worker hands over in one tick: a join moves units gradually, never all at once. */
export const HANDOVER_PER_TICK = 2;

/** Rendezvous (highest random weight) score: the same worker prefers the same units every time. */
export function preference(unit: string, worker: string): number {
  return createHash('sha1').update(`${unit}\u0000${worker}`).digest().readUInt32BE(0);
}

/**
 * Each worker's fair share: floor(N/W), one more for the first N mod W workers in sorted order, so
 * every worker computes the same targets from the same list. A worker under its target takes free
 * units (most preferred first); one over it hands over its least preferred ones, a few a tick.
 */
export function balance(options: {
  units: readonly string[];
  workers: readonly string[];
  self: string;
  held: ReadonlySet<string>;
  /** unit → the worker holding it (absent: free). */
  holders: ReadonlyMap<string, string>;
}): BalanceMoves {
  const { units, self, held, holders } = options;
  const workers = [...new Set([...options.workers, self])].sort();
  const index = workers.indexOf(self);
  const base = Math.floor(units.length / workers.length);
  const target = base + (index < units.length % workers.length ? 1 : 0);
  const known = new Set(units);
  const mine = [...held].filter((unit) => known.has(unit));
  const byPreference = (list: string[]) => list.sort((a, b) => preference(b, self) - preference(a, self));
  if (mine.length > target) {
    return { target, acquire: [], handOver: byPreference(mine).slice(target).slice(-HANDOVER_PER_TICK) };
  }
  const free = units.filter((unit) => !held.has(unit) && !holders.has(unit));
  return { target, acquire: byPreference(free).slice(0, target - mine.length), handOver: [] };
}
