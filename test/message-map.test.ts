import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_MAP_LIMITS, MAP_COMPACT_MIN, MessageMap } from '../src/store/message-map.js';
import { countingStorage } from './helpers/counting-file-storage.js';

/** The gateways' message map on disk: found by any side's native id, kept across restarts, bounded. */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function path(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-map-'));
  dirs.push(dir);
  return join(dir, 'gateway-map.jsonl');
}

const record = (key: string, nativeId: string, kind = 'message') => ({
  key, gateway: 'g', origin: 'slack:C1@bot/relay-slack', platform: 'slack', nativeId, kind,
  speaker: { platform: 'slack', id: 'U1', name: 'alice' }, text: `text of ${key}`,
});

describe('MessageMap', () => {
  it('beginLater: the record is known at once, its line (and a compaction then due) written only at flush(), before any later line, in order', async () => {
    const file = path();
    const storage = countingStorage();
    const map = MessageMap.open(file, DEFAULT_MAP_LIMITS, storage);
    // The next line written is due to compact the journal.
    for (let n = 0; n < MAP_COMPACT_MIN; n += 1) map.begin(record(`k${n}`, `${n}.000`));
    const written = () => storage.appended + storage.rewritten;
    const before = written();
    map.beginLater(record('late1', 'l.001'));
    map.beginLater(record('late2', 'l.002'));
    expect(written()).toBe(before);
    expect(map.get('late1')?.text).toBe('text of late1');
    expect(map.beginLater({ ...record('late1', 'l.001'), text: 'again' }).text).toBe('text of late1');
    // A line written now goes after the kept ones (here: the compaction that takes them all in).
    map.addCopy('late1', 'chat:7@bot', { id: 'm-1' });
    expect(written()).toBeGreaterThan(before);
    map.beginLater(record('late3', 'l.003'));
    const kept = written();
    // Written one turn of the event loop later without a flush().
    await new Promise((resolve) => setImmediate(resolve));
    expect(written()).toBe(kept + 1);
    const again = MessageMap.open(file);
    expect(again.find('chat:7@bot', 'm-1')?.key).toBe('late1');
    expect(again.get('late2')).toBeDefined();
    expect(again.get('late3')).toBeDefined();
    expect(again.size).toBe(MAP_COMPACT_MIN + 3);
  });

  it('finds a line by its origin or by any copy, and keeps it across a restart', () => {
    const file = path();
    const map = MessageMap.open(file);
    map.begin(record('k1', '1.000'));
    map.addCopy('k1', 'chat:7@bot', { id: 'm-42', bus: true, first: true });
    map.addCopy('k1', 'irc:#a@bot/relay-irc', { id: 'irc-1' });
    const again = MessageMap.open(file);
    expect(again.find('slack:C1@bot/relay-slack', '1.000')?.key).toBe('k1');
    expect(again.find('chat:7@bot', 'm-42')?.copies['chat:7@bot']).toEqual({ id: 'm-42', bus: true, first: true });
    expect(again.find('irc:#a@bot/relay-irc', 'irc-1')?.key).toBe('k1');
    // Taken twice: the record kept is the first.
    expect(again.begin({ ...record('k1', '1.000'), text: 'other' }).text).toBe('text of k1');
  });

  it('an edit does not take the place of the message it changes; a copy of a later part is found too', () => {
    const map = MessageMap.memory();
    map.begin(record('k1', '1.000'));
    map.begin(record('k1~edit', '1.000', 'edit'));
    map.addCopy('k1~edit', 'chat:7@bot', { id: 'm-50' });
    map.addCopy('k1', 'chat:7@bot#1', { id: 'm-43' });
    expect(map.find('slack:C1@bot/relay-slack', '1.000')?.key).toBe('k1');
    expect(map.find('chat:7@bot', 'm-50')?.key).toBe('k1~edit');
    expect(map.find('chat:7@bot', 'm-43')?.key).toBe('k1');
  });

  it('knows the newest edit of a message, across a restart (what a deletion notice quotes)', () => {
    const file = path();
    const map = MessageMap.open(file);
    map.begin(record('k1', '1.000'));
    expect(map.latestEdit('slack:C1@bot/relay-slack', '1.000')).toBeUndefined();
    map.begin(record('k1~edit~a', '1.000', 'edit'));
    map.begin(record('k1~edit~b', '1.000', 'edit'));
    expect(map.latestEdit('slack:C1@bot/relay-slack', '1.000')?.key).toBe('k1~edit~b');
    expect(MessageMap.open(file).latestEdit('slack:C1@bot/relay-slack', '1.000')?.text).toBe('text of k1~edit~b');
  });

  it('is bounded: the oldest lines go first, and the file is compacted', () => {
    const file = path();
    const map = MessageMap.open(file, { maxRecords: 100, maxAgeMs: 60_000 });
    for (let i = 0; i < 1_000; i += 1) {
      map.begin(record(`k${i}`, `${i}.000`));
      map.addCopy(`k${i}`, 'chat:7@bot', { id: `m-${i}` });
    }
    expect(map.size).toBeLessThanOrEqual(100);
    expect(map.size).toBeGreaterThanOrEqual(99);
    expect(map.get('k0')).toBeUndefined();
    expect(map.find('chat:7@bot', 'm-999')?.key).toBe('k999');
    expect(readFileSync(file, 'utf8').trim().split('\n').length).toBeLessThanOrEqual(100 + MAP_COMPACT_MIN);
    expect(MessageMap.open(file, { maxRecords: 100, maxAgeMs: 60_000 }).size).toBeLessThanOrEqual(100);
  });
});
