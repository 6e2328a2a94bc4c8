import { describe, expect, it } from 'vitest';
import { HashSlots } from '../src/store/hash-slots.js';
import { seededRandom } from './helpers/chaos.js';

/** #32 part 2: the message map's cold lookups, a multimap of 30-bit hashes to record numbers in typed arrays. */

describe('HashSlots', () => {
  it('answers as a Map of sets through 80,000 random adds and deletes, hashes shared and slots crowded', () => {
    const slots = new HashSlots(500);
    const model = new Map<number, Set<number>>();
    const next = seededRandom(11);
    // Hashes from a small range and next to each other (long probe runs), some at the table's end.
    const hashOf = () => (next() < 0.1 ? 2 ** 30 - 1 - Math.floor(next() * 4) : Math.floor(next() * 300) * 1024 + Math.floor(next() * 3));
    for (let step = 0; step < 80_000; step += 1) {
      const hash = hashOf();
      const number = Math.floor(next() * 40);
      if (next() < 0.55) {
        slots.add(hash, number);
        model.set(hash, (model.get(hash) ?? new Set()).add(number));
      } else {
        slots.delete(hash, number);
        model.get(hash)?.delete(number);
      }
      if (step % 2_000 === 0) {
        for (const [known, numbers] of model) expect(slots.get(known)).toStrictEqual([...numbers].sort((a, b) => b - a));
      }
    }
    expect(slots.size).toBe([...model.values()].reduce((sum, numbers) => sum + numbers.size, 0));
    expect(slots.get(12345)).toStrictEqual([]);
  });

  it('keeps numbers past 2^31 exactly (a long-running map numbers its records on and on)', () => {
    const slots = new HashSlots(10);
    const big = 2 ** 40 + 7;
    slots.add(5, big);
    slots.add(5, 2 ** 31 + 1);
    expect(slots.get(5)).toStrictEqual([big, 2 ** 31 + 1]);
    expect(slots.has(5, big)).toBe(true);
    slots.delete(5, big);
    expect(slots.get(5)).toStrictEqual([2 ** 31 + 1]);
  });

  it('is made once for what it expects: the same table at 10 entries as at 80,000', () => {
    const slots = new HashSlots(80_000);
    const made = slots.slots;
    for (let n = 0; n < 80_000; n += 1) slots.add((n * 2654435761) % 2 ** 30, n);
    expect(slots.slots).toBe(made);
    expect(slots.get((79_999 * 2654435761) % 2 ** 30)).toContain(79_999);
    for (let n = 80_000; n < 200_000; n += 1) slots.add((n * 2654435761) % 2 ** 30, n);
    expect(slots.slots).toBeGreaterThan(made);
    expect(slots.get((7 * 2654435761) % 2 ** 30)).toContain(7);
  });
});
