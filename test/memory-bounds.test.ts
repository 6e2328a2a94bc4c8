import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FILE_STORAGE } from '../src/index.js';
import { ChannelLog } from '../plugins/http-api/stream-log.js';
import type { LinePayload } from '../plugins/http-api/line.js';
import { SentKeys } from '../plugins/relay-irc/sent-keys.js';
import { Cooldowns } from '../plugins/responder/cooldown.js';

/**
 * What grows with the lines relayed stays within its documented bound (docs/operations.md "What grows
 * and its bound", #32 part 2): many more lines than the bound go through each structure, on real files,
 * and its entries are counted after every line (entries, not bytes).
 */
const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-bounds-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A structure's private collection, to count its entries. */
function sizeOf(owner: object, field: string): number {
  return ((owner as Record<string, unknown>)[field] as { size: number }).size;
}

function line(n: number): LinePayload {
  return { id: `chat:general ${n}`, gateway: 'general', channel: 'ops', kind: 'message', text: `line ${n}`, speaker: { platform: 'chat', id: 'u1', name: 'carol' }, time: new Date(0).toISOString() };
}

describe('what grows with lines stays within its bound', () => {
  it('relay-irc remembers the last `max` lines queued, no more, and the newest of them', () => {
    const dir = tempDir();
    const max = 200;
    let keys = SentKeys.open(dir, FILE_STORAGE, max);
    let largest = 0;
    for (let n = 1; n <= 10 * max; n += 1) {
      keys.add(keys.idOf('chat-1', '#soak', `key ${n}`));
      largest = Math.max(largest, sizeOf(keys, 'seen'));
    }
    expect(largest).toBe(max);
    expect(keys.has(keys.idOf('chat-1', '#soak', `key ${10 * max}`))).toBe(true);
    expect(keys.has(keys.idOf('chat-1', '#soak', `key ${9 * max}`))).toBe(false);
    // What a restart reads back is bounded too.
    keys = SentKeys.open(dir, FILE_STORAGE, max);
    expect(sizeOf(keys, 'seen')).toBe(max);
    expect(keys.has(keys.idOf('chat-1', '#soak', `key ${9 * max + 1}`))).toBe(true);
  });

  it('http-api keeps `stream_keep` lines per channel and their ids, and at most 1% more (it lets them go 1% at once)', () => {
    const path = join(tempDir(), 'stream-ops.json');
    const keep = 100;
    let log = ChannelLog.open(path, FILE_STORAGE, keep);
    let largest = { lines: 0, ids: 0 };
    for (let n = 1; n <= 20 * keep; n += 1) {
      log.append(line(n));
      largest = { lines: Math.max(largest.lines, log.size), ids: Math.max(largest.ids, sizeOf(log, 'ids')) };
    }
    const room = Math.floor(keep / 100);
    expect(largest).toEqual({ lines: keep + room, ids: keep + room });
    expect(log.last).toBe(20 * keep);
    expect(log.has(line(20 * keep).id)).toBe(true);
    expect(log.has(line(19 * keep).id)).toBe(false);
    log = ChannelLog.open(path, FILE_STORAGE, keep);
    expect(log.size).toBeLessThanOrEqual(keep + room);
    expect(sizeOf(log, 'ids')).toBe(log.size);
  });

  it('the responder keeps 10,000 cooldowns plus those still cooling down, whatever the count of users', () => {
    let now = 0;
    const cooldowns = new Cooldowns(() => now);
    const spec = { user: 1_000 };
    let largest = 0;
    // 30,000 users, one command each, 100 a second: at most 100 are cooling down at any time.
    for (let n = 0; n < 30_000; n += 1) {
      now += 10;
      cooldowns.hit('ping', spec, `user-${n}`, 'chat-1');
      largest = Math.max(largest, sizeOf(cooldowns, 'until'));
    }
    expect(largest).toBeLessThanOrEqual(10_001);
    expect(cooldowns.remaining('ping', spec, 'user-29999', 'chat-1')).toBe(1_000);
  });
});
