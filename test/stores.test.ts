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
  /** What a reopen from disk gives, to compare with the file in memory. */
  const state = (file: OutboxFile, chats: string[]) => chats.map((chat) => [file.forChat(chat), file.confirmedThrough(chat)]);

  it('is written on every change and reopens with the same items', () => {
    const path = fresh('outbox.jsonl');
    const file = OutboxFile.open(path);
    expect(file.size).toBe(0);
    file.add(item('1', 'a', 'first'));
    file.add(item('2', 'b', 'other chat'));
    file.add(item('3', 'a', 'second'));
    const first = file.forChat('a')[0]!;
    first.state = 'sent';
    first.sentAfter = 9;
    file.changed(first);
    file.remove('3');
    const again = OutboxFile.open(path);
    expect(again.size).toBe(2);
    expect(again.forChat('a')).toEqual([{ ...item('1', 'a', 'first'), state: 'sent', sentAfter: 9 }]);
    expect(again.forChat('b').map((i) => i.text)).toEqual(['other chat']);
    expect(readdirSync(join(path, '..')).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('keeps the order items were added in, a changed item in its place', () => {
    const path = fresh('outbox.jsonl');
    const file = OutboxFile.open(path);
    for (const n of [1, 2, 3, 4]) file.add(item(String(n), 'a', `t${n}`));
    file.remove('2');
    const third = file.forChat('a')[1]!;
    third.state = 'sent';
    file.changed(third);
    expect(OutboxFile.open(path).forChat('a').map((i) => [i.id, i.state])).toEqual([['1', 'queued'], ['3', 'sent'], ['4', 'queued']]);
  });

  it('replays to the same state after every kind of change, and after a last line cut short', () => {
    const path = fresh('outbox.jsonl');
    const file = OutboxFile.open(path);
    const chats = ['a', 'b'];
    const same = () => expect(state(OutboxFile.open(path), chats)).toEqual(state(file, chats));
    file.add(item('1', 'a', 'pong'));
    same();
    file.add({ ...item('2', 'a', 'two'), origin: { chatId: 'b', msgNum: 5 }, relay: { key: 'irc 1', bus: true, first: false, part: 2 } });
    same();
    const [one, two] = file.forChat('a');
    one!.state = 'sent';
    one!.sentAfter = 3;
    two!.state = 'sent';
    two!.sentAfter = 3;
    file.changed(one!, two!);
    same();
    // A confirmation: the mark and a post moved past it are noted, written with the confirmed item's change.
    file.noteConfirmed('a', 12);
    one!.sentAfter = 12;
    file.noteChanged(one!);
    two!.state = 'done';
    two!.result = { msg_num: 12, message: 'two' };
    const linesBefore = readFileSync(path, 'utf8').split('\n').length;
    file.changed(two!);
    expect(readFileSync(path, 'utf8').split('\n').length, 'one line').toBe(linesBefore + 1);
    same();
    file.noteConfirmed('a', 9); // never lowered
    file.remove('1');
    same();
    file.add(item('3', 'b', 'elsewhere'));
    file.forgetDone('b', 4); // not yet: its origin is msg_num 5
    expect(file.size).toBe(2);
    file.forgetDone('b', 5);
    expect(file.forChat('a')).toEqual([]);
    same();
    expect(file.forgetConfirmed('a')).toBe(true);
    expect(file.forgetConfirmed('a')).toBe(false);
    file.changed();
    same();
    expect(OutboxFile.open(path).confirmedThrough('a')).toBe(0);
    // A noted change alone is written by changed(), and nothing is written when nothing changed.
    file.noteConfirmed('b', 30);
    file.changed();
    same();
    const size = readFileSync(path).length;
    file.changed();
    file.forgetDone('b', 100);
    expect(readFileSync(path).length).toBe(size);

    // A crash in the middle of an append: the cut line is left out, the rest replays.
    appendFileSync(path, '{"put":[{"id":"4","chatId":"b","te');
    const torn = OutboxFile.open(path);
    expect(state(torn, chats)).toEqual(state(file, chats));
    // The open rewrote the journal: what it appends next is readable.
    torn.add(item('5', 'b', 'after'));
    expect(OutboxFile.open(path).forChat('b').map((i) => i.id)).toEqual(['3', '5']);
  });

  it('an unreadable line other than the last is an error naming the file', () => {
    const path = fresh('outbox.jsonl');
    OutboxFile.open(path).add(item('1', 'a', 'x'));
    writeFileSync(path, `{"put":[{"id":\n${readFileSync(path, 'utf8')}`);
    expect(() => OutboxFile.open(path)).toThrow(`${path}: unreadable outbox entry at line 1`);
    writeFileSync(path, '{"items":[]}\n');
    expect(() => OutboxFile.open(path)).toThrow(`${path}: unreadable outbox (unknown entry`);
  });

  it('reads outbox.json of the earlier versions once ({ items, confirmed }, and before 2026-11 a bare array), then removes it', () => {
    for (const [document, confirmed] of [
      [{ items: [item('1', 'a', 'pong', 'sent'), item('2', 'a', 'later')], confirmed: { a: 12 } }, 12],
      [[item('1', 'a', 'pong', 'sent'), item('2', 'a', 'later')], 0],
    ] as const) {
      const path = fresh('outbox.jsonl');
      const legacy = join(path, '..', 'outbox.json');
      mkdirSync(join(path, '..'), { recursive: true });
      writeFileSync(legacy, JSON.stringify(document));
      const file = OutboxFile.open(path);
      expect(file.forChat('a').map((i) => [i.id, i.state])).toEqual([['1', 'sent'], ['2', 'queued']]);
      expect(file.confirmedThrough('a')).toBe(confirmed);
      expect(existsSync(legacy)).toBe(false);
      expect(OutboxFile.read(path).items.map((i) => i.id)).toEqual(['1', '2']);
      file.remove('1');
      // The journal is what counts from now on (an outbox.json put back is not read again).
      writeFileSync(legacy, JSON.stringify(document));
      expect(OutboxFile.open(path).forChat('a').map((i) => i.id)).toEqual(['2']);
      // A journal emptied by its changes is still the journal, not a reason to read outbox.json.
      const again = OutboxFile.open(path);
      again.remove('2');
      writeFileSync(legacy, JSON.stringify(document));
      expect(OutboxFile.open(path).size).toBe(0);
    }
  });

  it('a change to one item of a 10,000-item outbox appends one line, whatever the outbox holds; compaction keeps the file bounded', () => {
    const path = fresh('outbox.jsonl');
    const file = OutboxFile.open(path);
    for (let n = 0; n < 10_000; n += 1) file.add(item(`id-${n}`, 'a', `line ${n}`));
    const one = file.forChat('a')[5_000]!;
    // Each change's bytes: about one entry (the item), not the outbox.
    const entryBytes = JSON.stringify({ put: [one] }).length + 1;
    let size = readFileSync(path).length;
    for (const state of ['sent', 'queued', 'sent'] as const) {
      one.state = state;
      file.changed(one);
      const grown = readFileSync(path).length - size;
      expect(grown).toBeGreaterThan(0);
      expect(grown).toBeLessThan(entryBytes + 20);
      size += grown;
    }
    // A long run of changes (sent, confirmed, removed, new ones added): the file stays within twice the
    // live outbox plus the slack, in lines and so in bytes.
    const liveBytes = () => file.forChat('a').reduce((sum, i) => sum + JSON.stringify({ put: [i] }).length + 1, 0);
    let largest = 0;
    for (let n = 0; n < 30_000; n += 1) {
      const items = file.forChat('a');
      const head = items[0]!;
      if (n % 3 === 0) {
        head.state = 'sent';
        file.changed(head);
      } else if (n % 3 === 1) file.remove(head.id);
      else file.add(item(`new-${n}`, 'a', `line ${n}`));
      if (n % 1000 === 999) {
        const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean).length;
        expect(lines).toBeLessThanOrEqual(2 * file.size + 501);
        largest = Math.max(largest, readFileSync(path).length / liveBytes());
      }
    }
    expect(largest).toBeLessThan(3);
    expect(OutboxFile.open(path).forChat('a')).toEqual(file.forChat('a'));
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
    // With when they were pushed (one line for items pushed at once).
    expect(readFileSync(path, 'utf8')).toMatch(/^\{"push":\[1,2\],"at":\d+\}\n$/);
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
    const queue = DurableQueue.open<string>(path, { now: () => 5 });
    expect(queue.note).toBeUndefined();
    queue.push('a', 'b', 'c');
    queue.shift(1, { last: 'id-a' });
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean).at(-1)).toBe('{"shift":1,"note":{"last":"id-a"}}');
    queue.setNote({ last: 'id-a', attempting: 'b' });
    const reopened = DurableQueue.open<string>(path);
    expect(reopened.all()).toEqual(['b', 'c']);
    expect(reopened.note).toEqual({ last: 'id-a', attempting: 'b' });
    expect(readFileSync(path, 'utf8')).toBe('{"push":["b","c"],"at":5}\n{"note":{"last":"id-a","attempting":"b"}}\n');
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
