import { describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { FirstStartFrames, planFirstStart, SOCKET_HISTORY } from '../src/chat/first-start.js';

/** A first start's position from the socket's history frames (src/chat/first-start.ts). */

const frame = (msgNum: number) => ({ msg_num: msgNum, message: `m${msgNum}` }) as ChatMessage;
const frames = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => frame(from + k));

describe('planFirstStart', () => {
  test('history not wanted: the newest msg_num, whatever order the frames came in; 0 for an empty chat', () => {
    expect(planFirstStart([frame(72), frame(71), frame(73)], 0)).toEqual({ cursor: 73, handOn: [] });
    expect(planFirstStart([], 0)).toEqual({ cursor: 0, handOn: [] });
  });

  test('N wanted: the N most recent are handed on, the cursor just below them', () => {
    const plan = planFirstStart(frames(71, 120), 3);
    expect(plan).toEqual({ cursor: 117, handOn: [frame(118), frame(119), frame(120)] });
    expect(planFirstStart(frames(1, 2), 5)).toEqual({ cursor: 0, handOn: [frame(1), frame(2)] });
  });

  test('frames missing or with a gap: the REST read decides', () => {
    expect(planFirstStart(frames(118, 120), 10)).toEqual({ readHistory: true });
    expect(planFirstStart([frame(1), frame(3)], 5)).toEqual({ readHistory: true });
  });
});

describe('FirstStartFrames', () => {
  test('keeps the socket\'s 50 and gives them at the end; a frame past them ends the history and is live', async () => {
    const gathering = new FirstStartFrames();
    const given = gathering.begin();
    for (const message of frames(1, SOCKET_HISTORY)) expect(gathering.take(message)).toBe(true);
    expect(gathering.take(frame(SOCKET_HISTORY + 1))).toBe(false);
    expect(gathering.past).toBe(true);
    expect((await given)?.map((m) => m.msg_num)).toEqual(frames(1, SOCKET_HISTORY).map((m) => m.msg_num));
  });

  test('a new socket abandons the earlier history: its waiter gets nothing', async () => {
    const gathering = new FirstStartFrames();
    const first = gathering.begin();
    gathering.take(frame(1));
    const second = gathering.begin();
    expect(await first).toBeUndefined();
    gathering.take(frame(1));
    gathering.finish();
    expect(await second).toEqual([frame(1)]);
  });
});
