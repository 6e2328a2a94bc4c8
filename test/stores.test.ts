import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AtomicJsonFile } from '../src/store/atomic-file.js';
import { CursorStore } from '../src/store/cursor-store.js';
import { DurableQueue, QueueFullError } from '../src/store/durable-queue.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { MsgNumMarks } from '../src/store/msg-num-marks.js';
import { OutboxFile, type OutboxItem } from '../src/store/outbox-file.js';

const root = mkdtempSync(join(tmpdir(), 'gw-stores-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
/** A fresh path in a directory that does not exist yet. */
const fresh = (name: string) => join(root, `case-${++counter}`, 'nested', name);

const lines = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as { c: string; m: number });

function item(id: string, chatId: string, text: string, state: OutboxItem['state'] = 'queued'): OutboxItem {
  return { id, chatId, text, state, queuedAt: 1_700_000_000_000, ...(state === 'sent' ? { sentAfter: 4 } : {}) };
}

describe('OutboxFile', () => {
  it('is written on every change and reopens with the same items', () => {
    const path = fresh('outbox.json');
    const file = OutboxFile.open(path);
    expect(file.size).toBe(0);
    file.add(item('1', 'a', 'first'));
    file.add(item('2', 'b', 'other chat'));
    file.add(item('3', 'a', 'second'));
    file.forChat('a')[0]!.state = 'sent';
    file.forChat('a')[0]!.sentAfter = 9;
    file.changed();
    file.remove('3');
    const again = OutboxFile.open(path);
    expect(again.size).toBe(2);
    expect(again.forChat('a')).toEqual([{ ...item('1', 'a', 'first'), state: 'sent', sentAfter: 9 }]);
    expect(again.forChat('b').map((i) => i.text)).toEqual(['other chat']);
    expect(readdirSync(join(path, '..')).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('keeps the order items were added in', () => {
    const path = fresh('outbox.json');
    const file = OutboxFile.open(path);
    for (const n of [1, 2, 3, 4]) file.add(item(String(n), 'a', `t${n}`));
    file.remove('2');
    expect(OutboxFile.open(path).forChat('a').map((i) => i.id)).toEqual(['1', '3', '4']);
  });

  it('an unreadable file is an error naming it', () => {
    const path = fresh('outbox.json');
    OutboxFile.open(path);
    writeFileSync(path, '[{"id":');
    expect(() => OutboxFile.open(path)).toThrow(`${path}: unreadable outbox`);
  });

  it('keeps each chat\'s newest confirming msg_num with the items; reads a file of the earlier format (a bare array)', () => {
    const path = fresh('outbox.json');
    const file = OutboxFile.open(path);
    file.add(item('1', 'a', 'pong', 'sent'));
    file.noteConfirmed('a', 12);
    file.noteConfirmed('a', 9); // never lowered
    file.remove('1');
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ items: [], confirmed: { a: 12 } });
    const again = OutboxFile.open(path);
    expect([again.confirmedThrough('a'), again.confirmedThrough('b')]).toEqual([12, 0]);
    expect(again.forgetConfirmed('a')).toBe(true);
    again.changed();
    expect(OutboxFile.open(path).confirmedThrough('a')).toBe(0);

    writeFileSync(path, JSON.stringify([item('2', 'a', 'from before')]));
    const old = OutboxFile.open(path);
    expect(old.forChat('a').map((i) => i.text)).toEqual(['from before']);
    expect(old.confirmedThrough('a')).toBe(0);
  });

  it('in memory it writes nothing', () => {
    const file = OutboxFile.memory();
    file.add(item('1', 'a', 'x'));
    expect(file.size).toBe(1);
  });
});

describe('CursorStore', () => {
  it('appends each move and reopens with the latest cursor per chat', () => {
    const path = fresh('cursors.jsonl');
    const store = CursorStore.open(path);
    expect(store.get('a')).toBeUndefined();
    store.set('a', 1);
    store.set('b', 10);
    store.set('a', 2);
    store.set('a', 2); // no change: no line
    expect(lines(path)).toEqual([{ c: 'a', m: 1 }, { c: 'b', m: 10 }, { c: 'a', m: 2 }]);
    // No close: a crash right now keeps every move made so far.
    const reopened = CursorStore.open(path);
    expect([reopened.get('a'), reopened.get('b')]).toEqual([2, 10]);
    reopened.close();
    store.close();
  });

  it('ignores a truncated last line: the previous line of that chat stands', () => {
    const path = fresh('cursors.jsonl');
    const store = CursorStore.open(path);
    store.set('a', 5);
    store.set('b', 7);
    store.set('a', 6);
    store.close();
    appendFileSync(path, '{"c":"a","m":6');
    appendFileSync(path, '\n{"c":"b","m":');
    const reopened = CursorStore.open(path);
    expect([reopened.get('a'), reopened.get('b')]).toEqual([6, 7]);
    reopened.set('b', 8);
    reopened.close();
    const third = CursorStore.open(path);
    expect([third.get('a'), third.get('b')]).toEqual([6, 8]);
    third.close();
  });

  it('ignores lines of the wrong shape', () => {
    const path = fresh('cursors.jsonl');
    CursorStore.open(path).close();
    writeFileSync(path, '{"c":"a","m":3}\n{"c":1,"m":4}\n{"c":"a","m":"5"}\nnot json\n\n');
    const store = CursorStore.open(path);
    expect(store.get('a')).toBe(3);
    store.close();
  });

  it('compacts the journal at open to one line per chat, the latest', () => {
    const path = fresh('cursors.jsonl');
    CursorStore.open(path).close();
    const journal = [];
    for (let m = 1; m <= 50; m += 1) journal.push(JSON.stringify({ c: m % 2 ? 'odd' : 'even', m }));
    writeFileSync(path, `${journal.join('\n')}\n`);
    const store = CursorStore.open(path);
    expect(lines(path).sort((x, y) => x.c.localeCompare(y.c))).toEqual([{ c: 'even', m: 50 }, { c: 'odd', m: 49 }]);
    store.set('odd', 51);
    expect(lines(path)).toHaveLength(3);
    store.close();
    expect(lines(path).sort((x, y) => x.c.localeCompare(y.c))).toEqual([{ c: 'even', m: 50 }, { c: 'odd', m: 51 }]);
    expect(readdirSync(join(path, '..')).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('compacts by itself after many moves', () => {
    const path = fresh('cursors.jsonl');
    const store = CursorStore.open(path);
    for (let m = 1; m <= 10_050; m += 1) store.set(m % 3 === 0 ? 'x' : 'y', m);
    expect(lines(path).length).toBeLessThan(100);
    const reopened = CursorStore.open(path);
    expect([reopened.get('x'), reopened.get('y')]).toEqual([10_050, 10_049]);
    reopened.close();
    store.close();
  });

  it('with more chats than a compaction leaves lines, a move appends one line instead of rewriting the file', () => {
    const path = fresh('cursors.jsonl');
    const store = CursorStore.open(path);
    // 12,000 first cursors: the journal is compacted once, at 10,000 lines (one per chat then).
    for (let chat = 0; chat < 12_000; chat += 1) store.set(`chat-${chat}`, 1);
    expect(lines(path)).toHaveLength(12_000);
    // Each move is one more line: the file is not rewritten until the journal doubles the compacted 10,000.
    for (let move = 2; move <= 101; move += 1) store.set('chat-7', move);
    expect(lines(path)).toHaveLength(12_100);
    // The 20,000th line compacts it to one line per chat again.
    for (let move = 102; move < 102 + 7_900; move += 1) store.set('chat-7', move);
    expect(lines(path)).toHaveLength(12_000);
    expect(CursorStore.open(path).get('chat-7')).toBe(8_001);
    store.close();
  });

  it('in memory keeps cursors without a file', () => {
    const store = CursorStore.memory();
    store.set('a', 3);
    expect(store.get('a')).toBe(3);
    store.close();
  });
});

describe('KeyValueStore', () => {
  it('set, get and delete survive a flush and a reopen', async () => {
    const path = fresh('store.json');
    const store = await KeyValueStore.open(path);
    expect(store.get('missing')).toBeUndefined();
    store.set('count', 3);
    store.set('nested', { list: [1, 'two'], flag: true });
    store.set('gone', 'soon');
    store.delete('gone');
    expect(store.get<number>('count')).toBe(3);
    await store.flush();
    const again = await KeyValueStore.open(path);
    expect(again.get('count')).toBe(3);
    expect(again.get('nested')).toEqual({ list: [1, 'two'], flag: true });
    expect(again.get('gone')).toBeUndefined();
    expect(again.keys().sort()).toEqual(['count', 'nested']);
    again.delete('count');
    await again.flush();
    expect((await KeyValueStore.open(path)).keys()).toEqual(['nested']);
  });

  it('writes by itself shortly after a change', async () => {
    const path = fresh('store.json');
    const store = await KeyValueStore.open(path);
    store.set('k', 'v');
    expect(existsSync(path)).toBe(false);
    await expect.poll(() => existsSync(path) && readFileSync(path, 'utf8')).toBe('{"k":"v"}');
  });

  it('a flush with nothing pending writes nothing; memory stores never write', async () => {
    const path = fresh('store.json');
    const store = await KeyValueStore.open(path);
    await store.flush();
    expect(existsSync(path)).toBe(false);
    const memory = KeyValueStore.memory();
    memory.set('a', 1);
    await memory.flush();
    expect(memory.get('a')).toBe(1);
  });

  it('a corrupt file is an error naming it', async () => {
    const path = fresh('store.json');
    const store = await KeyValueStore.open(path);
    store.set('a', 1);
    await store.flush();
    writeFileSync(path, '{"a":');
    await expect(KeyValueStore.open(path)).rejects.toThrow(`${path}: unreadable state file`);
  });

  it('AtomicJsonFile coalesces writes and leaves no temporary file', async () => {
    const path = fresh('state.json');
    const file = new AtomicJsonFile<{ n: number }>(path, 10_000);
    for (let n = 1; n <= 5; n += 1) file.scheduleWrite(() => ({ n }));
    await file.flush();
    expect(await file.read()).toEqual({ n: 5 });
    expect(readdirSync(join(path, '..'))).toEqual(['state.json']);
  });
});

describe('DurableQueue', () => {
  it('keeps its items across a reopen, in order, and refuses pushes past its bound', () => {
    const path = fresh('q.json');
    const warnings: number[] = [];
    const queue = DurableQueue.open<{ n: number }>(path, { maxItems: 5, onHighWater: (size) => warnings.push(size) });
    queue.push({ n: 1 }, { n: 2 }, { n: 3 });
    expect(warnings).toEqual([]);
    queue.push({ n: 4 });
    expect(warnings).toEqual([4]);
    expect(() => queue.push({ n: 5 }, { n: 6 })).toThrow(QueueFullError);
    expect(queue.shift(2)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(DurableQueue.read(path)).toEqual([{ n: 3 }, { n: 4 }]);
    const reopened = DurableQueue.open<{ n: number }>(path, { maxItems: 5 });
    expect(reopened.all()).toEqual([{ n: 3 }, { n: 4 }]);
    expect(reopened.peek()).toEqual({ n: 3 });
    expect(reopened.head(5)).toEqual([{ n: 3 }, { n: 4 }]);
  });

  it('appends one line per change and rewrites itself short: at open, and once the journal is long', () => {
    const path = fresh('q.json');
    const queue = DurableQueue.open<number>(path);
    for (let n = 0; n < 1200; n += 1) {
      queue.push(n);
      if (n % 2 === 1) queue.shift(2);
    }
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean).length).toBeLessThan(1000);
    queue.push(1, 2);
    expect(DurableQueue.read(path)).toEqual([1, 2]);
    DurableQueue.open<number>(path);
    expect(readFileSync(path, 'utf8')).toBe('{"push":[1,2]}\n');
  });

  it('a last line cut short by a crash is left out; a bad line before it is an error naming the file', () => {
    const path = fresh('q.json');
    DurableQueue.open<string>(path).push('a', 'b');
    appendFileSync(path, '{"push":["c"');
    expect(DurableQueue.open<string>(path).all()).toEqual(['a', 'b']);
    appendFileSync(path, '{"shift":1\n{"push":["d"]}\n');
    expect(() => DurableQueue.open<string>(path)).toThrow(`${path}: unreadable queue at line 2`);
    writeFileSync(path, '{"pop":1}\n');
    expect(() => DurableQueue.read(path)).toThrow(`${path}: unreadable queue (unknown entry {"pop":1})`);
  });

  it('keeps a note with its items: set with a shift in one line, or alone, across reopens and compaction', () => {
    const path = fresh('q.json');
    const queue = DurableQueue.open<string>(path);
    expect(queue.note).toBeUndefined();
    queue.push('a', 'b', 'c');
    queue.shift(1, { last: 'id-a' });
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean).at(-1)).toBe('{"shift":1,"note":{"last":"id-a"}}');
    queue.setNote({ last: 'id-a', attempting: 'b' });
    const reopened = DurableQueue.open<string>(path);
    expect(reopened.all()).toEqual(['b', 'c']);
    expect(reopened.note).toEqual({ last: 'id-a', attempting: 'b' });
    expect(readFileSync(path, 'utf8')).toBe('{"push":["b","c"]}\n{"note":{"last":"id-a","attempting":"b"}}\n');
    reopened.shift(2, null);
    expect(DurableQueue.open<string>(path).note).toBeNull();
    reopened.shift(0, { last: 'x' });
    expect(DurableQueue.open<string>(path).note).toEqual({ last: 'x' });
  });

  it('reads a queue file written before the journal (one JSON array)', () => {
    const path = fresh('q.json');
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, JSON.stringify([{ text: 'old 1' }, { text: 'old 2' }]));
    const queue = DurableQueue.open<{ text: string }>(path);
    expect(queue.all()).toEqual([{ text: 'old 1' }, { text: 'old 2' }]);
    queue.shift(1);
    expect(DurableQueue.read(path)).toEqual([{ text: 'old 2' }]);
  });
});

describe('MsgNumMarks', () => {
  it('appends each mark, keeps the highest per chat across a reopen, reads the older one-object file', () => {
    const path = fresh('marks.json');
    const marks = MsgNumMarks.open(path);
    marks.mark('a', 3);
    marks.mark('a', 2);
    marks.markKey('b:c:7');
    expect(readFileSync(path, 'utf8')).toBe('["a",3]\n["b:c",7]\n');
    const again = MsgNumMarks.open(path);
    expect([again.has('a', 3), again.has('a', 4), again.has('b:c', 7), again.has('b', 7)]).toEqual([true, false, true, false]);

    const old = fresh('marks.json');
    mkdirSync(join(old, '..'), { recursive: true });
    writeFileSync(old, JSON.stringify({ '12345678901234567890': 5 }));
    expect(MsgNumMarks.open(old).has('12345678901234567890', 5)).toBe(true);
    expect(readFileSync(old, 'utf8')).toBe('["12345678901234567890",5]\n');
  });
});
