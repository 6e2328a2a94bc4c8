import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { ChatOutbox } from '../src/supervisor/chat-outbox.js';
import { OutboxFile } from '../src/store/outbox-file.js';

/**
 * After a reconnect the outbox sends again only what a read of the chat's history proved missing. A
 * read that fails proves nothing: the outbox waits and reads again, and sends nothing again meanwhile
 * (it used to take a failed read as "not stored" and post every post in flight a second time: the
 * gateway chaos run's 70 Slack lines doubled after a socket drop while the service was slow).
 */

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => vi.useRealTimers());

function own(msgNum: number, text: string): ChatMessage {
  return { object: 'chat_message', msg_num: msgNum, message: text, user_id: 'bot', created: new Date().toISOString() } as ChatMessage;
}

describe('the outbox after a reconnect', () => {
  it('a failed read of the history sends nothing again; the read that succeeds confirms what was stored', async () => {
    const posted: string[] = [];
    const stored: ChatMessage[] = [];
    let readable = false;
    let reads = 0;
    const outbox: ChatOutbox = new ChatOutbox({
      file: OutboxFile.memory(), chatId: 'chat-1', log: pino({ level: 'silent' }), rate: { perSecond: 100, burst: 100 },
      post: (text) => {
        posted.push(text);
        stored.push(own(stored.length + 11, text));
        return true;
      },
      cursor: () => 10,
      handled: () => true,
      lookUp: async () => {
        reads += 1;
        if (!readable) throw new Error('503 from getchathistory');
        for (const message of stored) outbox.confirm(message);
      },
    });
    outbox.caughtUp();
    for (const text of ['one', 'two', 'three']) outbox.enqueue(text).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(1);
    expect(posted).toEqual(['one', 'two', 'three']);
    // The socket drops before any read confirmed them; the reconnect's reads fail for a while.
    outbox.hold();
    const reconciled = outbox.reconcile();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(reads).toBeGreaterThan(3);
    expect(outbox.stats.resent).toBe(0);
    expect(posted).toEqual(['one', 'two', 'three']);
    readable = true;
    await vi.advanceTimersByTimeAsync(20_000);
    await reconciled;
    expect(outbox.stats).toMatchObject({ confirmed: 3, resent: 0 });
    expect(outbox.pending).toBe(0);
    outbox.enqueue('four').catch(() => undefined);
    await vi.advanceTimersByTimeAsync(1);
    expect(posted).toEqual(['one', 'two', 'three', 'four']);
    outbox.stop();
  });

  it('a newer open ends the older reconcile: only one sends again', async () => {
    let fail = true;
    const outbox: ChatOutbox = new ChatOutbox({
      file: OutboxFile.memory(), chatId: 'chat-1', log: pino({ level: 'silent' }), rate: { perSecond: 100, burst: 100 },
      post: () => true, cursor: () => 10, handled: () => true,
      lookUp: async () => {
        if (fail) throw new Error('unreadable');
      },
    });
    outbox.caughtUp();
    outbox.enqueue('lost').catch(() => undefined);
    await vi.advanceTimersByTimeAsync(1);
    outbox.hold();
    const first = outbox.reconcile();
    await vi.advanceTimersByTimeAsync(1_000);
    outbox.hold();
    fail = false;
    const second = outbox.reconcile();
    await vi.advanceTimersByTimeAsync(20_000);
    await Promise.all([first, second]);
    // Read, and not in the history: sent again once.
    expect(outbox.stats.resent).toBe(1);
    outbox.stop();
  });
});
