import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ChatOutbox } from '../src/supervisor/chat-outbox.js';
import { OutboxFile, type OutboxItem } from '../src/store/outbox-file.js';
import { countingStorage } from './helpers/counting-storage.js';

const PATH = '/bots/b/outbox.jsonl';

/** The outbox's journal as a later start reads it (a kill -9 keeps what was appended). */
function onDisk(storage: ReturnType<typeof countingStorage>['storage']): Map<string, OutboxItem> {
  const items = new Map<string, OutboxItem>();
  for (const line of storage.readText(PATH).split('\n').filter(Boolean)) {
    const entry = JSON.parse(line) as { put?: OutboxItem[]; del?: string[] };
    for (const item of entry.put ?? []) items.set(item.id, structuredClone(item));
    for (const id of entry.del ?? []) items.delete(id);
  }
  return items;
}

function outboxOn(file: OutboxFile, posted: Array<{ text: string; disk: OutboxItem[] }>, disk: () => Map<string, OutboxItem>): ChatOutbox {
  return new ChatOutbox({
    file, chatId: 'chat-1', log: pino({ level: 'silent' }), rate: { perSecond: 50, burst: 5 },
    // What the journal holds at the moment the post goes on the socket.
    post: (text) => (posted.push({ text, disk: [...disk().values()] }), true),
    cursor: () => 10,
    lookUp: async () => undefined,
  });
}

/**
 * #32 part 1: a line from a relay, posted into the chat at once, cost the outbox two journal appends
 * before its post went on the socket (the item as queued, then as sent): one is enough, the item
 * written as sent. Counted, not timed. The post is still on disk, as sent, before it goes out, and a
 * post that cannot go at once is on disk, as queued, before enqueue() returns.
 */
describe('the outbox journal per post', () => {
  it('writes a post sent at once in one line, as sent, before it goes on the socket', async () => {
    const { storage } = countingStorage();
    const file = OutboxFile.open(PATH, storage);
    const posted: Array<{ text: string; disk: OutboxItem[] }> = [];
    const outbox = outboxOn(file, posted, () => onDisk(storage));
    outbox.caughtUp();
    const turn = () => new Promise((next) => setImmediate(next));
    await turn();
    const lines = () => storage.readText(PATH).split('\n').filter(Boolean).length;
    const before = lines();
    // Each post goes on the socket within enqueue() (the socket is open and the pace allows).
    outbox.enqueue('<hank> lat a 1', undefined, { key: 'line-1', bus: false, first: true }).catch(() => undefined);
    expect(posted.map((p) => p.text)).toEqual(['<hank> lat a 1']);
    await turn();
    outbox.enqueue('a reply', { chatId: 'chat-1', msgNum: 3 }).catch(() => undefined);
    expect(posted.map((p) => p.text)).toEqual(['<hank> lat a 1', 'a reply']);
    expect(lines() - before).toBe(2);
    // Each post was on disk, as sent, when it went out.
    expect(posted[0]!.disk.map((item) => [item.text, item.state])).toEqual([['<hank> lat a 1', 'sent']]);
    expect(posted[1]!.disk.map((item) => [item.text, item.state])).toEqual([['<hank> lat a 1', 'sent'], ['a reply', 'sent']]);
    outbox.stop();
  });

  it('writes a post that waits as queued before enqueue returns, and sends it later as one more line', async () => {
    const { storage } = countingStorage();
    const file = OutboxFile.open(PATH, storage);
    const posted: Array<{ text: string; disk: OutboxItem[] }> = [];
    const outbox = outboxOn(file, posted, () => onDisk(storage));
    // Not caught up yet (a reopen's history read runs): nothing goes out.
    outbox.enqueue('<hank> lat b 1', undefined, { key: 'line-2', bus: false, first: true }).catch(() => undefined);
    expect(posted).toEqual([]);
    expect([...onDisk(storage).values()].map((item) => [item.text, item.state])).toEqual([['<hank> lat b 1', 'queued']]);
    // Opened again from disk (a kill -9 now): the post is there, queued.
    expect([...OutboxFile.open(PATH, storage).sent('chat-1')]).toEqual([]);
    outbox.caughtUp();
    await Promise.resolve();
    expect(posted.map((p) => [p.text, p.disk.map((item) => item.state)])).toEqual([['<hank> lat b 1', ['sent']]]);
    expect(storage.readText(PATH).split('\n').filter(Boolean).length).toBe(2);
    outbox.stop();
  });
});
