import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { ChatOutbox } from '../src/supervisor/chat-outbox.js';
import { OutboxFile, type OutboxItem } from '../src/store/outbox-file.js';
import { countingStorage } from './helpers/counting-storage.js';

/**
 * #32 part 3 "each post costs the same at the end as at the start": the work a post costs must not grow
 * with the posts waiting behind it. Counted, not timed: the waiting posts are proxies that count every
 * read of their fields, so a pass over the backlog (a filter, a find, a min) shows as reads.
 */
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => vi.useRealTimers());

function own(msgNum: number, text: string): ChatMessage {
  return { object: 'chat_message', msg_num: msgNum, message: text, user_id: 'bot', created: new Date().toISOString() } as ChatMessage;
}

/**
 * Per post (enqueue by origin and by relay, its send, its confirmation, the backlog read for /status):
 * reads of the backlog's items, and bytes the outbox's journal wrote.
 */
async function readsPerPost(backlog: number, posts: number): Promise<Array<{ reads: number; bytes: number }>> {
  const reads = { value: 0 };
  const { storage, written } = countingStorage();
  const file = OutboxFile.open('/bots/b/outbox.jsonl', storage);
  // The backlog, as an earlier process left it: relayed lines queued in this chat (what an overload
  // builds up: replies go before them), and posts queued in another chat.
  for (let i = 0; i < backlog; i += 1) {
    for (const chatId of i < 1000 ? ['chat-1', 'chat-2'] : ['chat-1']) {
      const item: OutboxItem = { id: `${chatId}-${i}`, chatId, text: `waiting ${i}`, state: 'queued', queuedAt: i, origin: { chatId: 'irc', msgNum: i } };
      if (chatId === 'chat-1') item.relay = { key: `backlog-${i}`, bus: true, first: true };
      file.add(new Proxy(item, { get: (target, key, receiver) => {
        reads.value += 1;
        return Reflect.get(target, key, receiver);
      } }));
    }
  }
  const posted: string[] = [];
  const outbox = new ChatOutbox({
    file, chatId: 'chat-1', log: pino({ level: 'silent' }), rate: { perSecond: 1, burst: 1 },
    post: (text) => {
      posted.push(text);
      return true;
    },
    cursor: () => 10,
    handled: () => true,
    lookUp: async () => undefined,
  });
  outbox.caughtUp();
  await vi.advanceTimersByTimeAsync(0);
  const counts: Array<{ reads: number; bytes: number }> = [];
  let msgNum = 100;
  for (let post = 0; post < posts; post += 1) {
    const before = reads.value;
    const bytesBefore = written.appended + written.rewritten;
    outbox.enqueue(`reply ${post}`, { chatId: 'chat-1', msgNum: post }).catch(() => undefined);
    outbox.enqueue(`relayed ${post}`, undefined, { key: `line-${post}`, bus: true, first: true }).catch(() => undefined);
    // The relayed line taken again is the post already queued; the same text asked again while the first
    // ask waits is a second post (both are dedupe look-ups).
    outbox.enqueue(`reply ${post}`, { chatId: 'chat-1', msgNum: post }).catch(() => undefined);
    outbox.enqueue(`relayed ${post}`, undefined, { key: `line-${post}`, bus: true, first: true }).catch(() => undefined);
    expect(outbox.pending).toBe(backlog + 3 * (post + 1) - post);
    // The next waiting post goes out (one token a second), and its own message confirms it.
    await vi.advanceTimersByTimeAsync(1000);
    msgNum += 1;
    outbox.confirm(own(msgNum, posted.at(-1)!));
    const backlogNow = outbox.backlog;
    expect(backlogNow.depth).toBe(outbox.pending);
    expect(backlogNow.oldestAt).toBe(0);
    counts.push({ reads: reads.value - before, bytes: written.appended + written.rewritten - bytesBefore });
  }
  outbox.stop();
  return counts;
}

describe('ChatOutbox under a backlog', () => {
  it('a post reads as many waiting items, and writes as many journal bytes, with 50,000 waiting as with 10', async () => {
    const small = await readsPerPost(10, 5);
    const large = await readsPerPost(50_000, 5);
    expect(small.every((post) => post.reads > 0 && post.bytes > 0)).toBe(true);
    expect(large).toEqual(small);
  }, 60_000);
});

describe('OutboxFile index', () => {
  /** What the index answers, worked out the slow way: a pass over every item of the chat. */
  function brute(file: OutboxFile, chatId: string) {
    const all = file.forChat(chatId);
    return {
      // The bot's own voice (no relay tag) first, then relayed lines, each in the order they were added.
      first: (all.find((item) => item.state === 'queued' && !item.relay) ?? all.find((item) => item.state === 'queued'))?.id,
      sent: all.filter((item) => item.state === 'sent').sort((a, b) => (a.sentNo ?? -1) - (b.sentNo ?? -1)).map((item) => item.id),
      waiting: all.filter((item) => item.state !== 'done').length,
      oldest: all.filter((item) => item.state !== 'done').map((item) => item.queuedAt).sort((a, b) => a - b)[0],
      relay: all.find((item) => item.relay?.key === 'k1' && item.relay.part === undefined)?.id,
      relayPart: all.find((item) => item.relay?.key === 'k1' && item.relay.part === 1)?.id,
      origin: all.filter((item) => item.origin?.chatId === 'o' && item.origin.msgNum === 1).map((item) => item.id),
    };
  }
  function indexed(file: OutboxFile, chatId: string) {
    return {
      first: file.firstQueued(chatId)?.id,
      sent: file.sent(chatId).map((item) => item.id),
      waiting: file.waitingCount(chatId),
      oldest: file.oldestWaitingAt(chatId),
      relay: file.byRelay(chatId, 'k1', undefined)?.id,
      relayPart: file.byRelay(chatId, 'k1', 1)?.id,
      origin: file.byOrigin(chatId, 'o', 1).map((item) => item.id),
    };
  }

  it('answers what a pass over the items answers, through adds, state changes (a requeued post keeps its place), removals and a reopen', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'outbox-index-'));
    try {
      const path = join(dir, 'outbox.jsonl');
      let file = OutboxFile.open(path);
      // A fixed pseudo-random walk (no Math.random: the same steps every run).
      let seed = 7;
      const next = (n: number): number => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      const states = ['queued', 'sent', 'done'] as const;
      for (let step = 0; step < 3000; step += 1) {
        const chatId = `chat-${next(2)}`;
        const items = file.forChat(chatId);
        const action = next(10);
        if (action < 4 || items.length === 0) {
          const item: OutboxItem = { id: `i${step}`, chatId, text: 't', state: states[next(2)]!, queuedAt: step };
          if (next(3) === 0) item.relay = { key: `k${next(3)}`, bus: true, first: true, ...(next(2) === 0 ? { part: next(2) } : {}) };
          if (next(3) === 0) item.origin = { chatId: 'o', msgNum: next(3) };
          file.add(item);
        } else if (action < 8) {
          const item = items[next(items.length)]!;
          const state = states[next(3)]!;
          // Sent by the outbox (last in the order of sending), or as a file of an earlier version has it.
          if (state === 'sent' && next(2) === 0) file.markSent(item);
          else item.state = state;
          if (next(2) === 0) file.changed(item);
          else {
            file.noteChanged(item);
            file.changed();
          }
        } else if (action < 9) file.remove(items[next(items.length)]!.id);
        else if (next(20) === 0) file = OutboxFile.open(path);
        for (const chat of ['chat-0', 'chat-1']) expect(indexed(file, chat)).toEqual(brute(file, chat));
      }
      file = OutboxFile.open(path);
      for (const chat of ['chat-0', 'chat-1']) expect(indexed(file, chat)).toEqual(brute(file, chat));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
