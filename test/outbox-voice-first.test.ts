import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { ChatOutbox, PostFailedError } from '../src/supervisor/chat-outbox.js';
import { OutboxFile } from '../src/store/outbox-file.js';

/**
 * #32 part 3 (the overload bench's `!pingn` p99 of 97.5 s): the bot's own voice (a plugin's reply, a
 * post without a relay tag) does not wait behind a backlog of relayed lines in the same chat. It goes
 * out with the next token of reply_rate; relayed lines keep their order among themselves, replies
 * theirs, and a post's confirmation and refusals follow the order posts were sent in.
 */
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => vi.useRealTimers());

function own(msgNum: number, text: string): ChatMessage {
  return { object: 'chat_message', msg_num: msgNum, message: text, user_id: 'bot', created: new Date().toISOString() } as ChatMessage;
}

function harness(file = OutboxFile.memory()) {
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
  return { outbox, posted, file };
}

const relay = (n: number) => ({ key: `line-${n}`, bus: true, first: true });
const settle = (ms = 0) => vi.advanceTimersByTimeAsync(ms);

describe('the bot\'s voice before relayed lines', () => {
  it('a reply asked while relayed lines wait goes out next; relayed lines and replies each keep their order', async () => {
    const { outbox, posted } = harness();
    outbox.caughtUp();
    for (let n = 0; n < 5; n += 1) outbox.enqueue(`relayed ${n}`, undefined, relay(n)).catch(() => undefined);
    await settle();
    outbox.enqueue('reply a', { chatId: 'chat-1', msgNum: 1 }).catch(() => undefined);
    outbox.enqueue('reply b', { chatId: 'chat-1', msgNum: 2 }).catch(() => undefined);
    // One token a second: seven posts take six more seconds.
    await settle(6_000);
    expect(posted).toEqual(['relayed 0', 'reply a', 'reply b', 'relayed 1', 'relayed 2', 'relayed 3', 'relayed 4']);
    outbox.stop();
  });

  it('a refusal is matched with the oldest post by the order they were sent, not the order they were asked', async () => {
    const { outbox, posted } = harness();
    outbox.caughtUp();
    outbox.enqueue('relayed 0', undefined, relay(0)).catch(() => undefined);
    const second = outbox.enqueue('relayed 1', undefined, relay(1));
    second.catch(() => undefined);
    await settle();
    outbox.confirm(own(11, 'relayed 0'));
    const reply = outbox.enqueue('reply', { chatId: 'chat-1', msgNum: 1 });
    const replyFailed = reply.then(() => 'posted', (error: unknown) => (error instanceof PostFailedError ? 'failed' : 'other'));
    await settle(2_000);
    // Asked: relayed 1 before the reply; sent: the reply first.
    expect(posted).toEqual(['relayed 0', 'reply', 'relayed 1']);
    outbox.refused({ type: 'invalid_value', extra: 'channel' });
    await settle();
    expect(await replyFailed).toBe('failed');
    expect(outbox.pending).toBe(1);
    outbox.confirm(own(12, 'relayed 1'));
    expect(await second).toMatchObject({ msg_num: 12 });
    outbox.stop();
  });

  it('two sent posts of one text are confirmed in the order they were sent, after a restart too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'outbox-voice-'));
    try {
      const path = join(dir, 'outbox.jsonl');
      const first = harness(OutboxFile.open(path));
      first.outbox.caughtUp();
      first.outbox.enqueue('same', undefined, relay(0)).catch(() => undefined);
      first.outbox.enqueue('same', undefined, relay(1)).catch(() => undefined);
      await settle();
      first.outbox.enqueue('same', { chatId: 'chat-1', msgNum: 1 }).catch(() => undefined);
      await settle(1_000);
      // Sent: relayed 0, then the reply (asked after relayed 1); relayed 1 waits.
      first.outbox.stop();
      const reopened = OutboxFile.open(path);
      expect(reopened.sent('chat-1').map((item) => item.relay?.key ?? 'reply')).toEqual(['line-0', 'reply']);
      const second = harness(reopened);
      const relayed: Array<{ key: string; msgNum: number }> = [];
      const outbox = new ChatOutbox({
        file: reopened, chatId: 'chat-1', log: pino({ level: 'silent' }), rate: { perSecond: 1, burst: 1 },
        post: () => true, cursor: () => 10, handled: () => false,
        relayed: (tag, message) => relayed.push({ key: tag.key, msgNum: message.msg_num }),
        lookUp: async () => {
          outbox.confirm(own(11, 'same'));
          outbox.confirm(own(12, 'same'));
        },
      });
      second.outbox.stop();
      await outbox.reconcile();
      expect(relayed).toEqual([{ key: 'line-0', msgNum: 11 }]);
      expect(reopened.byOrigin('chat-1', 'chat-1', 1)[0]).toMatchObject({ state: 'done', result: { msg_num: 12 } });
      outbox.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
