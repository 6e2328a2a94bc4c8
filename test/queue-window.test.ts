import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
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
});
