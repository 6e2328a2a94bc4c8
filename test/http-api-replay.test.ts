import { describe, expect, test } from 'vitest';
import { SeenSignatures } from '../plugins/http-api/replay.js';

/** http-api: the memory of signatures seen within the window (plugins/http-api/replay.ts), on its own clock. */

describe('http-api: seen signatures (#31 item 6)', () => {
  test('the seen signatures are kept for the window, at most a cap of them: past it new signed requests are refused (503), none forgotten', () => {
    let t = 1_000_000_000_000;
    const seen = new SeenSignatures(3, 120);
    expect(seen.admit('a', 1_000_000_000, t)).toBe('new');
    expect(seen.admit('a', 1_000_000_000, t)).toBe('seen');
    expect(seen.admit('b', 1_000_000_001, t)).toBe('new');
    expect(seen.admit('c', 999_999_990, t)).toBe('new');
    expect(seen.admit('d', 1_000_000_000, t)).toBe('full');
    expect(seen.admit('a', 1_000_000_000, t)).toBe('seen');
    expect(seen.size).toBe(3);
    // c's timestamp leaves the window first: its room is free again, and a and b are still known.
    t += 121_000 - 10_000;
    expect(seen.admit('d', 1_000_000_100, t)).toBe('new');
    expect(seen.admit('a', 1_000_000_000, t)).toBe('seen');
    expect(seen.admit('b', 1_000_000_001, t)).toBe('seen');
    t += 60_000;
    expect(seen.admit('e', 1_000_000_170, t)).toBe('new');
    expect(seen.size).toBe(2);
  });
});
