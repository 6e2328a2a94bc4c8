import { setTimeout as sleep } from 'node:timers/promises';
import type { Sides } from './sides.js';
import type { Origin, Point, Tally } from './tally.js';

/** One stream of lines of a long bench: from `origin`, `perSecond`, every `pingEvery`th a `!pingn` (0: none). */
export interface Stream {
  origin: 'c' | 'i' | 'h';
  perSecond: number;
  pingEvery?: number;
}

/**
 * Says each stream's lines on a fixed schedule of its own (a late wake-up does not push the later
 * lines back: the offered rate is kept, as people keep talking whether the bot keeps up or not), for
 * `seconds` (or until `signal` aborts).
 */
export async function speak(sides: Sides, streams: readonly Stream[], seconds: number, signal?: AbortSignal): Promise<void> {
  const start = performance.now() + 20;
  const end = start + seconds * 1000;
  await Promise.all(streams.map(async ({ origin, perSecond, pingEvery = 0 }) => {
    const interval = 1000 / perSecond;
    // Spread the streams' first lines over one interval, so they do not all fall on the same millisecond.
    const offset = (interval * streams.findIndex((s) => s.origin === origin)) / streams.length;
    for (let n = 0; ; n += 1) {
      const due = start + offset + n * interval;
      if (due >= end || signal?.aborted) return;
      const wait = due - performance.now();
      if (wait >= 1) await sleep(Math.floor(wait));
      sides.say(origin, pingEvery > 0 && (n + 1) % pingEvery === 0);
    }
  }));
}

/** Says a probe from `origin` (p: the chat, q: IRC) every 500 ms until one is seen at `point`: that path is up end to end. */
export async function untilFlowing(sides: Sides, tally: Tally, origin: Extract<Origin, 'p' | 'q'>, point: Exclude<Point, 'pong'>, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const probes = () => [...tally.lines.values()].filter((line) => line.origin === origin);
  while (!probes().some((line) => line.seen[point])) {
    if (performance.now() > deadline) throw new Error(`no probe from ${origin === 'p' ? 'the chat' : 'IRC'} reached ${point} within ${timeoutMs / 1000} s`);
    sides.say(origin);
    await sleep(500);
  }
}

/**
 * Waits after the traffic until every line showed everywhere it should, or nothing new showed for
 * `stallMs`, or `maxMs` passed. Answers how long it waited, the time the last missing showing came
 * (from the call) and whether it ended complete.
 */
export async function drain(tally: Tally, stallMs: number, maxMs: number, onWait?: () => Promise<void>): Promise<{ waitedMs: number; complete: boolean; stalled: boolean }> {
  const start = performance.now();
  let missing = tally.missing();
  let progressAt = start;
  while (missing > 0) {
    const now = performance.now();
    if (now - progressAt > stallMs) return { waitedMs: now - start, complete: false, stalled: true };
    if (now - start > maxMs) return { waitedMs: now - start, complete: false, stalled: false };
    await (onWait ? onWait() : sleep(500));
    const left = tally.missing();
    if (left < missing) progressAt = performance.now();
    missing = left;
  }
  return { waitedMs: performance.now() - start, complete: true, stalled: false };
}

/** The time the last line of some origin showed at a point (the end of a drain), or undefined when none did. */
export function lastShowing(tally: Tally, origin: Origin, point: Point): number | undefined {
  let last: number | undefined;
  for (const line of tally.lines.values()) {
    const first = line.origin === origin ? line.seen[point]?.first : undefined;
    if (first !== undefined && (last === undefined || first > last)) last = first;
  }
  return last;
}
