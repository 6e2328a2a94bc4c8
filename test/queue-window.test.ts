import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { DEFAULT_WINDOW, DurableQueue } from '../src/store/durable-queue.js';

/**
 * #32 part 3 "memory stays bounded whatever the backlog", for a relay's queue in files: with 50,000
 * items of 1 KB waiting, at most the window of them is held in memory (counted by the queue's
 * `inMemory`), the rest is read back from the journal as the head drains, in order, nothing lost or
 * doubled, across a compaction and a reopen in the middle of the drain.
 */
interface Item {
  n: number;
  key: string;
  text: string;
}

const item = (n: number): Item => ({ n, key: `k${n}`, text: `<carol> line ${n} ${'x'.repeat(1000)}` });
const BACKLOG = 50_000;

describe('a DurableQueue in files with 50,000 items of 1 KB waiting', () => {
  const dir = mkdtempSync(join(tmpdir(), 'queue-window-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('holds at most its window in memory, and drains in order across a compaction and a reopen', () => {
    const path = join(dir, 'to-irc.json');
    const open = () => DurableQueue.open<Item>(path, { maxItems: 60_000, keyOf: (line) => line.key, now: () => 1_700_000_000_000 });
    let queue = open();
    for (let n = 0; n < BACKLOG; n += 1) queue.push(item(n));
    expect(queue.size).toBe(BACKLOG);
    expect(queue.inMemory).toBeLessThanOrEqual(DEFAULT_WINDOW);
    // Look-ups stay exact for items on disk only.
    expect(queue.hasKey('k0') && queue.hasKey('k49999') && !queue.hasKey('k50000')).toBe(true);
    expect(queue.last()?.n).toBe(BACKLOG - 1);
    expect(queue.backlog).toMatchObject({ depth: BACKLOG, oldestAt: 1_700_000_000_000 });
    // A look past the window reads the journal.
    expect(queue.head(DEFAULT_WINDOW + 200).map((line) => line.n)).toEqual(Array.from({ length: DEFAULT_WINDOW + 200 }, (_, n) => n));

    const drained: number[] = [];
    let most = queue.inMemory;
    let shrank = 0;
    let size = statSync(path).size;
    // Shifts of 1 to more than the window (read back from the journal before they go).
    const steps = [1, 7, 250, 1, 600, DEFAULT_WINDOW + 500, 3];
    let step = 0;
    let reopened = false;
    let pushedMore = false;
    while (queue.size > 0) {
      for (const line of queue.shift(steps[step % steps.length])) drained.push(line.n);
      step += 1;
      most = Math.max(most, queue.inMemory);
      const now = statSync(path).size;
      if (now < size) shrank += 1;
      size = now;
      if (!pushedMore && drained.length >= 10_000) {
        // Pushed behind 40,000 on disk: they wait on disk too.
        for (let n = BACKLOG; n < BACKLOG + 1000; n += 1) queue.push(item(n));
        pushedMore = true;
      }
      if (!reopened && drained.length >= 25_000) {
        expect(shrank).toBeGreaterThan(0);
        queue = open();
        reopened = true;
        expect(queue.size).toBe(BACKLOG + 1000 - drained.length);
        expect(queue.hasKey(`k${BACKLOG + 999}`) && !queue.hasKey(`k${drained.at(-1)}`)).toBe(true);
        most = Math.max(most, queue.inMemory);
      }
    }
    expect(reopened && pushedMore).toBe(true);
    expect(most).toBeLessThanOrEqual(DEFAULT_WINDOW);
    expect(drained).toEqual(Array.from({ length: BACKLOG + 1000 }, (_, n) => n));
    expect(queue.hasKey('k50999')).toBe(false);
    // Emptied, the journal reopens empty.
    expect(open().size).toBe(0);
    expect(readFileSync(path, 'utf8')).toBe('');
  });

  test('a small window: pushes of several items across its edge, looks past it, a note, a torn last line, compactions', () => {
    const path = join(dir, 'small.json');
    const open = () => DurableQueue.open<number>(path, { window: 4, keyOf: (n) => String(n) });
    const queue = open();
    queue.push(0, 1, 2);
    // Two of these fit in the window, the rest wait on disk from the middle of the line.
    queue.push(3, 4, 5, 6, 7);
    queue.push(8, 9);
    expect([queue.size, queue.inMemory]).toEqual([10, 4]);
    expect([...queue.values()]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(queue.all()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(queue.range(3, 4)).toEqual([3, 4, 5, 6]);
    expect(queue.last()).toBe(9);
    expect(queue.shift(1, { sent: 0 })).toEqual([0]);
    expect(queue.inMemory).toBe(3);
    // Fewer than half the window: the next batch is read.
    expect(queue.shift(2)).toEqual([1, 2]);
    expect([queue.inMemory, queue.peek()]).toEqual([4, 3]);
    appendFileSync(path, '{"push":[10');
    const reopened = open();
    expect([reopened.size, reopened.inMemory, reopened.note]).toEqual([7, 4, { sent: 0 }]);
    expect([reopened.hasKey('2'), reopened.hasKey('3'), reopened.hasKey('9'), reopened.hasKey('10')]).toEqual([false, true, true, false]);
    expect(reopened.shift(6)).toEqual([3, 4, 5, 6, 7, 8]);
    // Enough changes for the journal to be rewritten (1,000 lines at least) with items on disk.
    for (let n = 10; n < 1500; n += 1) {
      reopened.push(n);
      if (n % 3 === 0) reopened.shift(1);
    }
    const left = [...reopened.values()];
    expect(left).toEqual(Array.from({ length: 1500 - left[0]! }, (_, n) => left[0]! + n));
    expect(readFileSync(path, 'utf8').split('\n').length).toBeLessThan(1500);
    expect(open().all()).toEqual(left);
    expect(open().note).toEqual({ sent: 0 });
  });
});
