import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FORMATS } from '../plugins/logger/formats.js';
import { CursorStore } from '../src/store/cursor-store.js';
import { MsgNumMarks } from '../src/store/msg-num-marks.js';

/** What a history reset leaves in the stores on disk, and files from before it read as they were. */

const dir = mkdtempSync(join(tmpdir(), 'groupwire-reset-stores-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('stores across a history reset', () => {
  it('cursors: an old file reads as it was; created, resets and entries survive a reopen', () => {
    const path = join(dir, 'cursors.jsonl');
    writeFileSync(path, '{"c":"7","m":50}\n{"c":"8","m":3}\n');
    let store = CursorStore.open(path);
    expect(store.get('7')).toBe(50);
    expect(store.createdOf('7')).toBeUndefined();
    store.noteCreated('7', '2026-01-01T00:00:00Z');
    store.set('7', 51);
    store.noteEntry('demo/general', '7');
    store.noteEntry('demo/7', '7');
    store.close();
    store = CursorStore.open(path);
    expect([store.get('7'), store.createdOf('7'), store.chatOfEntry('demo/general')]).toEqual([51, '2026-01-01T00:00:00Z', '7']);
    // Two entries naming one chat (by subject and by id) both survive the compaction.
    expect(store.chatOfEntry('demo/7')).toBe('7');
    store.reset('7', 0, '2026-02-01T00:00:00Z');
    store.set('7', 2);
    store.forget('8');
    store.close();
    store = CursorStore.open(path);
    expect([store.get('7'), store.createdOf('7'), store.get('8')]).toEqual([2, '2026-02-01T00:00:00Z', undefined]);
    store.close();
  });

  it('marks: a reset lowers the mark for good (marks otherwise only rise)', () => {
    const path = join(dir, 'marks.json');
    let marks = MsgNumMarks.open(path);
    marks.mark('7', 50);
    marks.reset('7');
    marks.mark('7', 3);
    marks = MsgNumMarks.open(path);
    expect([marks.has('7', 3), marks.has('7', 4)]).toEqual([true, false]);
    expect(readFileSync(path, 'utf8')).not.toContain('50');
  });

  it('marks: what was queued before a reset (an older epoch) does not mark the new history once delivered', () => {
    const path = join(dir, 'marks-epochs.json');
    let marks = MsgNumMarks.open(path);
    marks.mark('c:1', 40);
    const queuedBefore = { key: 'c:1:40', epoch: marks.epoch('c:1') };
    marks.reset('c:1');
    marks.mark('c:1', 2);
    // The old item is posted after the reset: msg_num 40 of the old history says nothing of the new one.
    marks.markKey(queuedBefore.key, queuedBefore.epoch);
    expect([marks.epoch('c:1'), marks.has('c:1', 3)]).toEqual([1, false]);
    marks.markKey('c:1:3', 1);
    expect(marks.has('c:1', 3)).toBe(true);
    // The epoch survives a reopen (which rewrites the file) and a second reset counts on from it.
    marks = MsgNumMarks.open(path);
    expect([marks.epoch('c:1'), marks.has('c:1', 3), marks.has('c:1', 4)]).toEqual([1, true, false]);
    marks.reset('c:1');
    marks = MsgNumMarks.open(path);
    expect([marks.epoch('c:1'), marks.epoch('other')]).toEqual([2, 0]);
  });

  it('the logger\'s reset marker reads back as msg_num 0 in every format with msg_nums', () => {
    const note = { at: '2026-03-01T10:00:00Z', reason: 'behind' as const, previousCursor: 50, newest: 3, chatId: '7' };
    const render = { timeZone: 'UTC', timeFormat: 'HH:mm:ss' };
    for (const format of [FORMATS.jsonl, FORMATS.html, FORMATS.markdown]) {
      const line = format.reset(note, render).trimEnd();
      expect(format.msgNumOf!(line), format.name).toBe(0);
    }
    expect(FORMATS.text.reset(note, render)).toBe(
      "[10:00:00] -- history was reset at 10:00:00 (the service's newest message is 3, the transcript had up to 50); the messages below start again at 1\n");
  });
});
