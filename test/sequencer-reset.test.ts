import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { ChatSequencer, type HistoryReset } from '../src/chat/sequencer.js';

/** The sequencer's side of a history that goes backwards (the real-service test is history-reset.test.ts). */

const msg = (n: number): ChatMessage => ({
  object: 'chat_message', id: `m${n}`, created: new Date().toISOString(), version: 1, user_id: 'u1', group_id: 'g1',
  chat_id: 'c1', msg_num: n, message: `message ${n}`, type: 'chat_msg_type_normal',
} as unknown as ChatMessage);

function harness(cursor: number, history: number[], resetHook: (reset: HistoryReset) => Promise<void> = async () => undefined) {
  const delivered: number[] = [];
  const resets: HistoryReset[] = [];
  const seq = new ChatSequencer({
    log: pino({ level: 'silent' }),
    botUserId: 'bot',
    cursor,
    historyOnFirstStart: 0,
    async *fetchAfter(after) {
      for (const n of history) if (n > after) yield msg(n);
    },
    fetchLatest: async (count) => history.slice(-count).map(msg),
    deliver: async (message) => void delivered.push(message.msg_num),
    own: () => undefined,
    saveCursor: () => undefined,
    reset: async (reset) => {
      resets.push(reset);
      await resetHook(reset);
    },
  });
  /** The socket opens with history: its frames, then the pong. */
  const connect = (frames: number[]) => {
    seq.opened(true);
    for (const n of frames) seq.live(msg(n), true);
    seq.historyEnded();
  };
  return { seq, delivered, resets, connect };
}

describe('ChatSequencer: history that goes backwards', () => {
  it('history on connect ending below the cursor: one reset, then the new history from msg_num 1', async () => {
    const h = harness(20, [1, 2, 3]);
    h.connect([1, 2, 3]);
    await h.seq.idle();
    expect(h.resets).toEqual([{ reason: 'behind', previousCursor: 20, newest: 3 }]);
    expect(h.delivered).toEqual([1, 2, 3]);
    expect(h.seq.position).toBe(3);
    // A later reconnect agrees with the cursor: nothing more.
    h.connect([1, 2, 3]);
    await h.seq.idle();
    expect(h.resets).toHaveLength(1);
    expect(h.delivered).toEqual([1, 2, 3]);
  });

  it('an empty chat (no history frame at all) under a cursor is a reset too', async () => {
    const h = harness(5, []);
    h.connect([]);
    await h.seq.idle();
    expect(h.resets).toEqual([{ reason: 'behind', previousCursor: 5, newest: 0 }]);
    expect(h.seq.position).toBe(0);
  });

  it('history that reaches the cursor is no reset, and neither is a live frame at or below it', async () => {
    const h = harness(3, [1, 2, 3, 4, 5]);
    h.connect([1, 2, 3, 4, 5]);
    h.seq.live(msg(4));
    await h.seq.idle();
    expect(h.resets).toEqual([]);
    expect(h.delivered).toEqual([4, 5]);
  });

  it('a socket that opens while a reset for a chat made again is telling the plugins: one reset, not two', async () => {
    let release!: () => void;
    const h = harness(20, [1, 2, 3], () => new Promise<void>((done) => {
      release = done;
    }));
    const recreated = h.seq.recreated();
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The cursor is still the old one while the hook runs: the history below it must not count.
    h.connect([1, 2, 3]);
    release();
    await recreated;
    await h.seq.idle();
    expect(h.resets.map((reset) => reset.reason)).toEqual(['recreated']);
    expect(h.delivered).toEqual([1, 2, 3]);
  });
});
