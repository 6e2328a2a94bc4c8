import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { IdDigests } from '../plugins/relay-irc/id-digests.js';
import { SentKeys } from '../plugins/relay-irc/sent-keys.js';
import { seededRandom } from './helpers/chaos.js';

/** #32 part 2: relay-irc's sent ids kept as digests in a table made once, answering as a Set of the ids would. */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const idOf = (n: number) => createHash('sha256').update(`line ${n}`).digest('base64url').slice(0, 22);

describe('IdDigests', () => {
  it('answers as a Set of the ids through 60,000 random adds and deletes in a crowded table', () => {
    const digests = new IdDigests(600);
    const model = new Set<string>();
    const next = seededRandom(7);
    for (let step = 0; step < 60_000; step += 1) {
      const id = idOf(Math.floor(next() * 1_500));
      if (next() < 0.55) expect(digests.add(id)).toBe(!model.has(id)), model.add(id);
      else digests.delete(id), model.delete(id);
      if (step % 1_000 === 0) for (let n = 0; n < 1_500; n += 1) expect(digests.has(idOf(n))).toBe(model.has(idOf(n)));
    }
    expect(digests.size).toBe(model.size);
  });

  it('is made once for its maximum: the same table at 10 ids as at 20,000', () => {
    const digests = new IdDigests(20_000);
    const slots = digests.slots;
    for (let n = 0; n < 10; n += 1) digests.add(idOf(n));
    expect(digests.slots).toBe(slots);
    for (let n = 10; n < 20_000; n += 1) digests.add(idOf(n));
    expect(digests.slots).toBe(slots);
    expect(digests.size).toBe(20_000);
    expect(slots * 8).toBeLessThanOrEqual(512 * 1024);
    // Past its maximum it grows rather than fill up.
    for (let n = 20_000; n < 40_000; n += 1) digests.add(idOf(n));
    expect(digests.size).toBe(40_000);
    expect(digests.has(idOf(39_999)) && digests.has(idOf(0))).toBe(true);
  });

  it('takes ids of another shape too (short, or not base64url)', () => {
    const digests = new IdDigests(10);
    for (const id of ['', 'a', 'ü~ü~ü~ü~ü~ü', 'abcdefghij-more']) expect(digests.add(id)).toBe(true);
    expect(digests.has('a')).toBe(true);
    expect(digests.has('b')).toBe(false);
  });
});

describe('SentKeys', () => {
  it('remembers the last ids across a restart, the oldest 1% going past its maximum', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-sent-keys-'));
    dirs.push(dir);
    const sent = SentKeys.open(dir, undefined, 2_000);
    const ids = Array.from({ length: 2_500 }, (_, n) => sent.idOf('chat-1', '#a', `line ${n}`));
    for (const id of ids) sent.add(id);
    const again = SentKeys.open(dir, undefined, 2_000);
    for (const one of [sent, again]) {
      expect(one.has(ids[2_499]!)).toBe(true);
      expect(one.has(ids[600]!)).toBe(true);
      expect(one.has(ids[0]!)).toBe(false);
      expect(one.has(ids[499]!)).toBe(false);
    }
  });
});
