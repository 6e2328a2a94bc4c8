import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CURSOR_COMPACT_AFTER, CursorStore } from '../src/store/cursor-store.js';
import { DurableQueue } from '../src/store/durable-queue.js';
import { JsonLinesFile } from '../src/store/json-lines-file.js';
import { MARKS_COMPACT_AFTER, MsgNumMarks } from '../src/store/msg-num-marks.js';
import { RecentIdsFile } from '../src/store/recent-ids-file.js';
import { countingStorage } from './helpers/counting-file-storage.js';
import { ChannelLog } from '../plugins/http-api/stream-log.js';
import { FILE_STORAGE } from '../src/store/storage.js';

/**
 * #32 part 4: every state file that lines go through stays under its documented bound
 * (docs/operations.md, "State files and their bounds") after many times its compaction threshold,
 * reopens with the same contents, and costs amortised O(1) per line (entries rewritten counted).
 */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function file(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bounds-'));
  dirs.push(dir);
  return join(dir, name);
}

const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean).length;

describe('state files stay bounded (#32 part 4)', () => {
  it('cursors.jsonl: one chat moved 5x the threshold stays under CURSOR_COMPACT_AFTER lines, and reopens at the last cursor', () => {
    const path = file('cursors.jsonl');
    const cursors = CursorStore.open(path);
    let largest = 0;
    for (let n = 1; n <= 5 * CURSOR_COMPACT_AFTER; n += 1) {
      cursors.set('chat-1', n);
      if (n % 997 === 0) largest = Math.max(largest, linesOf(path));
    }
    expect(largest).toBeLessThanOrEqual(CURSOR_COMPACT_AFTER);
    expect(CursorStore.open(path).get('chat-1')).toBe(5 * CURSOR_COMPACT_AFTER);
  });

  it('a relay\'s marks: with 600 chats reset once each, a mark appends a line (no rewrite per mark), and the file stays under twice a line per chat', () => {
    const path = file('queued-marks.json');
    const storage = countingStorage();
    const marks = MsgNumMarks.open(path, storage);
    for (let chat = 0; chat < 600; chat += 1) {
      marks.mark(`c${chat}`, 1);
      marks.reset(`c${chat}`);
    }
    const before = { ...storage };
    const total = 10 * MARKS_COMPACT_AFTER;
    let largest = 0;
    for (let n = 1; n <= total; n += 1) {
      marks.mark(`c${n % 600}`, n);
      if (n % 997 === 0) largest = Math.max(largest, linesOf(path));
    }
    // Amortised: the rewrites wrote no more entries than the marks appended.
    expect(storage.rewritten - before.rewritten).toBeLessThanOrEqual(storage.appended - before.appended);
    expect(largest).toBeLessThanOrEqual(2 * Math.max(MARKS_COMPACT_AFTER, 2 * 600));
    const again = MsgNumMarks.open(path);
    // The last mark of chat c<k> is the last n with n % 600 = k: c400 got `total`, c401 total - 599.
    expect([again.has('c400', total), again.has('c401', total - 599), again.has('c401', total - 598), again.epoch('c7')]).toEqual([true, true, false, 1]);
  });

  it('a relay\'s queue pushed and shifted 20,000 times stays under max(1000, 2 x waiting) lines, and reopens with what waits', () => {
    const path = file('to-irc.json');
    const queue = DurableQueue.open<{ text: string }>(path, { maxItems: 100 });
    let largest = 0;
    for (let n = 0; n < 20_000; n += 1) {
      queue.push({ text: `line ${n}` });
      if (queue.size > 5) queue.shift();
      if (n % 997 === 0) largest = Math.max(largest, linesOf(path));
    }
    expect(largest).toBeLessThanOrEqual(1000);
    expect(DurableQueue.open<{ text: string }>(path).all().map((item) => item.text)).toEqual([19_995, 19_996, 19_997, 19_998, 19_999].map((n) => `line ${n}`));
  });

  it('a seen-id list (RecentIdsFile) keeps its last `max` ids: 20x max adds append a line each (two once full), the file stays under max ids and 2 x max lines', () => {
    const path = file('seen-events.json');
    const storage = countingStorage();
    const max = 500;
    const ids = RecentIdsFile.open(path, max, storage);
    let largestBytes = 0;
    let largestLines = 0;
    for (let n = 0; n < 20 * max; n += 1) {
      ids.add(`event-${n}`, n % 2 === 0 ? '' : `origin-${n}`);
      if (n % 97 === 0) {
        largestBytes = Math.max(largestBytes, statSync(path).size);
        largestLines = Math.max(largestLines, linesOf(path));
      }
    }
    // Full, it lets the oldest 1% go at once: it holds 99% to all of max.
    expect(ids.size).toBeLessThanOrEqual(max);
    expect(ids.size).toBeGreaterThanOrEqual(max - max / 100);
    expect(storage.rewritten).toBeLessThanOrEqual(storage.appended);
    expect(largestLines).toBeLessThanOrEqual(2 * Math.max(1000, 2 * max));
    // max ids of at most 40 bytes each on the compacted line, then each appended line under 60 bytes.
    expect(largestBytes).toBeLessThanOrEqual(max * 40 + 2 * Math.max(1000, 2 * max) * 60);
    const again = RecentIdsFile.open(path, max);
    const total = 20 * max;
    expect([again.size, again.has(`event-${total - ids.size}`), again.has(`event-${total - ids.size - 1}`), again.get(`event-${total - 1}`)])
      .toEqual([ids.size, true, false, `origin-${total - 1}`]);
  });

  it('the HTTP API\'s stream log keeps its last stream_keep lines (to 1% more), its file under them and max(1000, 2 x them) lines, and reopens with the same lines', () => {
    const path = file('stream-ops.json');
    const storage = countingStorage();
    const keep = 1_000;
    const log = ChannelLog.open(path, storage, keep);
    const line = (n: number) => ({ id: `${n}`, gateway: 'g', channel: 'ops', kind: 'message', text: `line ${n}`, speaker: { platform: 'irc', id: 'a', name: 'a' }, time: '2026-11-27T00:00:00Z' });
    let largest = 0;
    for (let n = 1; n <= 20 * keep; n += 1) {
      log.append(line(n));
      expect(log.size).toBeLessThanOrEqual(keep + keep / 100);
      if (n % 997 === 0) largest = Math.max(largest, linesOf(path));
    }
    expect(log.size).toBeGreaterThanOrEqual(keep);
    expect(largest).toBeLessThanOrEqual(2 * Math.max(1000, 2 * (keep + keep / 100)));
    expect(storage.rewritten).toBeLessThanOrEqual(storage.appended);
    const again = ChannelLog.open(path, FILE_STORAGE, keep);
    expect([again.size, again.last, again.oldest]).toEqual([log.size, 20 * keep, 20 * keep - log.size + 1]);
  });

  it('a journal read 1 MB at a time gives what a read of its whole text gives: lines across chunks, characters of several bytes, a last line cut short', () => {
    const path = file('journal.jsonl');
    const lines = Array.from({ length: 6_000 }, (_, i) => JSON.stringify({ i, text: `${'é€😀'.repeat(i % 97)}${'x'.repeat(i % 613)}` }));
    writeFileSync(path, `${lines.join('\n')}\n{"cut":`);
    expect(statSync(path).size).toBeGreaterThan(3 * 1024 * 1024);
    const read: unknown[] = [];
    expect(JsonLinesFile.forEachInFile(path, 'entry', (entry) => read.push(entry))).toEqual({ lines: 6_000, complete: false });
    expect(read).toEqual(JsonLinesFile.parse(readFileSync(path, 'utf8'), path, 'entry'));
    writeFileSync(path, `${lines.slice(0, 10).join('\n')}\n{"bad"\n${lines[10]}\n`);
    expect(() => JsonLinesFile.forEachInFile(path, 'entry', () => undefined)).toThrow(/journal.jsonl: unreadable entry at line 11/);
    writeFileSync(path, `${lines.slice(0, 10).join('\n')}\n`);
    expect(JsonLinesFile.forEachInFile(path, 'entry', () => undefined)).toEqual({ lines: 10, complete: true });
    expect(JsonLinesFile.forEachInFile(join(path, '..', 'none.jsonl'), 'entry', () => undefined)).toEqual({ lines: 0, complete: false });
  });
});
