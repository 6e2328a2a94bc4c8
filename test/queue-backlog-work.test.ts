import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import type { OutgoingMessage } from '../src/gateway/message.js';
import { DurableQueue } from '../src/store/durable-queue.js';
import { countingStorage } from './helpers/counting-storage.js';
import { IrcLink } from '../plugins/relay-irc/irc-link.js';
import { relayOptions } from '../plugins/relay-irc/options.js';
import { Outbound, type QueuedLine } from '../plugins/relay-irc/outbound.js';
import { Routes } from '../plugins/relay-irc/routes.js';
import { SentKeys } from '../plugins/relay-irc/sent-keys.js';
import { UNPACED } from '../plugins/relay-irc/timing.js';

/**
 * #32 part 3 "each post costs the same at the end as at the start", for a relay's queue: with 50,000
 * lines waiting, a line queued and a line taken cost what they cost with 10 waiting. Counted, not
 * timed: the waiting lines are proxies counting every read of their fields (a pass over the backlog
 * shows as reads), and the journal is a storage counting the bytes written.
 */

/** An object whose field reads are counted. */
function counted<T extends object>(target: T, reads: { value: number }): T {
  return new Proxy(target, { get: (object, key, receiver) => {
    reads.value += 1;
    return Reflect.get(object, key, receiver);
  } });
}

const line = (n: number): QueuedLine => ({ src: `17:${n}`, key: `k${String(n).padStart(6, '0')}`, text: `<carol> line ${String(n).padStart(6, '0')}` });

/** Per step (a line pushed, looked up by key, the head taken, the backlog read): reads of queued lines and bytes written. */
function workPerStep(backlog: number, steps: number) {
  const reads = { value: 0 };
  const { storage, written } = countingStorage();
  const queue = DurableQueue.open<QueuedLine>('/q.json', { storage, maxItems: 200_000, keyOf: (item) => item.key ?? '', now: () => 1_700_000_000_000 });
  queue.push(...Array.from({ length: backlog }, (_, n) => counted(line(n), reads)));
  const work: Array<{ reads: number; bytes: number; rewrites: number }> = [];
  for (let step = 0; step < steps; step += 1) {
    const before = { reads: reads.value, bytes: written.appended + written.rewritten, rewrites: written.rewrites };
    queue.push(counted(line(1_000_000 + step), reads));
    const found = queue.hasKey(line(1_000_000 + step).key!);
    const taken = queue.shift(1).length;
    if (!found || taken !== 1 || queue.backlog.depth !== backlog) throw new Error(`step ${step}: found ${found}, took ${taken}, ${queue.backlog.depth} waiting`);
    work.push({ reads: reads.value - before.reads, bytes: written.appended + written.rewritten - before.bytes, rewrites: written.rewrites - before.rewrites });
  }
  return { work, written, queue, storage };
}

describe('a relay\'s DurableQueue under a backlog', () => {
  test('a push, a look-up by key, a shift and the backlog read cost as much with 50,000 waiting as with 10', () => {
    const small = workPerStep(10, 200).work;
    const large = workPerStep(50_000, 200).work;
    expect(small.every((step) => step.reads > 0 && step.bytes > 0 && step.rewrites === 0)).toBe(true);
    expect(large).toEqual(small);
  });

  test('rewrites, amortised, cost at most one waiting line per change, and the journal reads back what waits', () => {
    // Enough changes for the journal of 50,000 lines to be rewritten (at twice what waits).
    const { work, written, queue, storage } = workPerStep(50_000, 55_000);
    expect(written.rewrites).toBeGreaterThan(0);
    const appendedPerStep = Math.max(...work.filter((step) => step.rewrites === 0).map((step) => step.bytes));
    const perStep = work.reduce((sum, step) => sum + step.bytes, 0) / work.length;
    const lineBytes = JSON.stringify(line(1_000_000)).length + 1;
    expect(perStep).toBeLessThanOrEqual(appendedPerStep + lineBytes);
    const reopened = DurableQueue.open<QueuedLine>('/q.json', { storage, keyOf: (item) => item.key ?? '' });
    expect(reopened.size).toBe(50_000);
    expect(reopened.peek()).toEqual(queue.peek());
    expect(reopened.head(2)).toEqual(queue.head(2));
    expect(reopened.backlog.oldestAt).toBe(1_700_000_000_000);
  });
});

describe('relay-irc under a backlog', () => {
  const dir = mkdtempSync(join(tmpdir(), 'irc-backlog-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const chat = { id: '17', subject: 'general', groupId: '1', groupName: 'demo', chatsubId: '5' };
  const message = (msgNum: number): OutgoingMessage => ({
    key: `chat:17@bot ${msgNum}`, gateway: 'main', kind: 'message', text: `hello ${msgNum}`,
    speaker: { platform: 'chat', id: '42', name: 'Carol Member' },
    origin: { endpoint: 'chat:17@bot', platform: 'chat', nativeId: String(msgNum) },
    time: '2026-01-01T00:00:00.000Z',
    source: { chat, message: { msg_num: msgNum, id: String(msgNum), message: `hello ${msgNum}`, type: 'chat_msg_type_normal' } as ChatMessage },
  });

  /** Reads of waiting lines per gateway line handed to relay-irc (its endpoint.send: a look-up of the line, then the queue). */
  async function readsPerLine(backlog: number, lines: number): Promise<number[]> {
    const { ToIrc } = await import('../plugins/relay-irc/to-irc.js');
    const data = mkdtempSync(join(dir, 'relay-'));
    const log = pino({ level: 'silent' });
    const options = relayOptions.parse({ server: '127.0.0.1', port: 6667, tls: false, nick: 'gwbot', channels: { general: '#general' } });
    const routes = new Routes(options.channels);
    const channels = routes.channels([]);
    // A link that is never connected: the lines wait.
    const link = new IrcLink({
      server: '127.0.0.1', port: 6667, tls: false, verify: true, nick: 'gwbot', username: 'gw', realname: 'gw', channels, reconnect: { minMs: 100, maxMs: 100 },
    }, UNPACED, log, { ready() {}, down() {}, joined() {}, left() {}, serverMessage() {}, channelMessage() {}, replayed() {} });
    const outbound = new Outbound({ dataDir: data, nick: 'gwbot', channels, maxLines: 200_000, warnAt: 0.99, inFlight: 5, maxAttempts: 2, confirmTimeoutMs: 60_000 }, link, UNPACED, log);
    const toIrc = new ToIrc(options, routes, outbound, SentKeys.open(data), log);
    const reads = { value: 0 };
    outbound.enqueue('#general', Array.from({ length: backlog }, (_, n) => counted(line(n), reads)));
    const counts: number[] = [];
    for (let n = 0; n < lines; n += 1) {
      const before = reads.value;
      toIrc.send('#general', message(100 + n));
      // The same line again (handed on again after a crash) is found waiting, not queued twice.
      toIrc.send('#general', message(100 + n));
      counts.push(reads.value - before);
    }
    expect(outbound.queued).toBe(backlog + lines);
    return counts;
  }

  test('a gateway line queued for IRC reads as many waiting lines with 50,000 waiting as with 10', async () => {
    const small = await readsPerLine(10, 20);
    const large = await readsPerLine(50_000, 20);
    expect(large).toEqual(small);
  });
});
