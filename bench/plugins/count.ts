import { definePlugin } from '../../src/index.js';

/**
 * The last link of the throughput bench's chain: counts what reached it and stamps the first and the
 * last arrival, for the bench (same process) to read through a global.
 */
export interface CountBoard {
  target: number;
  count: number;
  firstAt: number;
  lastAt: number;
  /** Shared with the bench's feeder thread: how many were taken. */
  taken?: Int32Array;
  done?: () => void;
}

export function countBoard(): CountBoard {
  const holder = globalThis as { __groupwireBenchCount?: CountBoard };
  holder.__groupwireBenchCount ??= { target: Number.POSITIVE_INFINITY, count: 0, firstAt: 0, lastAt: 0 };
  return holder.__groupwireBenchCount;
}

const passThrough = { safeParse: (value: unknown) => ({ success: true as const, data: value ?? {} }) };

export default definePlugin({
  name: 'bench-count',
  options: passThrough as never,
  create() {
    const board = countBoard();
    return {
      handle(_ctx, next) {
        const now = performance.now();
        if (board.count === 0) board.firstAt = now;
        board.count += 1;
        board.lastAt = now;
        if (board.taken) board.taken[0] = board.count;
        if (board.count >= board.target) board.done?.();
        return next();
      },
    };
  },
});
