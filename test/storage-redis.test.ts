import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CursorStore } from '../src/store/cursor-store.js';
import { DurableQueue } from '../src/store/durable-queue.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { MessageMap } from '../src/store/message-map.js';
import { MsgNumMarks } from '../src/store/msg-num-marks.js';
import { OutboxFile } from '../src/store/outbox-file.js';
import { RedisStorage, type Fence } from '../src/store/redis-storage.js';
import { LeaseLostError } from '../src/store/storage.js';
import { RedisServer } from './helpers/redis-server.js';

/**
 * The Redis backend of the stores (docs/scale-out.md): every store round-trips through it, writes are
 * refused under a stale fence (all of a batch, and everything after), durable() refuses a lease that
 * cannot be proved, and writes wait out a Redis restart in order.
 */
const ROOT = '/state';
const log = pino({ level: 'silent' });
let server: RedisServer;
let redis: Redis;
let unitIndex = 0;

beforeAll(async () => {
  server = await RedisServer.start({ appendfsync: 'always' });
  redis = new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
  redis.on('error', () => undefined);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

/** A unit with a lease set by hand: its fence, and a way to hand the lease to someone else. */
async function unit(validForMs = () => 60_000) {
  const name = `u${++unitIndex}`;
  const fence: Fence = { key: `t:lease:${name}`, value: `1:me:${name}`, validForMs };
  await redis.set(fence.key, fence.value);
  const load = () => RedisStorage.load({ redis, prefix: 't', unit: name, root: ROOT, fence: () => fence, log });
  return { name, fence, load, takeOver: () => redis.set(fence.key, `2:other:${name}`) };
}

describe('RedisStorage', () => {
  it('the message map\'s older records, kept only in the Redis list, are found by their place in it, across a compaction and a reload', async () => {
    const u = await unit();
    const storage = await u.load();
    const path = join(ROOT, 'gateway-map.jsonl');
    const map = MessageMap.open(path, undefined, storage);
    const line = (i: number) => {
      map.begin({ key: `irc ${i}`, gateway: 'g', origin: 'irc', platform: 'irc', nativeId: `${i}`, kind: 'message', speaker: { platform: 'irc', id: 'n', name: 'n' }, text: `line ${i}` });
      map.addCopy(`irc ${i}`, 'chat:general', { id: `c${i}` });
    };
    // 2,500 records: 1,500 of them cold, and journal lines enough for compactions along the way.
    for (let i = 0; i < 2_500; i += 1) line(i);
    map.addCopy('irc 7', 'slack:C1', { id: '7.000' });
    expect(map.find('chat:general', 'c7')?.text).toBe('line 7');
    await storage.close();
    const again = MessageMap.open(path, undefined, await u.load());
    expect(again.size).toBe(2_500);
    expect(again.find('chat:general', 'c7')?.text).toBe('line 7');
    expect(again.find('slack:C1', '7.000')?.key).toBe('irc 7');
    expect(again.find('irc', '1200')?.copies['chat:general']).toEqual({ id: 'c1200' });
  });

  it('every store round-trips: written, closed, loaded again by the next holder', async () => {
    const u = await unit();
    const storage = await u.load();
    const cursors = CursorStore.open(join(ROOT, 'bots/b/cursors.jsonl'), storage);
    for (let n = 1; n <= 50; n += 1) cursors.set('chat-1', n);
    cursors.noteCreated('chat-1', '2024-01-01T00:00:00Z');
    const queue = DurableQueue.open<string>(join(ROOT, 'bots/b/plugins/r/queue.json'), { storage });
    queue.push('one', 'two', 'three');
    queue.shift(1, { last: 'one' });
    const marks = MsgNumMarks.open(join(ROOT, 'bots/b/plugins/r/marks.json'), storage);
    marks.mark('chat-1', 7);
    const map = MessageMap.open(join(ROOT, 'gateway-map.jsonl'), undefined, storage);
    map.begin({ key: 'irc 1', gateway: 'g', origin: 'irc', platform: 'irc', nativeId: '1', kind: 'message', speaker: { platform: 'irc', id: 'n', name: 'n' }, text: 'hi' });
    map.addCopy('irc 1', 'chat:general', { id: '42' });
    const outbox = OutboxFile.open(join(ROOT, 'bots/b/outbox.jsonl'), storage);
    outbox.add({ id: 'p1', chatId: 'chat-1', text: 'pong', state: 'queued', queuedAt: 1 });
    const kv = await KeyValueStore.open(join(ROOT, 'bots/b/kv/responder.json'), storage);
    kv.set('seen', { n: 3 });
    await storage.close();

    const again = await u.load();
    const cursors2 = CursorStore.open(join(ROOT, 'bots/b/cursors.jsonl'), again);
    expect(cursors2.get('chat-1')).toBe(50);
    expect(cursors2.createdOf('chat-1')).toBe('2024-01-01T00:00:00Z');
    const queue2 = DurableQueue.open<string>(join(ROOT, 'bots/b/plugins/r/queue.json'), { storage: again });
    expect(queue2.all()).toEqual(['two', 'three']);
    expect(queue2.note).toEqual({ last: 'one' });
    expect(MsgNumMarks.open(join(ROOT, 'bots/b/plugins/r/marks.json'), again).has('chat-1', 7)).toBe(true);
    expect(MessageMap.open(join(ROOT, 'gateway-map.jsonl'), undefined, again).find('chat:general', '42')?.key).toBe('irc 1');
    expect(OutboxFile.open(join(ROOT, 'bots/b/outbox.jsonl'), again).forChat('chat-1').map((item) => item.text)).toEqual(['pong']);
    expect((await KeyValueStore.open(join(ROOT, 'bots/b/kv/responder.json'), again)).get('seen')).toEqual({ n: 3 });
    // One turn's fifty cursor moves went as one list append.
    expect(await redis.llen(`t:state:${u.name}:bots/b/cursors.jsonl`)).toBeLessThan(60);
  });

  it('the outbox: a journal of one line per change; the document of an earlier version is read once and its key removed', async () => {
    const u = await unit();
    const base = `t:state:${u.name}:`;
    // outbox.json as an earlier version left it: a document (a string key) listed in the unit's keys.
    const legacy = { items: [{ id: 'p1', chatId: 'chat-1', text: 'pong', state: 'sent', sentAfter: 3, queuedAt: 1 }], confirmed: { 'chat-1': 2 } };
    await redis.set(`${base}bots/b/outbox.json`, JSON.stringify(legacy));
    await redis.sadd(`${base}_keys`, `${base}bots/b/outbox.json`);
    const storage = await u.load();
    const outbox = OutboxFile.open(join(ROOT, 'bots/b/outbox.jsonl'), storage);
    expect([outbox.forChat('chat-1').map((item) => item.id), outbox.confirmedThrough('chat-1')]).toEqual([['p1'], 2]);
    outbox.add({ id: 'p2', chatId: 'chat-1', text: 'two', state: 'queued', queuedAt: 2 });
    const item = outbox.forChat('chat-1')[0]!;
    outbox.noteConfirmed('chat-1', 7);
    item.state = 'done';
    outbox.changed(item);
    await storage.close();
    expect(await redis.exists(`${base}bots/b/outbox.json`)).toBe(0);
    expect(await redis.sismember(`${base}_keys`, `${base}bots/b/outbox.json`)).toBe(0);
    // The snapshot at open (one line), then one line per change.
    expect(await redis.llen(`${base}bots/b/outbox.jsonl`)).toBe(4);

    const again = OutboxFile.open(join(ROOT, 'bots/b/outbox.jsonl'), await u.load());
    expect(again.forChat('chat-1').map((i) => [i.id, i.state])).toEqual([['p1', 'done'], ['p2', 'queued']]);
    expect(again.confirmedThrough('chat-1')).toBe(7);
  });

  it('a write under a stale fence is refused whole, and every write after it', async () => {
    const u = await unit();
    const storage = await u.load();
    const queue = DurableQueue.open<string>(join(ROOT, 'q.json'), { storage, now: () => 5 });
    queue.push('kept');
    await storage.durable();
    await u.takeOver();
    queue.push('refused-1');
    queue.push('refused-2');
    await expect(storage.durable()).rejects.toBeInstanceOf(LeaseLostError);
    expect(() => queue.push('after')).toThrow(LeaseLostError);
    expect(await redis.lrange(`t:state:${u.name}:q.json`, 0, -1)).toEqual([JSON.stringify({ push: ['kept'], at: 5 })]);
  });

  it('durable() refuses a lease that cannot be proved valid, even if Redis would still take the write', async () => {
    let valid = 60_000;
    const u = await unit(() => valid);
    const storage = await u.load();
    storage.writeDocument(join(ROOT, 'doc.json'), { a: 1 });
    await storage.durable();
    valid = 0;
    await expect(storage.durable()).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('writes made while Redis restarts wait for it and land in order, none lost', async () => {
    const u = await unit();
    const storage = await u.load();
    const queue = DurableQueue.open<number>(join(ROOT, 'numbers.json'), { storage });
    for (let n = 0; n < 100; n += 1) queue.push(n);
    await storage.durable();
    const restarting = server.restart('SIGKILL', 300);
    const until = performance.now() + 600;
    let n = 100;
    while (performance.now() < until) {
      queue.push(n++);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await restarting;
    await storage.close();
    const loaded = DurableQueue.open<number>(join(ROOT, 'numbers.json'), { storage: await u.load() });
    expect(loaded.all()).toEqual(Array.from({ length: n }, (_, index) => index));
  });

  it('a message map of 100,000 records is rewritten through one batch', async () => {
    const u = await unit();
    const storage = await u.load();
    const journal = storage.journal(join(ROOT, 'big.jsonl'), Array.from({ length: 100_000 }, (_, index) => ({ r: index })));
    expect(journal.lines).toBe(100_000);
    await storage.close();
    expect(await redis.llen(`t:state:${u.name}:big.jsonl`)).toBe(100_000);
  });
});
