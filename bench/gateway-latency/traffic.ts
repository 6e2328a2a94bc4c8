import { setTimeout as sleep } from 'node:timers/promises';
import type WebSocket from 'ws';
import type { RawIrc } from '../lib/raw-irc.js';
import { Marks, type Point, type Times } from './marks.js';

/** Where the bench's lines are said: an IRC client in the channel, or a chat member over his socket. */
export interface Source {
  say(text: string): void;
}

export function ircSource(talker: RawIrc, channel: string): Source {
  return { say: (text) => talker.send(`PRIVMSG ${channel} :${text}`) };
}

export function chatSource(socket: WebSocket): Source {
  return { say: (text) => socket.send(JSON.stringify({ object: 'chat_post', message: text })) };
}

/**
 * Says `count` lines tagged `tag` at `perSecond` on a fixed schedule (a late wake-up does not push the
 * later lines back), then waits, up to `patienceMs` after the last, until every line was seen at every
 * point of `until`. Answers each line's times; a line missing a point was not seen there in time.
 * With `settleMs`, it then keeps watching that long for lines seen twice (read with `marks.arrivals`).
 */
export async function saySteadily(
  source: Source, marks: Marks, tag: string, count: number, perSecond: number, until: readonly Point[], patienceMs = 15_000, settleMs = 0,
): Promise<Times[]> {
  const lines = marks.open(tag);
  const interval = 1000 / perSecond;
  const start = performance.now() + 20;
  for (let n = 0; n < count; n += 1) {
    const wait = start + n * interval - performance.now();
    if (wait >= 1) await sleep(Math.floor(wait));
    marks.sent(tag, n, performance.now());
    source.say(Marks.text(tag, n));
  }
  const complete = () => [...lines.values()].filter((times) => until.every((point) => times[point] !== undefined)).length;
  const deadline = performance.now() + patienceMs;
  while (complete() < count && performance.now() < deadline) await sleep(20);
  if (settleMs > 0) await sleep(settleMs);
  marks.close(tag);
  return Array.from({ length: count }, (_, n) => lines.get(n) ?? {});
}

/** Says a probe every 250 ms until one is seen at `point`: the path is up end to end (a fresh supervisor is still joining). */
export async function untilFlowing(source: Source, marks: Marks, tag: string, point: Point, timeoutMs = 60_000): Promise<void> {
  const lines = marks.open(tag);
  const deadline = performance.now() + timeoutMs;
  try {
    for (let n = 0; ![...lines.values()].some((times) => times[point] !== undefined); n += 1) {
      if (performance.now() > deadline) throw new Error(`no probe ${tag} reached ${point} within ${timeoutMs / 1000} s`);
      marks.sent(tag, n, performance.now());
      source.say(Marks.text(tag, n));
      await sleep(250);
    }
  } finally {
    marks.close(tag);
  }
}
