import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { ChatOutbox, MAX_POST_LENGTH, PostFailedError, type PostRate } from '../src/supervisor/chat-outbox.js';
import { OutboxFile } from '../src/store/outbox-file.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => vi.useRealTimers());

function own(msgNum: number, text: string): ChatMessage {
  return { object: 'chat_message', msg_num: msgNum, message: text, user_id: 'bot', created: new Date().toISOString() } as ChatMessage;
}

interface Harness {
  outbox: ChatOutbox;
  file: OutboxFile;
  posted: string[];
  lookUps: number[];
  open: { value: boolean };
  cursor: { value: number | undefined };
}

function harness(rate: PostRate = { perSecond: 100, burst: 100 }, lookUp?: (after: number) => Promise<void>): Harness {
  const file = OutboxFile.memory();
  const posted: string[] = [];
  const lookUps: number[] = [];
  const open = { value: true };
  const cursor = { value: 10 as number | undefined };
  const outbox = new ChatOutbox({
    file, chatId: 'chat-1', log: pino({ level: 'silent' }), rate,
    post: (text) => {
      if (!open.value) return false;
      posted.push(text);
      return true;
    },
    cursor: () => cursor.value,
    handled: () => true,
    lookUp: async (after) => {
      lookUps.push(after);
      await lookUp?.(after);
    },
  });
  return { outbox, file, posted, lookUps, open, cursor };
}

/** Lets the outbox's promises and due timers run. */
const settle = (ms = 0) => vi.advanceTimersByTimeAsync(ms);

/** Enqueues and lets the pump settle before the next call. */
async function send(h: Harness, text: string): Promise<{ promise: Promise<ChatMessage> }> {
  const promise = h.outbox.enqueue(text);
  promise.catch(() => undefined);
  await settle();
  return { promise };
}

async function ready(h: Harness): Promise<void> {
  h.outbox.caughtUp();
  await settle();
}

describe('ChatOutbox', () => {
  it('holds posts until caughtUp(), then sends them in order', async () => {
    const h = harness();
    void h.outbox.enqueue('one');
    void h.outbox.enqueue('two');
    await settle();
    expect(h.posted).toEqual([]);
    expect(h.outbox.pending).toBe(2);
    expect(h.file.forChat('chat-1').map((item) => item.state)).toEqual(['queued', 'queued']);
    h.outbox.caughtUp();
    await settle();
    expect(h.posted).toEqual(['one', 'two']);
    expect(h.file.forChat('chat-1').map((item) => [item.state, item.sentAfter])).toEqual([['sent', 10], ['sent', 10]]);
  });

  it('posts asked for in the same tick, or right after caughtUp(), all go out', async () => {
    const h = harness();
    h.outbox.caughtUp();
    for (const text of ['a', 'b', 'c']) void h.outbox.enqueue(text);
    await settle();
    expect(h.posted).toEqual(['a', 'b', 'c']);
  });

  it('keeps posts queued while post() says the socket is not open', async () => {
    const h = harness();
    h.open.value = false;
    await ready(h);
    await send(h, 'a');
    await send(h, 'b');
    expect(h.posted).toEqual([]);
    expect(h.outbox.stats.sent).toBe(0);
    h.open.value = true;
    h.outbox.caughtUp();
    await settle();
    expect(h.posted).toEqual(['a', 'b']);
  });

  it('paces posts: with 2 a second the third waits for a token', async () => {
    const h = harness({ perSecond: 2, burst: 2 });
    for (const text of ['1', '2', '3', '4']) void h.outbox.enqueue(text);
    await settle();
    await ready(h);
    expect(h.posted).toEqual(['1', '2']);
    await settle(499);
    expect(h.posted).toEqual(['1', '2']);
    await settle(1);
    expect(h.posted).toEqual(['1', '2', '3']);
    await settle(499);
    expect(h.posted).toEqual(['1', '2', '3']);
    await settle(1);
    expect(h.posted).toEqual(['1', '2', '3', '4']);
  });

  it('the bucket refills: after a quiet second a burst goes out at once', async () => {
    const h = harness({ perSecond: 2, burst: 2 });
    await ready(h);
    await send(h, 'a');
    await send(h, 'b');
    await send(h, 'c');
    expect(h.posted).toEqual(['a', 'b']);
    await settle(500);
    expect(h.posted).toEqual(['a', 'b', 'c']);
    await settle(1_000);
    await send(h, 'd');
    await send(h, 'e');
    expect(h.posted).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('confirm() resolves the oldest sent post with that text and a later msg_num', async () => {
    const h = harness();
    await ready(h);
    const { promise: first } = await send(h, 'same');
    h.cursor.value = 20;
    const { promise: second } = await send(h, 'same');
    expect(h.posted).toEqual(['same', 'same']);
    h.outbox.confirm(own(10, 'same')); // not after the first was sent: not it
    h.outbox.confirm(own(11, 'other')); // another text
    expect(h.outbox.stats.confirmed).toBe(0);
    h.outbox.confirm(own(15, 'same')); // after the first, before the second was sent
    await expect(first).resolves.toMatchObject({ msg_num: 15 });
    h.outbox.confirm(own(15, 'same')); // the same message again confirms nothing more
    expect(h.outbox.pending).toBe(1);
    h.outbox.confirm(own(21, 'same'));
    await expect(second).resolves.toMatchObject({ msg_num: 21 });
    expect(h.outbox.stats.confirmed).toBe(2);
    expect(h.file.size).toBe(0);
  });

  it('one message confirms one post even when two equal posts wait', async () => {
    const h = harness();
    await ready(h);
    let resolved = 0;
    void (await send(h, 'dup')).promise.then(() => (resolved += 1));
    void (await send(h, 'dup')).promise.then(() => (resolved += 1));
    h.outbox.confirm(own(11, 'dup'));
    h.outbox.confirm(own(11, 'dup'));
    await settle();
    expect(resolved).toBe(1);
    expect(h.outbox.pending).toBe(1);
    h.outbox.confirm(own(12, 'dup'));
    await settle();
    expect(resolved).toBe(2);
  });

  it('a queued post is not confirmed by a message, only a sent one', async () => {
    const h = harness();
    void h.outbox.enqueue('not yet');
    h.outbox.confirm(own(11, 'not yet'));
    expect(h.outbox.stats.confirmed).toBe(0);
    expect(h.outbox.pending).toBe(1);
  });

  it('looks the history up shortly after sending, and a found post is confirmed', async () => {
    const h = harness(undefined, async (after) => {
      if (after === 10) h.outbox.confirm(own(12, 'quiet'));
    });
    await ready(h);
    const promise = h.outbox.enqueue('quiet');
    await settle(149);
    expect(h.lookUps).toEqual([]);
    await settle(1);
    expect(h.lookUps).toEqual([10]);
    await expect(promise).resolves.toMatchObject({ msg_num: 12 });
  });

  it('keeps looking a few times with growing waits, and a failing look-up only delays', async () => {
    const h = harness(undefined, async () => {
      throw new Error('history down');
    });
    await ready(h);
    await send(h, 'unseen');
    await settle(150 + 300 + 600 + 1_200 + 2_400 + 4_800);
    expect(h.lookUps).toEqual([10, 10, 10, 10, 10, 10]);
    await settle(60_000);
    expect(h.lookUps).toHaveLength(6);
    expect(h.outbox.pending).toBe(1);
  });

  it('caughtUp() sends unconfirmed posts again, in their place, counted as resent', async () => {
    const h = harness();
    await ready(h);
    const { promise: lost } = await send(h, 'lost');
    h.outbox.hold();
    const { promise: later } = await send(h, 'later');
    expect(h.posted).toEqual(['lost']);
    await ready(h);
    expect(h.posted).toEqual(['lost', 'lost', 'later']);
    expect(h.outbox.stats).toMatchObject({ sent: 3, resent: 1 });
    h.outbox.confirm(own(11, 'lost'));
    h.outbox.confirm(own(12, 'later'));
    await expect(lost).resolves.toMatchObject({ msg_num: 11 });
    await expect(later).resolves.toMatchObject({ msg_num: 12 });
  });

  it('a post confirmed during the catch-up is not sent again', async () => {
    const h = harness();
    await ready(h);
    const { promise: made } = await send(h, 'made it');
    h.outbox.hold();
    h.outbox.confirm(own(11, 'made it')); // found by the reconnect's catch-up
    await ready(h);
    expect(h.posted).toEqual(['made it']);
    expect(h.outbox.stats.resent).toBe(0);
    await expect(made).resolves.toMatchObject({ msg_num: 11 });
  });

  it('hold() stops sending until caughtUp(), also in the middle of pacing', async () => {
    const h = harness({ perSecond: 1, burst: 1 });
    void h.outbox.enqueue('a');
    void h.outbox.enqueue('b');
    await settle();
    await ready(h);
    expect(h.posted).toEqual(['a']);
    h.outbox.hold();
    await settle(5_000);
    expect(h.posted).toEqual(['a']);
    h.outbox.confirm(own(11, 'a'));
    await ready(h);
    expect(h.posted).toEqual(['a', 'b']);
  });

  it('failAll() rejects every post of the chat with PostFailedError', async () => {
    const h = harness();
    const queued = h.outbox.enqueue('q');
    h.outbox.caughtUp();
    await settle();
    const another = h.outbox.enqueue('r');
    h.outbox.failAll('the chat is closed');
    await expect(queued).rejects.toBeInstanceOf(PostFailedError);
    await expect(another).rejects.toThrow('post not made: the chat is closed');
    expect(h.outbox.pending).toBe(0);
    expect(h.outbox.stats.failed).toBe(2);
  });

  it('refuses blank posts and posts over the limit, without queueing them', async () => {
    const h = harness();
    await expect(h.outbox.enqueue('')).rejects.toBeInstanceOf(RangeError);
    await expect(h.outbox.enqueue('  \n\t ')).rejects.toThrow(/blank/);
    await expect(h.outbox.enqueue('x'.repeat(MAX_POST_LENGTH + 1))).rejects.toThrow(/at most 10000 characters \(got 10001\)/);
    expect(h.outbox.pending).toBe(0);
    await ready(h);
    await send(h, 'x'.repeat(MAX_POST_LENGTH));
    expect(h.posted).toHaveLength(1);
  });

  it('writes the post before the promise is returned, and only its own chat is touched', async () => {
    const h = harness();
    h.file.add({ id: 'other', chatId: 'chat-2', text: 'elsewhere', state: 'queued', queuedAt: 0 });
    h.outbox.enqueue('mine').catch(() => undefined);
    expect(h.file.size).toBe(2);
    await settle();
    await ready(h);
    expect(h.posted).toEqual(['mine']);
    h.outbox.failAll('closed');
    expect(h.file.forChat('chat-2')).toHaveLength(1);
  });

  it('a post is written as sent before it goes on the socket, and back to queued when the socket takes nothing', async () => {
    const file = OutboxFile.memory();
    const seenAtSend: string[] = [];
    const open = { value: true };
    const outbox = new ChatOutbox({
      file, chatId: 'chat-1', log: pino({ level: 'silent' }), rate: { perSecond: 100, burst: 100 },
      // What a crash at the moment of sending would leave on disk: the item's state as the file holds it.
      post: (text) => {
        seenAtSend.push(file.forChat('chat-1').find((item) => item.text === text)!.state);
        return open.value;
      },
      cursor: () => 10, handled: () => true, lookUp: async () => undefined,
    });
    outbox.caughtUp();
    outbox.enqueue('one').catch(() => undefined);
    await settle();
    expect(seenAtSend).toEqual(['sent']);
    expect(file.forChat('chat-1')[0]).toMatchObject({ state: 'sent', sentAfter: 10 });
    open.value = false;
    outbox.enqueue('two').catch(() => undefined);
    await settle();
    expect(seenAtSend).toEqual(['sent', 'sent']);
    expect(file.forChat('chat-1').map((item) => item.state)).toEqual(['sent', 'queued']);
    expect(file.forChat('chat-1')[1]!.sentAfter).toBeUndefined();
  });

  it('flush() waits for confirmation within its time, answering what is left', async () => {
    const h = harness();
    await ready(h);
    await send(h, 'stays');
    const flushed = h.outbox.flush(1_000);
    await settle(1_000);
    await expect(flushed).resolves.toBe(1);
  });

  it('stop() rejects the promises but keeps the posts for the next start', async () => {
    const h = harness();
    const promise = h.outbox.enqueue('kept');
    h.outbox.stop();
    await expect(promise).rejects.toBeInstanceOf(PostFailedError);
    expect(h.file.forChat('chat-1').map((item) => item.text)).toEqual(['kept']);
  });
});
