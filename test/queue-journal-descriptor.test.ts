import { mkdtempSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, test, vi } from 'vitest';
import { DurableQueue } from '../src/store/durable-queue.js';

/**
 * #32 part 1: a relay's queue in files appends a line before each line it sends. The journal's
 * descriptor is kept open while appends come (no open and close per line), counted as the process's
 * descriptors naming the journal (/proc/self/fd): one across many appends, on the current file across
 * the journal's rewrites, none after the queue's close() or a second without an append (a queue its owner
 * never closes keeps none for long). What a reopen reads is what was appended, and the file stays 0600.
 */

const dir = mkdtempSync(join(tmpdir(), 'queue-fd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.useRealTimers());

/** The descriptors of this process open on `path` (its current file, not one replaced by a rewrite). */
function descriptorsOn(path: string): string[] {
  const found: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === path) found.push(fd);
    } catch {
      // closed meanwhile (the directory's own descriptor)
    }
  }
  return found;
}

describe('a queue journal\'s descriptor', () => {
  test('one descriptor serves every append and follows the rewrites; close() lets it go', () => {
    const path = join(dir, 'to-irc.json');
    const queue = DurableQueue.open<{ n: number }>(path, { maxItems: 10_000 });
    queue.push({ n: 0 });
    const first = descriptorsOn(path);
    expect(first).toHaveLength(1);
    const inode = statSync(path).ino;
    // Enough pushes and shifts for rewrites (by rename) of the journal, the descriptor looked at meanwhile.
    const open: number[] = [];
    for (let n = 1; n < 3000; n += 1) {
      queue.push({ n });
      // Looked at after an append (a rewrite, which a push may start, lets it go until the next append).
      if (n % 100 === 0) open.push(descriptorsOn(path).length);
      if (n % 3 !== 0) queue.shift();
    }
    expect(statSync(path).ino).not.toBe(inode);
    expect(Math.max(...open)).toBe(1);
    expect(open.filter((count) => count === 1).length).toBeGreaterThan(open.length / 2);
    expect((statSync(path).mode & 0o777).toString(8)).toBe('600');
    queue.close();
    expect(descriptorsOn(path)).toEqual([]);
    // A change after close() opens it again; a reopen reads every change.
    queue.shift();
    expect(descriptorsOn(path)).toHaveLength(1);
    queue.close();
    const again = DurableQueue.open<{ n: number }>(path, { maxItems: 10_000 });
    expect(again.size).toBe(queue.size);
    expect(again.peek()).toEqual(queue.peek());
    again.close();
  });

  test('a queue never closed lets its descriptor go a second or two after its last append', () => {
    vi.useFakeTimers();
    const path = join(dir, 'left-open.json');
    const queue = DurableQueue.open<{ n: number }>(path);
    queue.push({ n: 1 });
    vi.advanceTimersByTime(900);
    queue.push({ n: 2 });
    vi.advanceTimersByTime(900);
    expect(descriptorsOn(path)).toHaveLength(1);
    vi.advanceTimersByTime(2100);
    expect(descriptorsOn(path)).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
    expect(DurableQueue.read<{ n: number }>(path)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  test('a queue opened again while the first lives (its open rewrites the file): the first one\'s appends land in the current file', () => {
    const path = join(dir, 'twice.json');
    const first = DurableQueue.open<{ n: number }>(path);
    first.push({ n: 1 });
    const second = DurableQueue.open<{ n: number }>(path);
    first.push({ n: 2 });
    second.push({ n: 3 });
    first.push({ n: 4 });
    expect(descriptorsOn(path).length).toBeLessThanOrEqual(1);
    expect(DurableQueue.read<{ n: number }>(path)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    first.close();
    second.close();
    expect(descriptorsOn(path)).toEqual([]);
  });
});
