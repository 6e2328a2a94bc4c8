import { pino } from 'pino';
import { describe, expect, test } from 'vitest';
import { statusTable } from '../src/cli/status-table.js';
import { BACKLOG_RULES, BacklogWatch, type BacklogSide } from '../src/ops/backlog-watch.js';
import type { StatusSnapshot } from '../src/ops/status-snapshot.js';
import { DurableQueue } from '../src/store/durable-queue.js';
import { OutboxFile, type OutboxItem } from '../src/store/outbox-file.js';
import { ChatOutbox } from '../src/supervisor/chat-outbox.js';

/**
 * #32 part 3: a side's backlog on /status and /metrics, and the warning that names the slow side and
 * the rate it sustains, once, and again only after it caught up and fell behind again. Driven by a
 * clock of the test's own and backlogs it sets; the log is captured.
 */

function captured() {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { log, lines, warnings: () => lines.filter((line) => line.level === 40) };
}

describe('BacklogWatch', () => {
  test('a side that keeps growing is said once (bot, side, rates in and taken, depth, age, the limit), until it caught up; then again', () => {
    const clock = { now: 1_000_000 };
    const irc = { depth: 0, oldestAt: undefined as number | undefined, pushed: 0, taken: 0, limit: 'rate: 10/s, burst 4' };
    const chat = { depth: 0, oldestAt: undefined as number | undefined, pushed: 0, taken: 0, limit: 'reply_rate: 10/s, burst 10' };
    const sides = (): BacklogSide[] => [
      { bot: 'bridge', side: 'relay-irc #soak', backlog: { ...irc } },
      { bot: 'bridge', side: 'chat general', backlog: { ...chat } },
    ];
    const { log, lines, warnings } = captured();
    const watch = new BacklogWatch(sides, log, () => clock.now);
    /** Seconds pass: IRC gets 20 lines a second and takes 6; the chat keeps up (10 in, 10 out). */
    const run = (seconds: number, arriving: number, taking: number) => {
      for (let s = 0; s < seconds; s += BACKLOG_RULES.sampleEveryMs / 1000) {
        clock.now += BACKLOG_RULES.sampleEveryMs;
        const took = Math.min(irc.depth + arriving * 5, taking * 5);
        irc.pushed += arriving * 5;
        irc.taken += took;
        if (irc.depth === 0 && arriving > 0) irc.oldestAt = clock.now - 5000;
        irc.depth += arriving * 5 - took;
        // The oldest waiting line: it came depth / arriving seconds ago (the rest left in order).
        if (irc.depth === 0) irc.oldestAt = undefined;
        else if (arriving > 0) irc.oldestAt = Math.min(clock.now, Math.max(irc.oldestAt ?? clock.now, clock.now - (irc.depth / arriving) * 1000));
        chat.pushed += 50;
        chat.taken += 50;
        watch.sample();
      }
    };
    run(25, 20, 6);
    expect(warnings()).toEqual([]);
    run(10, 20, 6);
    expect(warnings()).toHaveLength(1);
    const warning = warnings()[0]!;
    expect(warning).toMatchObject({ bot: 'bridge', side: 'relay-irc #soak', arrivingPerSecond: 20, takenPerSecond: 6, limit: 'rate: 10/s, burst 4', lines: irc.depth });
    expect(warning.msg).toContain('relay-irc #soak is falling behind: lines arrive at 20.0/s and it takes 6.0/s (limited by rate: 10/s, burst 4)');
    const status = watch.status();
    expect(status.find((side) => side.side === 'relay-irc #soak')).toMatchObject({ behind: true, lines: irc.depth, arrivingPerSecond: 20, takenPerSecond: 6 });
    expect(status.find((side) => side.side === 'relay-irc #soak')!.warning).toContain('falling behind');
    expect(status.find((side) => side.side === 'chat general')).toMatchObject({ behind: false, lines: 0, oldestSeconds: 0, arrivingPerSecond: 10, takenPerSecond: 10 });
    // Still behind for minutes: nothing more is said.
    run(120, 20, 6);
    expect(warnings()).toHaveLength(1);
    expect(watch.status()[0]!.oldestSeconds).toBeGreaterThan(60);
    // The load drops: the side drains at its rate, says it caught up.
    run(600, 0, 10);
    expect(irc.depth).toBe(0);
    expect(watch.status()[0]).toMatchObject({ behind: false, lines: 0 });
    expect(lines.filter((line) => line.level === 30 && String(line.msg).includes('relay-irc #soak caught up'))).toHaveLength(1);
    // And behind again: said again; `groupwire status` prints it.
    run(40, 20, 6);
    expect(warnings()).toHaveLength(2);
    const snapshot = {
      version: '0.1.0', now: new Date(clock.now).toISOString(), startedAt: new Date(0).toISOString(), uptimeSeconds: 1, pid: 1, ready: true,
      bots: [], backlogs: watch.status(), gateways: [], errors: [], process: { rssBytes: 0, heapUsedBytes: 0, eventLoopLagMs: 0 },
    } satisfies StatusSnapshot;
    const text = statusTable(snapshot, 'http://127.0.0.1:9464');
    expect(text).toMatch(/Falling behind:\n  bridge: relay-irc #soak is falling behind: lines arrive at [0-9.]+\/s and it takes [0-9.]+\/s \(limited by rate: 10\/s, burst 4\)/);
    expect(text).not.toContain('chat general');
  });

  test('lines that wait long are said too, though few', () => {
    const clock = { now: 1_000_000 };
    const backlog = { depth: 3, oldestAt: clock.now, pushed: 3, taken: 0 };
    const { log, warnings } = captured();
    const watch = new BacklogWatch(() => [{ bot: 'b', side: 'relay-slack #general', backlog: { ...backlog } }], log, () => clock.now);
    for (let i = 0; i < 12; i += 1) {
      clock.now += 5000;
      watch.sample();
    }
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ side: 'relay-slack #general', lines: 3, oldestSeconds: 60, limit: 'its platform' });
  });

  test('the status of a side reads no waiting item: as many reads with 50,000 waiting as with 10', () => {
    const readsAt = (waiting: number) => {
      const reads = { value: 0 };
      const counted = <T extends object>(item: T): T => new Proxy(item, { get: (target, key, receiver) => {
        reads.value += 1;
        return Reflect.get(target, key, receiver);
      } });
      const queue = DurableQueue.memory<{ text: string }>({ maxItems: 100_000 });
      queue.push(...Array.from({ length: waiting }, (_, n) => counted({ text: `line ${n}` })));
      const file = OutboxFile.memory();
      for (let n = 0; n < waiting; n += 1) {
        const item: OutboxItem = { id: `p${n}`, chatId: 'c', text: `line ${n}`, state: 'queued', queuedAt: n, relay: { key: `k${n}`, bus: true, first: true } };
        file.add(counted(item));
      }
      const outbox = new ChatOutbox({
        file, chatId: 'c', log: pino({ level: 'silent' }), rate: { perSecond: 1, burst: 1 }, post: () => true, cursor: () => 0, lookUp: async () => undefined,
      });
      const { log } = captured();
      const watch = new BacklogWatch(() => [
        { bot: 'b', side: 'chat c', backlog: outbox.backlog },
        { bot: 'b', side: 'relay-irc #c', backlog: queue.backlog },
      ], log);
      const before = reads.value;
      for (let i = 0; i < 10; i += 1) {
        watch.sample();
        expect(watch.status().map((side) => side.lines)).toEqual([waiting, waiting]);
      }
      return reads.value - before;
    };
    const small = readsAt(10);
    expect(readsAt(50_000)).toBe(small);
  });
});
