import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { ChatSequencer, type Delivery } from '../src/chat/sequencer.js';

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const BOT = 'bot-1';

function msg(msgNum: number, userId = 'user-9'): ChatMessage {
  return {
    object: 'chat_message', id: `m${msgNum}`, created: new Date(Date.now() - 1_000).toISOString(), version: 1,
    user_id: userId, group_id: 'g', chat_id: 'c', type: 'chat_msg_type_normal', message: `text ${msgNum}`, msg_num: msgNum,
    display_name: 'Someone', user_name: 'someone', profile_photo_url: '', profile_privacy: '', email: '',
  };
}

interface Harness {
  seq: ChatSequencer;
  history: ChatMessage[];
  delivered: Array<[number, boolean]>;
  deliveries: Delivery[];
  owned: number[];
  saved: number[];
  fetches: number[];
  latestAsked: number[];
  logLines: () => Array<Record<string, unknown>>;
}

interface Setup {
  cursor?: number;
  historyOnFirstStart?: number;
  history?: number[];
  failFetches?: number;
}

function harness(setup: Setup = {}): Harness {
  const chunks: string[] = [];
  const history = (setup.history ?? []).map((n) => msg(n));
  let failures = setup.failFetches ?? 0;
  const h: Omit<Harness, 'seq'> = {
    history, delivered: [], deliveries: [], owned: [], saved: [], fetches: [], latestAsked: [],
    logLines: () => chunks.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>),
  };
  const seq = new ChatSequencer({
    log: pino({ level: 'debug' }, { write: (chunk: string) => void chunks.push(chunk) }),
    botUserId: BOT,
    cursor: setup.cursor,
    historyOnFirstStart: setup.historyOnFirstStart ?? 0,
    async *fetchAfter(after) {
      h.fetches.push(after);
      if (failures > 0) {
        failures -= 1;
        throw new Error('history unavailable');
      }
      for (const message of [...history].sort((a, b) => a.msg_num - b.msg_num)) if (message.msg_num > after) yield message;
    },
    async fetchLatest(count) {
      h.latestAsked.push(count);
      if (failures > 0) {
        failures -= 1;
        throw new Error('history unavailable');
      }
      return [...history].sort((a, b) => a.msg_num - b.msg_num).slice(-count);
    },
    async deliver(message, delivery) {
      h.delivered.push([message.msg_num, delivery.backfilled]);
      h.deliveries.push(delivery);
    },
    own: (message) => void h.owned.push(message.msg_num),
    saveCursor: (msgNum) => void h.saved.push(msgNum),
  });
  return { ...h, seq };
}

describe('ChatSequencer', () => {
  it('hands live messages on in order, each once, saving the cursor after each', async () => {
    const h = harness({ cursor: 0 });
    h.seq.opened();
    for (const n of [1, 2, 3]) h.seq.live(msg(n));
    await h.seq.idle();
    expect(h.delivered).toEqual([[1, false], [2, false], [3, false]]);
    expect(h.saved).toEqual([1, 2, 3]);
    expect(h.seq.position).toBe(3);
    expect(h.deliveries[0]!.ageMs).toBeGreaterThanOrEqual(1_000);
  });

  it('drops messages at or below the cursor', async () => {
    const h = harness({ cursor: 3 });
    for (const n of [2, 3, 4, 4, 1]) h.seq.live(msg(n));
    await h.seq.idle();
    expect(h.delivered).toEqual([[4, false]]);
    expect(h.seq.stats.duplicates).toBe(4);
    expect(h.saved).toEqual([4]);
  });

  it('fills a gap from history, from the cursor, before the live message past it', async () => {
    const h = harness({ cursor: 3, history: [1, 2, 3, 4, 5, 6] });
    h.seq.live(msg(6));
    await h.seq.idle();
    expect(h.fetches).toEqual([3]);
    expect(h.delivered).toEqual([[4, true], [5, true], [6, false]]);
    expect(h.saved).toEqual([4, 5, 6]);
    expect(h.seq.stats).toMatchObject({ gapFills: 1, delivered: 3, backfilled: 2 });
  });

  it('the bot\'s own messages go to own (the outbox) first, then to the plugins in their place, and move the cursor', async () => {
    const h = harness({ cursor: 3 });
    h.history.push(msg(4), msg(5, BOT), msg(6));
    h.seq.live(msg(7));
    h.seq.live(msg(8, BOT));
    h.seq.live(msg(9));
    await h.seq.idle();
    expect(h.owned).toEqual([5, 8]);
    expect(h.delivered).toEqual([[4, true], [5, true], [6, true], [7, false], [8, false], [9, false]]);
    expect(h.saved).toEqual([4, 5, 6, 7, 8, 9]);
    expect(h.seq.stats.own).toBe(2);
  });

  it('catches up on opened(): everything after the cursor, backfilled, before live ones', async () => {
    const h = harness({ cursor: 2, history: [1, 2, 3, 4, 5] });
    h.seq.opened();
    h.seq.live(msg(5));
    h.seq.live(msg(6));
    await h.seq.idle();
    expect(h.fetches).toEqual([2]);
    expect(h.delivered).toEqual([[3, true], [4, true], [5, true], [6, false]]);
    expect(h.seq.stats.duplicates).toBe(1);
  });

  it('a reconnect catches up again from where it stands', async () => {
    const h = harness({ cursor: 0, history: [1, 2] });
    h.seq.opened();
    await h.seq.idle();
    h.history.push(msg(3), msg(4));
    h.seq.opened();
    await h.seq.idle();
    expect(h.fetches).toEqual([0, 2]);
    expect(h.delivered.map(([n]) => n)).toEqual([1, 2, 3, 4]);
  });

  it('first start with historyOnFirstStart 0: the cursor goes to the latest, nothing is handed on', async () => {
    const h = harness({ history: [1, 2, 3, 10] });
    expect(h.seq.position).toBeUndefined();
    h.seq.opened();
    h.seq.live(msg(11));
    await h.seq.idle();
    expect(h.latestAsked).toEqual([1]);
    expect(h.delivered).toEqual([[11, false]]);
    expect(h.saved).toEqual([10, 11]);
  });

  it('first start: a live message the latest read already shows is still handed on', async () => {
    const h = harness({ history: [1, 2, 3] });
    h.seq.opened();
    h.history.push(msg(4)); // posted after the socket opened, before the read
    h.seq.live(msg(4));
    await h.seq.idle();
    expect(h.delivered).toEqual([[4, false]]);
  });

  it('first start in an empty chat starts at 0', async () => {
    const h = harness();
    h.seq.opened();
    await h.seq.idle();
    expect(h.seq.position).toBe(0);
    expect(h.saved).toEqual([0]);
  });

  it('first start with N > 0 hands on the latest N, backfilled', async () => {
    const h = harness({ historyOnFirstStart: 3, history: [1, 2, 3, 4, 5] });
    h.seq.opened();
    await h.seq.idle();
    expect(h.latestAsked).toEqual([3]);
    expect(h.delivered).toEqual([[3, true], [4, true], [5, true]]);
    expect(h.saved).toEqual([2, 3, 4, 5]);
  });

  it('a live frame before the first catch-up catches up first', async () => {
    const h = harness({ history: [1, 2] });
    h.seq.live(msg(3));
    await h.seq.idle();
    expect(h.delivered).toEqual([[3, false]]);
  });

  it('a failing history read is retried until it works, nothing skipped', async () => {
    vi.useFakeTimers();
    const h = harness({ cursor: 1, history: [1, 2, 3], failFetches: 2 });
    h.seq.opened();
    h.seq.live(msg(4));
    await vi.advanceTimersByTimeAsync(0);
    expect(h.fetches).toEqual([1]);
    expect(h.delivered).toEqual([]);
    await vi.advanceTimersByTimeAsync(2_000); // two waits of at most 500 and 1000 ms
    await h.seq.idle();
    expect(h.fetches).toEqual([1, 1, 1]);
    expect(h.delivered).toEqual([[2, true], [3, true], [4, false]]);
    const warnings = h.logLines().filter((line) => line.msg === 'could not fill in from history; trying again');
    expect(warnings).toHaveLength(2);
  });

  it('a read that breaks half-way resumes from the cursor without repeating', async () => {
    vi.useFakeTimers();
    const h = harness({ cursor: 0 });
    let calls = 0;
    const pages = [msg(1), msg(2), msg(3)];
    const seq = new ChatSequencer({
      log: pino({ level: 'silent' }), botUserId: BOT, cursor: 0, historyOnFirstStart: 0,
      async *fetchAfter(after) {
        h.fetches.push(after);
        calls += 1;
        for (const m of pages) {
          if (m.msg_num <= after) continue;
          if (calls === 1 && m.msg_num === 3) throw new Error('connection reset');
          yield m;
        }
      },
      fetchLatest: async () => [],
      deliver: async (m, d) => void h.delivered.push([m.msg_num, d.backfilled]),
      own: () => undefined,
      saveCursor: (n) => void h.saved.push(n),
    });
    seq.opened();
    await vi.advanceTimersByTimeAsync(1_000);
    await seq.idle();
    expect(h.fetches).toEqual([0, 2]);
    expect(h.delivered.map(([n]) => n)).toEqual([1, 2, 3]);
  });

  it('a failing first-start read is retried too', async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const h = harness({ history: [5], failFetches: 1 });
    h.seq.opened();
    await vi.advanceTimersByTimeAsync(499);
    expect(h.latestAsked).toEqual([1]);
    await vi.advanceTimersByTimeAsync(1);
    await h.seq.idle();
    expect(h.latestAsked).toEqual([1, 1]);
    expect(h.seq.position).toBe(5);
  });

  it('fill() looks past the cursor now', async () => {
    const h = harness({ cursor: 1, history: [1] });
    await h.seq.fill();
    h.history.push(msg(2, BOT));
    await h.seq.fill();
    expect(h.owned).toEqual([2]);
    expect(h.seq.position).toBe(2);
  });

  describe('a socket opened with history (a cursor exists)', () => {
    /** The service's history on connect: the 50 most recent messages, oldest first. */
    const onConnect = (h: Harness) => [...h.history].sort((a, b) => a.msg_num - b.msg_num).slice(-50);

    it('wants history with a cursor, and on a first start unless more than the socket\'s 50 are wanted', async () => {
      expect(harness({ cursor: 0 }).seq.wantsHistory).toBe(true);
      expect(harness({ history: [1, 2] }).seq.wantsHistory).toBe(true);
      expect(harness({ historyOnFirstStart: 50 }).seq.wantsHistory).toBe(true);
      const many = harness({ historyOnFirstStart: 60, history: [1, 2] });
      expect(many.seq.wantsHistory).toBe(false);
      many.seq.opened();
      await many.seq.idle();
      expect(many.seq.wantsHistory).toBe(true);
    });

    it('a first start takes its position from the history frames: no REST read, then live messages once', async () => {
      for (const count of [0, 1, 50]) {
        const h = harness({ history: Array.from({ length: count }, (_, index) => index + 1) });
        h.seq.opened(true);
        for (const m of onConnect(h)) h.seq.live(m, true);
        h.seq.historyEnded();
        h.seq.live(msg(count + 1));
        await h.seq.idle();
        expect(h.latestAsked, `${count} messages`).toEqual([]);
        expect(h.fetches, `${count} messages`).toEqual([]);
        expect(h.saved, `${count} messages`).toEqual([count, count + 1]);
        expect(h.delivered, `${count} messages`).toEqual([[count + 1, false]]);
      }
    });

    it('a first start with history_on_first_start hands on that many of the frames, backfilled, then live', async () => {
      const h = harness({ historyOnFirstStart: 3, history: [1, 2, 3, 4, 5] });
      h.seq.opened(true);
      for (const m of onConnect(h)) h.seq.live(m, true);
      h.seq.historyEnded();
      h.seq.live(msg(6));
      await h.seq.idle();
      expect(h.latestAsked).toEqual([]);
      expect(h.delivered).toEqual([[3, true], [4, true], [5, true], [6, false]]);
    });

    it('a first start takes frames past the socket\'s 50 as live: handed on once, in order, not backfilled', async () => {
      const h = harness({ history: Array.from({ length: 120 }, (_, index) => index + 1) });
      h.seq.opened(true);
      // Two messages posted after the socket opened, before the service answered the ping: still "history" frames.
      for (const m of [...onConnect(h), msg(121), msg(122)]) h.seq.live(m, true);
      h.seq.historyEnded();
      h.seq.live(msg(123));
      await h.seq.idle();
      expect(h.latestAsked).toEqual([]);
      expect(h.fetches).toEqual([]);
      expect(h.saved).toEqual([120, 121, 122, 123]);
      expect(h.delivered).toEqual([[121, false], [122, false], [123, false]]);
    });

    it('a first start whose frames cannot give what history_on_first_start wants reads the history as before', async () => {
      const h = harness({ historyOnFirstStart: 5, history: [1, 2, 3, 4, 5] });
      h.seq.opened(true);
      // Frames missing: the service has five messages and sent three.
      for (const m of onConnect(h).slice(-3)) h.seq.live(m, true);
      h.seq.historyEnded();
      await h.seq.idle();
      expect(h.latestAsked).toEqual([5]);
      expect(h.delivered).toEqual([[1, true], [2, true], [3, true], [4, true], [5, true]]);
    });

    it('a first start stopped before its history is all in still takes the position when it ends, and gives up after a while', async () => {
      const h = harness({ history: [1, 2, 3] });
      h.seq.opened(true);
      h.seq.stop();
      for (const m of onConnect(h)) h.seq.live(m, true);
      h.seq.historyEnded();
      await h.seq.idle();
      expect(h.saved).toEqual([3]);
      expect(h.delivered).toEqual([]);

      vi.useFakeTimers();
      const silent = harness({ history: [1, 2, 3] });
      silent.seq.opened(true);
      silent.seq.stop();
      let idle = false;
      void silent.seq.idle().then(() => {
        idle = true;
      });
      await vi.advanceTimersByTimeAsync(5_000);
      expect(idle).toBe(true);
      expect(silent.saved).toEqual([]);
    });

    it('a first start whose socket drops before the history is all in starts over at the next open', async () => {
      const h = harness({ history: [1, 2, 3] });
      h.seq.opened(true);
      h.seq.live(msg(1), true);
      h.seq.opened(true);
      for (const m of onConnect(h)) h.seq.live(m, true);
      h.seq.historyEnded();
      await h.seq.idle();
      expect(h.seq.position).toBe(3);
      expect(h.latestAsked).toEqual([]);
    });

    it('catches up from the frames: no history read; older ones dropped, missed ones backfilled, then live', async () => {
      const h = harness({ cursor: 3, history: [1, 2, 3, 4, 5] });
      h.seq.opened(true);
      for (const m of onConnect(h)) h.seq.live(m, true);
      h.seq.live(msg(6));
      await h.seq.idle();
      expect(h.fetches).toEqual([]);
      expect(h.latestAsked).toEqual([]);
      expect(h.delivered).toEqual([[4, true], [5, true], [6, false]]);
      expect(h.seq.stats.duplicates).toBe(3);
      expect(h.saved).toEqual([4, 5, 6]);
    });

    it('nothing new (or an empty chat): nothing read, nothing handed on', async () => {
      const quiet = harness({ cursor: 2, history: [1, 2] });
      quiet.seq.opened(true);
      for (const m of onConnect(quiet)) quiet.seq.live(m, true);
      const empty = harness({ cursor: 0 });
      empty.seq.opened(true);
      await Promise.all([quiet.seq.idle(), empty.seq.idle()]);
      for (const h of [quiet, empty]) {
        expect(h.fetches).toEqual([]);
        expect(h.delivered).toEqual([]);
        expect(h.saved).toEqual([]);
      }
    });

    it('more than 50 missed: the part before the frames is filled from history first, in one read', async () => {
      const h = harness({ cursor: 10, history: Array.from({ length: 100 }, (_, i) => i + 1) });
      h.seq.opened(true);
      for (const m of onConnect(h)) h.seq.live(m, true);
      await h.seq.idle();
      expect(h.fetches).toEqual([10]);
      expect(h.delivered.map(([n]) => n)).toEqual(Array.from({ length: 90 }, (_, i) => i + 11));
      expect(h.delivered.every(([, backfilled]) => backfilled)).toBe(true);
      expect(h.seq.stats).toMatchObject({ gapFills: 1, duplicates: 0 });
    });

    it('the bot\'s own posts in the history go to own, then on in their place, and move the cursor', async () => {
      const h = harness({ cursor: 1 });
      h.history.push(msg(1), msg(2, BOT), msg(3), msg(4, BOT));
      h.seq.opened(true);
      for (const m of onConnect(h)) h.seq.live(m, true);
      await h.seq.idle();
      expect(h.owned).toEqual([2, 4]);
      expect(h.delivered).toEqual([[2, true], [3, true], [4, true]]);
      expect(h.seq.position).toBe(4);
      expect(h.fetches).toEqual([]);
    });

    it('a socket that dropped half-way through its history: the next one hands on the rest, nothing twice', async () => {
      const h = harness({ cursor: 1, history: [1, 2, 3, 4, 5] });
      h.seq.opened(true);
      for (const m of onConnect(h).slice(0, 3)) h.seq.live(m, true); // 1, 2, 3, then the drop
      h.seq.opened(true);
      for (const m of onConnect(h)) h.seq.live(m, true);
      await h.seq.idle();
      expect(h.delivered).toEqual([[2, true], [3, true], [4, true], [5, true]]);
      expect(h.fetches).toEqual([]);
    });
  });

  it('after stop() nothing more is handed on', async () => {
    const h = harness({ cursor: 0, history: [1, 2] });
    h.seq.stop();
    h.seq.opened();
    h.seq.live(msg(3));
    await h.seq.idle();
    expect(h.delivered).toEqual([]);
    expect(h.saved).toEqual([]);
  });

  it('waits for each delivery before the next', async () => {
    const order: string[] = [];
    let release!: () => void;
    const seq = new ChatSequencer({
      log: pino({ level: 'silent' }), botUserId: BOT, cursor: 0, historyOnFirstStart: 0,
      fetchAfter: async function* () { /* nothing */ },
      fetchLatest: async () => [],
      deliver: async (m) => {
        order.push(`start ${m.msg_num}`);
        if (m.msg_num === 1) await new Promise<void>((resolve) => { release = resolve; });
        order.push(`end ${m.msg_num}`);
      },
      own: () => undefined,
      saveCursor: () => undefined,
    });
    seq.live(msg(1));
    seq.live(msg(2));
    await vi.waitFor(() => expect(order).toEqual(['start 1']));
    release();
    await seq.idle();
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
  });
});

describe('ChatSequencer flow control', () => {
  it('asks the socket to pause at 1,000 frames waiting and to resume at 100, keeping every frame in order', async () => {
    const flow: string[] = [];
    const delivered: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const seq = new ChatSequencer({
      log: pino({ level: 'silent' }), botUserId: BOT, cursor: 0, historyOnFirstStart: 0,
      async *fetchAfter() { /* nothing missed */ },
      fetchLatest: async () => [],
      async deliver(message) {
        await gate;
        delivered.push(message.msg_num);
        if (seq.backlog === 101) flow.push('backlog 101');
      },
      own: () => undefined,
      saveCursor: () => undefined,
      flow: { pause: () => flow.push('pause'), resume: () => flow.push('resume') },
    });
    for (let n = 1; n <= 1_500; n += 1) {
      seq.live(msg(n));
      if (n === 999) expect(flow).toEqual([]);
    }
    expect(flow).toEqual(['pause']);
    expect(seq.backlog).toBe(1_500);
    release();
    await seq.idle();
    expect(flow).toEqual(['pause', 'backlog 101', 'resume']);
    expect(delivered).toEqual(Array.from({ length: 1_500 }, (_, i) => i + 1));
    expect(seq.backlog).toBe(0);
  });

  it('hands a live frame\'s text on with it (Delivery.wire), after a gap too; what history filled in has none', async () => {
    const h = harness({ cursor: 5, history: [6, 7, 8] });
    h.seq.live(msg(6), false, 'frame 6');
    // 7 and 8 missed: filled from history before the frame of 9.
    h.seq.live(msg(9), false, 'frame 9');
    await h.seq.idle();
    expect(h.delivered.map(([n]) => n)).toEqual([6, 7, 8, 9]);
    expect(h.deliveries.map((d) => d.wire)).toEqual(['frame 6', undefined, undefined, 'frame 9']);
  });
});
