import { describe, expect, test } from 'vitest';
import { withoutResentAfterKills } from './helpers/chaos.js';

/** The chaos suite's own judge of IRC repeats: only the documented one passes, everything else stays for the exact check. */
describe('chaos: what the IRC watcher saw across a kill of the server', () => {
  test('the first lines of a new connection that repeat the end of the last one (at most in_flight) count once', () => {
    expect(withoutResentAfterKills([['a', 'b', 'c'], ['b', 'c', 'd']], 5)).toEqual({ lines: ['a', 'b', 'c', 'd'], resent: 2 });
    expect(withoutResentAfterKills([['a', 'b', 'c'], ['d', 'e']], 5)).toEqual({ lines: ['a', 'b', 'c', 'd', 'e'], resent: 0 });
    expect(withoutResentAfterKills([['a', 'b'], ['b', 'c'], ['c', 'd']], 5)).toEqual({ lines: ['a', 'b', 'c', 'd'], resent: 2 });
  });

  test('a repeat elsewhere, or further back than in_flight, is kept for the comparison to find', () => {
    // In the middle of a connection: not a resend.
    expect(withoutResentAfterKills([['a', 'b', 'b', 'c']], 5).lines).toEqual(['a', 'b', 'b', 'c']);
    // A line from long before the kill, repeated after it: more than in_flight back.
    expect(withoutResentAfterKills([['a', 'b', 'c', 'd'], ['a', 'e']], 2).lines).toEqual(['a', 'b', 'c', 'd', 'a', 'e']);
    // Resent lines come in their order: a reordered repeat is kept.
    expect(withoutResentAfterKills([['a', 'b', 'c'], ['c', 'b', 'd']], 5).lines).toEqual(['a', 'b', 'c', 'b', 'd']);
  });
});
