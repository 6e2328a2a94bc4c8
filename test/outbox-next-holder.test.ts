import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { ChatOutbox } from '../src/supervisor/chat-outbox.js';
import { OutboxFile } from '../src/store/outbox-file.js';

/**
 * The outbox handed to its next holder (a restart after a crash, or another worker taking the unit):
 * the messages that confirmed posts here are not known there, only what the file says. Two posts with
 * one text ("pong"), the first stored and confirmed, the second marked sent but never stored (the
 * process died, or lost its lease, between the mark and the socket write): the next holder must send
 * the second again, not take the first one's message for it.
 */

const dir = mkdtempSync(join(tmpdir(), 'gw-next-holder-'));
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => vi.useRealTimers());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const own = (msgNum: number, text: string): ChatMessage =>
  ({ object: 'chat_message', msg_num: msgNum, message: text, user_id: 'bot', created: new Date().toISOString() }) as ChatMessage;

/** One holder of the outbox: `history` is what the service stored; a look-up offers the bot's messages past `after`. */
function holder(file: OutboxFile, history: ChatMessage[], sends: { value: boolean }) {
  const posted: string[] = [];
  const outbox: ChatOutbox = new ChatOutbox({
    file, chatId: 'chat-1', log: pino({ level: 'silent' }), rate: { perSecond: 100, burst: 100 },
    post: (text) => {
      posted.push(text);
      // The service stores it only when this holder's socket still works.
      if (sends.value) history.push(own(history.length + 20, text));
      return true;
    },
    cursor: () => 10,
    handled: () => true,
    lookUp: async (after) => {
      for (const message of history) if (message.msg_num > after) outbox.confirm(message);
    },
  });
  return { outbox, posted };
}

const settle = (ms = 0) => vi.advanceTimersByTimeAsync(ms);

/** A holder caught up, with one pong sent (and stored, msg_num 20). */
async function onePongSent(file = OutboxFile.memory()) {
  const history: ChatMessage[] = [];
  const sends = { value: true };
  const h = holder(file, history, sends);
  h.outbox.caughtUp();
  void h.outbox.enqueue('pong').catch(() => undefined);
  await settle();
  return { file, history, sends, h };
}

describe('ChatOutbox handed to its next holder', () => {
  it('a post marked sent but never stored is sent again, though an older post with its text was confirmed', async () => {
    const file = OutboxFile.memory();
    const history: ChatMessage[] = [];
    const first = holder(file, history, { value: true });
    first.outbox.caughtUp();
    void first.outbox.enqueue('pong').catch(() => undefined);
    await settle();
    await first.outbox.reconcile(); // the history shows the first pong: confirmed
    expect(first.outbox.pending).toBe(0);

    // The second pong is marked sent, then the process dies before the service stores it.
    const dying = holder(file, history, { value: false });
    dying.outbox.caughtUp();
    void dying.outbox.enqueue('pong').catch(() => undefined);
    await settle();
    expect(dying.posted).toEqual(['pong']);
    expect(history).toHaveLength(1);
    dying.outbox.stop();

    const next = holder(file, history, { value: true });
    await next.outbox.reconcile();
    await settle();
    expect(next.posted, 'the lost pong sent again').toEqual(['pong']);
    expect(history.map((message) => message.message)).toEqual(['pong', 'pong']);
  });

  it('a confirmation moves every post still waiting past it, in the file', async () => {
    const { file, history, sends, h } = await onePongSent();
    sends.value = false; // the second is written to a socket that is already gone
    void h.outbox.enqueue('pong').catch(() => undefined);
    await settle();
    expect(file.forChat('chat-1').map((item) => [item.state, item.sentAfter])).toEqual([['sent', 10], ['sent', 10]]);
    h.outbox.confirm(history[0]!);
    expect(file.forChat('chat-1').map((item) => [item.state, item.sentAfter])).toEqual([['sent', 20]]);
    h.outbox.stop();
  });

  it('on disk, a confirmation is one journal line: the next holder reads the mark and the posts moved past it', async () => {
    const path = join(dir, 'moved', 'outbox.jsonl');
    const { file, history, sends, h } = await onePongSent(OutboxFile.open(path));
    sends.value = false;
    void h.outbox.enqueue('pong').catch(() => undefined);
    await settle();
    const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    h.outbox.confirm(history[0]!);
    const after = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    expect(after.slice(0, -1)).toEqual(lines);
    expect(Object.keys(JSON.parse(after.at(-1)!) as object).sort()).toEqual(['confirmed', 'del', 'put']);
    const next = OutboxFile.open(path);
    expect(next.confirmedThrough('chat-1')).toBe(20);
    expect(next.forChat('chat-1').map((item) => [item.state, item.sentAfter])).toEqual(file.forChat('chat-1').map((item) => [item.state, item.sentAfter]));
    expect(next.forChat('chat-1').map((item) => [item.state, item.sentAfter])).toEqual([['sent', 20]]);
    h.outbox.stop();
    // A history reset: the mark forgotten and the sent post looked for from the start, in one line.
    const resetting = holder(next, [], { value: false });
    resetting.outbox.historyReset();
    const reopened = OutboxFile.open(path);
    expect([reopened.confirmedThrough('chat-1'), reopened.forChat('chat-1').map((item) => item.sentAfter)]).toEqual([0, [0]]);
  });

  it('a post sent after a confirmation is looked for past it, even where the cursor is behind', async () => {
    const { file, sends, h } = await onePongSent();
    await h.outbox.reconcile();
    sends.value = false;
    void h.outbox.enqueue('pong').catch(() => undefined);
    await settle();
    expect(file.forChat('chat-1').map((item) => [item.state, item.sentAfter])).toEqual([['sent', 20]]);
    h.outbox.stop();
  });

  it('posts left by the previous holder are not moved by a message the stream brings before the catch-up\'s read', async () => {
    // Two pongs the previous holder sent, both stored (msg_nums 21 and 22), neither confirmed there.
    const file = OutboxFile.memory();
    const history = [own(21, 'pong'), own(22, 'pong')];
    for (const id of ['x', 'y']) file.add({ id, chatId: 'chat-1', text: 'pong', state: 'sent', sentAfter: 10, queuedAt: 0 });
    const next = holder(file, history, { value: true });
    // The stream hands on 22 before the catch-up's history read reaches 21: it confirms the older post.
    next.outbox.confirm(history[1]!);
    expect(file.forChat('chat-1').map((item) => [item.id, item.sentAfter])).toEqual([['y', 10]]);
    await next.outbox.reconcile();
    await settle();
    expect(next.posted, 'both were stored: neither is sent again').toEqual([]);
    expect(next.outbox.pending).toBe(0);
  });

  it('a history reset forgets the chat\'s confirming msg_num: the new numbering starts again', async () => {
    const { file, h } = await onePongSent();
    await h.outbox.reconcile();
    expect(file.confirmedThrough('chat-1')).toBe(20);
    h.outbox.historyReset();
    expect(file.confirmedThrough('chat-1')).toBe(0);
    h.outbox.stop();
  });
});
