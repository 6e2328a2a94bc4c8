import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { keyHash } from '../src/store/cold-records.js';
import { MAP_HOT_RECORDS, MessageMap } from '../src/store/message-map.js';
import { FILE_STORAGE, type Journal, type Storage } from '../src/store/storage.js';
import { countingStorage as memoryStorage } from './helpers/counting-storage.js';

/**
 * #32 part 2: the message map keeps only its newest MAP_HOT_RECORDS records whole in memory; older
 * ones are found through hashes and read back from the journal, and answer every lookup as before.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function path(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-map-cold-'));
  dirs.push(dir);
  return join(dir, 'gateway-map.jsonl');
}

const IRC = 'irc:#a@bot/relay-irc';
const CHAT = 'chat:7@bot';
const SLACK = 'slack:C1@bot/relay-slack';
const keyOf = (i: number | string) => `${IRC} m${i}`;

/** A line said on IRC, posted into the chat and copied to Slack (three journal lines). */
function line(map: MessageMap, i: number | string, extra: { kind?: string; nativeId?: string; key?: string } = {}): void {
  const key = extra.key ?? keyOf(i);
  map.begin({
    key, gateway: 'g', origin: IRC, platform: 'irc', nativeId: extra.nativeId ?? `m${i}`, kind: extra.kind ?? 'message',
    speaker: { platform: 'irc', id: 'alice!~a@host', name: 'alice' }, text: `line ${i}`,
  });
  map.addCopy(key, CHAT, { id: `c${i}`, bus: true, first: true });
  map.addCopy(key, SLACK, { id: `${i}.000100` });
}

/** The file storage, counting the journal lines read back (a record held whole is read from nowhere). */
function countingReads(): Storage & { reads: number } {
  const counts = { reads: 0 };
  const counted = (inner: Journal): Journal => ({
    get lines() {
      return inner.lines;
    },
    append: (entry: unknown) => inner.append(entry),
    appendLine: (entry: unknown) => inner.appendLine(entry),
    rewrite: (entries: readonly unknown[]) => inner.rewrite(entries),
    rewriteTexts: (texts: Iterable<string>, placed?: (handle: number) => void) => inner.rewriteTexts(texts, placed),
    readLine(handle: number) {
      counts.reads += 1;
      return inner.readLine(handle);
    },
    withLines<T>(use: (read: (handle: number) => string) => T): T {
      return inner.withLines((read) => use((handle) => {
        counts.reads += 1;
        return read(handle);
      }));
    },
  });
  return Object.assign(counts, FILE_STORAGE, {
    resume: (file: string, lines: number) => counted(FILE_STORAGE.resume(file, lines)),
    readLine(file: string, handle: number) {
      counts.reads += 1;
      return FILE_STORAGE.readLine(file, handle);
    },
  });
}

describe('MessageMap: older records on disk only (#32 part 2)', () => {
  it('finds an old line by where it was said, by each copy, by key and by its newest edit, live and after a restart', () => {
    const file = path();
    const storage = countingReads();
    const map = MessageMap.open(file, undefined, storage);
    line(map, 0);
    line(map, 'e1', { kind: 'edit', nativeId: 'm0', key: `${keyOf(0)}~edit~1` });
    line(map, 'e2', { kind: 'edit', nativeId: 'm0', key: `${keyOf(0)}~edit~2` });
    for (let i = 1; i <= MAP_HOT_RECORDS + 200; i += 1) line(map, i);
    expect(map.size).toBe(MAP_HOT_RECORDS + 203);

    const newest = storage.reads;
    expect(map.find(IRC, `m${MAP_HOT_RECORDS + 200}`)?.text).toBe(`line ${MAP_HOT_RECORDS + 200}`);
    expect(storage.reads).toBe(newest);

    for (const opened of [map, MessageMap.open(file, undefined, storage)]) {
      const reads = storage.reads;
      expect(opened.find(IRC, 'm5')?.text).toBe('line 5');
      expect(storage.reads).toBeGreaterThan(reads);
      expect(opened.find(CHAT, 'c5')?.key).toBe(keyOf(5));
      expect(opened.find(SLACK, '5.000100')?.key).toBe(keyOf(5));
      expect(opened.get(keyOf(5))?.copies).toStrictEqual({ [CHAT]: { id: 'c5', bus: true, first: true }, [SLACK]: { id: '5.000100' } });
      // An edit is found by its own copies, never where the message it changes was said.
      expect(opened.find(IRC, 'm0')?.key).toBe(keyOf(0));
      expect(opened.latestEdit(IRC, 'm0')?.key).toBe(`${keyOf(0)}~edit~2`);
      expect(opened.find(CHAT, 'ce2')?.kind).toBe('edit');
      expect(opened.find(IRC, 'm-never')).toBeUndefined();
      expect(opened.find(CHAT, 'c-never')).toBeUndefined();
      // Taken twice: the old record is kept, not made again.
      expect(opened.begin({ ...opened.get(keyOf(7))!, text: 'other' }).text).toBe('line 7');
    }
  });

  it('notes a late copy of an old line (a backlog drained): found live, after a compaction and after a restart', () => {
    const file = path();
    const map = MessageMap.open(file);
    for (let i = 0; i <= MAP_HOT_RECORDS + 100; i += 1) line(map, i);
    map.addCopy(keyOf(3), 'discord:9@bot/relay-discord', { id: 'd3' });
    map.addCopy(keyOf(3), 'discord:9@bot/relay-discord', { id: 'd3' });
    expect(map.find('discord:9@bot/relay-discord', 'd3')?.key).toBe(keyOf(3));
    const reopened = MessageMap.open(file);
    expect(reopened.find('discord:9@bot/relay-discord', 'd3')?.copies[CHAT]?.id).toBe('c3');
    // Lines enough to compact the journal: the old record becomes one line with every copy.
    for (let i = MAP_HOT_RECORDS + 101; i <= 3 * MAP_HOT_RECORDS; i += 1) line(reopened, i);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.length).toBeLessThan(3 * (3 * MAP_HOT_RECORDS + 1));
    const third = lines.find((text) => text.includes(`"key":"${keyOf(3)}"`))!;
    expect(JSON.parse(third).r.copies['discord:9@bot/relay-discord']).toStrictEqual({ id: 'd3' });
    expect(lines.filter((text) => text.includes(`"${keyOf(3)}"`))).toHaveLength(1);
    for (const opened of [reopened, MessageMap.open(file)]) {
      expect(opened.find('discord:9@bot/relay-discord', 'd3')?.key).toBe(keyOf(3));
      expect(opened.find(SLACK, '3.000100')?.key).toBe(keyOf(3));
      expect(opened.size).toBe(3 * MAP_HOT_RECORDS + 1);
    }
  });

  it('every late copy is found, whichever write makes the journal due for compaction (a backlog drained while lines come)', () => {
    const file = path();
    let map = MessageMap.open(file);
    const lag = MAP_HOT_RECORDS + 500;
    const missed: number[] = [];
    for (let i = 0; i < 12_000; i += 1) {
      map.begin({
        key: keyOf(i), gateway: 'g', origin: IRC, platform: 'irc', nativeId: `m${i}`, kind: 'message',
        speaker: { platform: 'irc', id: 'alice!~a@host', name: 'alice' }, text: `line ${i}`,
      });
      map.addCopy(keyOf(i), SLACK, { id: `${i}.000100` });
      // The chat's copy is confirmed a backlog later, the record long cold by then.
      const late = i - lag;
      if (late >= 0) {
        map.addCopy(keyOf(late), CHAT, { id: `c${late}`, bus: true, first: true });
        if (map.find(CHAT, `c${late}`)?.key !== keyOf(late)) missed.push(late);
      }
      if (i === 6_000) map = MessageMap.open(file);
    }
    expect(missed).toStrictEqual([]);
    const reopened = MessageMap.open(file);
    const lost = Array.from({ length: 12_000 - lag }, (_, late) => late).filter((late) => reopened.find(CHAT, `c${late}`)?.key !== keyOf(late));
    expect(lost).toStrictEqual([]);
  });

  it('forgets old records past max_lines, and their lookups with them', () => {
    const file = path();
    const limits = { maxRecords: MAP_HOT_RECORDS + 300, maxAgeMs: 14 * 24 * 3600 * 1000 };
    const map = MessageMap.open(file, limits);
    for (let i = 0; i < 3 * MAP_HOT_RECORDS; i += 1) line(map, i);
    expect(map.size).toBeLessThanOrEqual(limits.maxRecords);
    for (const opened of [map, MessageMap.open(file, limits)]) {
      expect(opened.find(IRC, 'm0')).toBeUndefined();
      expect(opened.find(CHAT, 'c0')).toBeUndefined();
      expect(opened.get(keyOf(0))).toBeUndefined();
      const oldestKept = 3 * MAP_HOT_RECORDS - opened.size;
      expect(opened.find(CHAT, `c${oldestKept}`)?.key).toBe(keyOf(oldestKept));
    }
  });

  it('two old records whose keys share a hash each find their own', () => {
    // Keys with equal 30-bit hashes, found by trying (a birthday search: some 2^15 keys).
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i += 1) {
      const id = `x${i}`;
      const other = seen.get(keyHash(`${IRC} ${id}`));
      if (other !== undefined) pair = [other, id];
      else seen.set(keyHash(`${IRC} ${id}`), id);
    }
    const file = path();
    const map = MessageMap.open(file);
    for (const id of pair) line(map, id, { key: `${IRC} ${id}`, nativeId: id });
    for (let i = 0; i <= MAP_HOT_RECORDS; i += 1) line(map, i);
    for (const opened of [map, MessageMap.open(file)]) {
      for (const id of pair) {
        expect(opened.get(`${IRC} ${id}`)?.text).toBe(`line ${id}`);
        expect(opened.find(IRC, id)?.text).toBe(`line ${id}`);
        expect(opened.find(CHAT, `c${id}`)?.text).toBe(`line ${id}`);
      }
    }
  });

  it('works the same on a storage whose handles are places in a list (as Redis keeps a journal)', () => {
    const { storage } = memoryStorage();
    const map = MessageMap.open('/nowhere/gateway-map.jsonl', undefined, storage);
    for (let i = 0; i <= 2 * MAP_HOT_RECORDS; i += 1) line(map, i);
    map.addCopy(keyOf(1), 'discord:9@bot/relay-discord', { id: 'd1' });
    for (const opened of [map, MessageMap.open('/nowhere/gateway-map.jsonl', undefined, storage)]) {
      expect(opened.find(CHAT, 'c1')?.text).toBe('line 1');
      expect(opened.find('discord:9@bot/relay-discord', 'd1')?.key).toBe(keyOf(1));
      expect(opened.size).toBe(2 * MAP_HOT_RECORDS + 1);
    }
  });
});
