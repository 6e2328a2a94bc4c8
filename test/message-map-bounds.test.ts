import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAP_COMPACT_MIN, MessageMap, type MapRecord } from '../src/store/message-map.js';
import { FILE_STORAGE } from '../src/store/storage.js';
import { countingStorage } from './helpers/counting-file-storage.js';

/** #32 part 4: the message map's file and memory stay bounded, whatever the lines through it. */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function path(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-map-bounds-'));
  dirs.push(dir);
  return join(dir, 'gateway-map.jsonl');
}

const DAY = 24 * 3600 * 1000;
const speakers = [{ platform: 'irc', id: 'alice!~a@host', name: 'alice' }, { platform: 'irc', id: 'bob!~b@host', name: 'bob' }];

/** A line said on IRC, posted into the chat and copied to Slack: three journal lines. */
function line(map: MessageMap, i: number): void {
  const key = `irc:#a@bot/relay-irc m${i}`;
  map.begin({
    key, gateway: 'g', origin: 'irc:#a@bot/relay-irc', platform: 'irc', nativeId: `m${i}`, kind: 'message',
    speaker: { ...speakers[i % 2]! }, text: `line ${i} `.padEnd(100, 'x'),
  });
  map.addCopy(key, 'chat:7@bot', { id: `c${i}`, bus: true, first: true });
  map.addCopy(key, 'slack:C1@bot/relay-slack', { id: `${i}.000100`, bus: false, first: false });
}

/** Every record as it would be written (what a reopen must give again). */
const contents = (map: MessageMap, count: number, from: number): Array<MapRecord | undefined> =>
  Array.from({ length: count }, (_, i) => map.get(`irc:#a@bot/relay-irc m${from + i}`));

describe('MessageMap bounds (#32 part 4)', () => {
  it('never holds more than max_lines records, and its file stays under max_lines compacted records plus as many journal lines', () => {
    const file = path();
    const maxRecords = 100;
    const storage = countingStorage();
    const map = MessageMap.open(file, { maxRecords, maxAgeMs: 30 * DAY }, storage);
    let largest = 0;
    let longestLine = 0;
    const total = 10 * MAP_COMPACT_MIN;
    for (let i = 0; i < total; i += 1) {
      line(map, i);
      expect(map.size).toBeLessThanOrEqual(maxRecords);
      if (i % 97 === 0) {
        const text = readFileSync(file, 'utf8');
        largest = Math.max(largest, text.split('\n').length - 1);
        for (const l of text.split('\n')) longestLine = Math.max(longestLine, l.length + 1);
      }
    }
    // The documented bound: the lines a compaction left (at most max_lines records) and at most
    // max(MAP_COMPACT_MIN, those) journal lines after them.
    expect(largest).toBeLessThanOrEqual(maxRecords + Math.max(MAP_COMPACT_MIN, maxRecords));
    expect(statSync(file).size).toBeLessThanOrEqual((maxRecords + Math.max(MAP_COMPACT_MIN, maxRecords)) * longestLine);
    // Amortised O(1): the rewrites wrote fewer entries than the lines appended.
    expect(storage.rewritten).toBeLessThanOrEqual(storage.appended);
    // Past max_lines it forgets 1% of them at once (here 1): it holds max_lines - 1 or max_lines.
    expect(map.size).toBeGreaterThanOrEqual(maxRecords - 1);
    const reopened = MessageMap.open(file, { maxRecords, maxAgeMs: 30 * DAY });
    expect(reopened.size).toBe(map.size);
    expect(contents(reopened, map.size, total - map.size)).toEqual(contents(map, map.size, total - map.size));
    expect(contents(reopened, map.size, total - map.size).every(Boolean)).toBe(true);
    expect(reopened.find('slack:C1@bot/relay-slack', `${total - 1}.000100`)?.key).toBe(`irc:#a@bot/relay-irc m${total - 1}`);
    expect(reopened.get(`irc:#a@bot/relay-irc m${total - map.size - 1}`)).toBeUndefined();
  });

  it('forgets the records older than max_age_days when it opens, by its clock, and as it runs', () => {
    const file = path();
    let now = Date.UTC(2026, 10, 1);
    const clock = () => now;
    const month = { maxRecords: 20_000, maxAgeMs: 31 * DAY };
    const map = MessageMap.open(file, month, FILE_STORAGE, clock);
    // A line an hour for 30 days.
    for (let i = 0; i < 30 * 24; i += 1) {
      line(map, i);
      now += 3600 * 1000;
    }
    expect(map.get('irc:#a@bot/relay-irc m0')?.at).toBe(Date.UTC(2026, 10, 1));
    expect(MessageMap.open(file, month, FILE_STORAGE, clock).size).toBe(30 * 24);
    // Opened with max_age_days 14: the first 16 days are forgotten, and the file is rewritten without them.
    const reopened = MessageMap.open(file, { maxRecords: 20_000, maxAgeMs: 14 * DAY }, FILE_STORAGE, clock);
    expect(reopened.size).toBe(14 * 24);
    expect(reopened.get(`irc:#a@bot/relay-irc m${16 * 24 - 1}`)).toBeUndefined();
    expect(reopened.get(`irc:#a@bot/relay-irc m${16 * 24}`)?.text).toBe(`line ${16 * 24} `.padEnd(100, 'x'));
    expect(reopened.find('chat:7@bot', 'c0')).toBeUndefined();
    expect(reopened.find('chat:7@bot', `c${16 * 24}`)?.key).toBe(`irc:#a@bot/relay-irc m${16 * 24}`);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(14 * 24);
    // Running on, the map forgets a record once it is older than max_age_days, without a restart.
    now += DAY;
    line(reopened, 30 * 24);
    expect(reopened.size).toBe(13 * 24 + 1);
    expect(reopened.find('slack:C1@bot/relay-slack', `${16 * 24}.000100`)).toBeUndefined();
  });

  it('keeps a record small: one speaker object per speaker, copies without the flags that are not set', () => {
    const file = path();
    const map = MessageMap.open(file);
    for (let i = 0; i < 10; i += 1) line(map, i);
    for (const opened of [map, MessageMap.open(file)]) {
      const [a, b, c] = [0, 1, 2].map((i) => opened.get(`irc:#a@bot/relay-irc m${i}`)!) as [MapRecord, MapRecord, MapRecord];
      expect(a.speaker).toEqual(speakers[0]);
      expect(a.speaker).toBe(c.speaker);
      expect(a.speaker).not.toBe(b.speaker);
      expect(a.copies['slack:C1@bot/relay-slack']).toStrictEqual({ id: '0.000100' });
      expect(a.copies['chat:7@bot']).toStrictEqual({ id: 'c0', bus: true, first: true });
    }
  });

  it('opens a file within its bound without rewriting it, and rewrites one a crash cut short', () => {
    const file = path();
    const first = MessageMap.open(file);
    for (let i = 0; i < 50; i += 1) line(first, i);
    const storage = countingStorage();
    const again = MessageMap.open(file, undefined, storage);
    expect(storage.rewritten).toBe(0);
    line(again, 50);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(153);
    appendFileSync(file, '{"k":"irc:#a@bot/relay-irc m50","e":"discord:1@bot/relay-discord","c":{"id');
    const cut = countingStorage();
    const third = MessageMap.open(file, undefined, cut);
    expect(cut.rewritten).toBe(51);
    line(third, 51);
    expect(MessageMap.open(file).get('irc:#a@bot/relay-irc m51')?.copies['chat:7@bot']).toStrictEqual({ id: 'c51', bus: true, first: true });
  });
});
