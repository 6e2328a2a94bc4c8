import { pino, type Logger } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { PluginChain, PluginTimeoutError, type BaseContext, type ChainLink, type SignalSource } from '../src/pipeline/chain.js';
import type { PluginContext, PluginInstance } from '../src/pipeline/plugin.js';
import { KeyValueStore } from '../src/store/kv-store.js';

afterEach(() => vi.useRealTimers());

// The chain's clock is performance.now(): faked with the timers, so a plugin's time is fake time.
const FAKE: Parameters<typeof vi.useFakeTimers>[0] = { toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] };

/** A pino logger writing JSON lines into memory. */
function memoryLogger(): { log: Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const log = pino({ level: 'debug' }, { write: (chunk: string) => void chunks.push(chunk) });
  return { log, lines: () => chunks.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>) };
}

const message = { object: 'chat_message', msg_num: 7, message: 'hi', user_id: 'u1', created: new Date(0).toISOString() } as ChatMessage;
const base = { message, backfilled: false, ageMs: 0 } as unknown as BaseContext;

interface Built {
  chain: PluginChain;
  stop: AbortController;
  signals: Map<string, AbortSignal[]>;
  lines: () => Array<Record<string, unknown>>;
}

function build(plugins: Array<[string, PluginInstance, number?]>, stop = new AbortController()): Built {
  const { log, lines } = memoryLogger();
  const signals = new Map<string, AbortSignal[]>();
  const links: ChainLink[] = plugins.map(([name, instance, timeoutMs]) => ({
    name,
    instance,
    timeoutMs: timeoutMs ?? 1_000,
    log: log.child({ plugin: name }),
    ownPosts: true,
    context(b: BaseContext, source: SignalSource): PluginContext {
      const signal = source.signal;
      signals.set(name, [...(signals.get(name) ?? []), signal]);
      return { ...b, signal, log: log.child({ plugin: name }), store: KeyValueStore.memory() } as PluginContext;
    },
  }));
  return { chain: new PluginChain(links, stop.signal), stop, signals, lines };
}

function passing(name: string, seen: string[]): [string, PluginInstance] {
  return [name, { async handle(_ctx, next) { seen.push(name); await next(); seen.push(`/${name}`); } }];
}

const never = () => new Promise<never>(() => undefined);

describe('PluginChain: time and stop', () => {
  it('a plugin\'s time does not include the plugins after it', async () => {
    vi.useFakeTimers(FAKE);
    const slow: PluginInstance = { async handle(_ctx, next) { await new Promise((r) => setTimeout(r, 300)); await next(); } };
    const fast: PluginInstance = { async handle(_ctx, next) { await next(); } };
    const { chain } = build([['fast', fast, 100], ['slow', slow, 1_000]]);
    const done = chain.run(base);
    await vi.advanceTimersByTimeAsync(400);
    await done;
    expect(chain.stats.get('fast')).toEqual({ handled: 1, errors: 0, timeouts: 0 });
    expect(chain.stats.get('slow')).toEqual({ handled: 1, errors: 0, timeouts: 0 });
  });

  it('a stop that already happened reaches the plugins after it', async () => {
    const stop = new AbortController();
    const seen: boolean[] = [];
    const { chain } = build([
      ['stopper', { async handle(_ctx, next) { stop.abort(); await next(); } }],
      ['later', { handle: (ctx) => void seen.push(ctx.signal.aborted) }],
    ], stop);
    await chain.run(base);
    expect(seen).toEqual([true]);
  });
});

describe('PluginChain', () => {
  it('runs the plugins in order, as middleware', async () => {
    const seen: string[] = [];
    const { chain } = build([passing('a', seen), passing('b', seen), passing('c', seen)]);
    await chain.run(base);
    expect(seen).toEqual(['a', 'b', 'c', '/c', '/b', '/a']);
    expect([...chain.stats.values()].map((s) => s.handled)).toEqual([1, 1, 1]);
  });

  it('skips a plugin without handle and hands each plugin the message', async () => {
    const seen: number[] = [];
    const { chain } = build([['idle', {}], ['b', { handle: (ctx) => void seen.push(ctx.message.msg_num) }]]);
    await chain.run(base);
    expect(seen).toEqual([7]);
  });

  it('a plugin that does not call next ends the chain', async () => {
    const seen: string[] = [];
    const { chain } = build([passing('a', seen), ['stopper', { handle: () => void seen.push('stopper') }], passing('c', seen)]);
    await chain.run(base);
    expect(seen).toEqual(['a', 'stopper', '/a']);
    expect(chain.stats.get('c')).toEqual({ handled: 0, errors: 0, timeouts: 0 });
  });

  it('a plugin that throws: the next still runs, the error is counted and logged with its name', async () => {
    const seen: string[] = [];
    const { chain, lines } = build([
      ['boom', { async handle() { throw new Error('kaboom'); } }],
      ['sync-boom', { handle() { throw new TypeError('sync kaboom'); } }],
      passing('after', seen),
    ]);
    await chain.run(base);
    expect(seen).toEqual(['after', '/after']);
    expect(chain.stats.get('boom')).toEqual({ handled: 0, errors: 1, timeouts: 0 });
    expect(chain.stats.get('sync-boom')).toEqual({ handled: 0, errors: 1, timeouts: 0 });
    const errors = lines().filter((line) => line.msg === 'plugin failed; the chain goes on');
    expect(errors.map((line) => [line.plugin, line.level, line.msgNum, (line.err as { message: string }).message]))
      .toEqual([['boom', 50, 7, 'kaboom'], ['sync-boom', 50, 7, 'sync kaboom']]);
  });

  it('a plugin that calls next and then throws: the rest ran once only', async () => {
    const seen: string[] = [];
    const { chain } = build([['late', { async handle(_ctx, next) { await next(); throw new Error('after next'); } }], passing('b', seen)]);
    await chain.run(base);
    expect(seen).toEqual(['b', '/b']);
    expect(chain.stats.get('late')!.errors).toBe(1);
    expect(chain.stats.get('b')!.handled).toBe(1);
  });

  it('calling next twice runs the rest once', async () => {
    let count = 0;
    const { chain } = build([['twice', { async handle(_ctx, next) { await next(); await next(); } }], ['b', { handle: () => void (count += 1) }]]);
    await chain.run(base);
    expect(count).toBe(1);
  });

  it('an error in a later plugin does not reach the one that called next', async () => {
    let caught: unknown = 'nothing';
    const { chain } = build([
      ['outer', { async handle(_ctx, next) { try { await next(); } catch (error) { caught = error; } } }],
      ['inner', { async handle() { throw new Error('inner'); } }],
    ]);
    await chain.run(base);
    expect(caught).toBe('nothing');
    expect(chain.stats.get('outer')!.handled).toBe(1);
    expect(chain.stats.get('inner')!.errors).toBe(1);
  });

  it('a plugin that hangs past its timeout: next runs, the timeout is counted, its signal aborted', async () => {
    vi.useFakeTimers(FAKE);
    const seen: string[] = [];
    const { chain, signals, lines } = build([['slow', { handle: never }, 5_000], passing('after', seen)]);
    let done = false;
    const running = chain.run(base).then(() => { done = true; });
    await vi.advanceTimersByTimeAsync(4_999);
    expect(done).toBe(false);
    expect(signals.get('slow')![0]!.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await running;
    expect(seen).toEqual(['after', '/after']);
    expect(chain.stats.get('slow')).toEqual({ handled: 0, errors: 0, timeouts: 1 });
    const signal = signals.get('slow')![0]!;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(PluginTimeoutError);
    expect(lines().find((line) => line.msg === 'plugin timed out; the chain goes on')).toMatchObject({ plugin: 'slow', timeoutMs: 5_000, msgNum: 7 });
  });

  it('messages in flight at once (several chats) each time out at their own deadline', async () => {
    vi.useFakeTimers(FAKE);
    const { chain } = build([['slow', { handle: never }, 100]]);
    const ended: number[] = [];
    const first = chain.run(base).then(() => ended.push(performance.now()));
    await vi.advanceTimersByTimeAsync(50);
    const second = chain.run({ ...base, message: { ...message, msg_num: 8 } } as BaseContext).then(() => ended.push(performance.now()));
    await vi.advanceTimersByTimeAsync(49);
    expect(ended).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await first;
    expect(ended).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(49);
    expect(ended).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await second;
    expect(ended[1]! - ended[0]!).toBe(50);
    expect(chain.stats.get('slow')!.timeouts).toBe(2);
  });

  it('a timed-out plugin that calls next and fails later changes nothing', async () => {
    vi.useFakeTimers(FAKE);
    let count = 0;
    let wake!: () => void;
    let nextOfSlow!: () => Promise<void>;
    const slow: PluginInstance = {
      handle: (_ctx, next) => new Promise<void>((_resolve, reject) => {
        nextOfSlow = next;
        wake = () => reject(new Error('too late'));
      }),
    };
    const { chain } = build([['slow', slow, 100], ['b', { handle: () => void (count += 1) }]]);
    const running = chain.run(base);
    await vi.advanceTimersByTimeAsync(100);
    await running;
    expect(count).toBe(1);
    // It wakes up after its time: next does not run the rest again, the rejection goes nowhere.
    await nextOfSlow();
    wake();
    await vi.advanceTimersByTimeAsync(10);
    expect(count).toBe(1);
    expect(chain.stats.get('slow')).toEqual({ handled: 0, errors: 0, timeouts: 1 });
  });

  it('a plugin that hangs after calling next: the rest ran once, the timeout is counted', async () => {
    vi.useFakeTimers(FAKE);
    let count = 0;
    const { chain } = build([['hang', { async handle(_ctx, next) { await next(); await never(); } }, 50], ['b', { handle: () => void (count += 1) }]]);
    const running = chain.run(base);
    await vi.advanceTimersByTimeAsync(50);
    await running;
    expect(count).toBe(1);
    expect(chain.stats.get('hang')!.timeouts).toBe(1);
  });

  it('pass-through plugins (handing on what next returns): every plugin runs in order, the chain waits for the last', async () => {
    const seen: string[] = [];
    let finish!: () => void;
    const pass = (name: string): [string, PluginInstance] => [name, { handle(_ctx, next) { seen.push(name); return next(); } }];
    const { chain } = build([pass('a'), pass('b'), ['slow', { handle: () => new Promise<void>((resolve) => { finish = resolve; }) }], pass('c')]);
    let ended = false;
    const running = chain.run(base).then(() => { ended = true; });
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['a', 'b']);
    expect(ended).toBe(false);
    finish();
    await running;
    expect(seen).toEqual(['a', 'b']);
    expect(chain.stats.get('a')).toEqual({ handled: 1, errors: 0, timeouts: 0 });
    expect(chain.stats.get('slow')).toEqual({ handled: 1, errors: 0, timeouts: 0 });
  });

  it('a pass-through before a failing plugin: the failure is contained and the plugins after it run', async () => {
    const seen: string[] = [];
    const { chain, lines } = build([
      ['pass', { handle: (_ctx, next) => next() }],
      ['bad', { handle() { throw new Error('broken'); } }],
      ['after', { handle: () => void seen.push('after') }],
    ]);
    await chain.run(base);
    expect(seen).toEqual(['after']);
    expect(chain.stats.get('bad')).toEqual({ handled: 0, errors: 1, timeouts: 0 });
    expect(lines().some((line) => line.plugin === 'bad' && line.msg === 'plugin failed; the chain goes on')).toBe(true);
  });

  it('a plugin that returns at once and calls next later: the rest runs when it does', async () => {
    const seen: string[] = [];
    let later!: () => Promise<void>;
    const { chain } = build([
      ['deferred', { handle(_ctx, next) { later = next; } }],
      ['b', { handle: () => void seen.push('b') }],
    ]);
    await chain.run(base);
    // It returned without calling next: the chain ended for it, and `b` did not run.
    expect(seen).toEqual([]);
    await later();
    expect(seen).toEqual(['b']);
  });

  it('a plugin\'s time after next() returns counts again: one that hangs after a slow rest times out on its own time', async () => {
    vi.useFakeTimers(FAKE);
    // `outer` (100 ms) waits `afterMs` of its own once `slow` (500 ms, which do not count against it) is done.
    const outcomeOfOuter = async (afterMs: number) => {
      const { chain } = build([
        ['outer', { async handle(_ctx, next) { await next(); await new Promise((r) => setTimeout(r, afterMs)); } }, 100],
        ['slow', { handle: () => new Promise<void>((r) => setTimeout(r, 500)) }, 1_000],
      ]);
      const running = chain.run(base);
      await vi.advanceTimersByTimeAsync(700);
      await running;
      return chain.stats.get('outer');
    };
    expect(await outcomeOfOuter(80)).toEqual({ handled: 1, errors: 0, timeouts: 0 });
    expect(await outcomeOfOuter(150)).toEqual({ handled: 0, errors: 0, timeouts: 1 });
  });

  it('the stop signal aborts the signals of the plugins running', async () => {
    const stop = new AbortController();
    let started!: () => void;
    const inside = new Promise<void>((resolve) => { started = resolve; });
    const reasons: unknown[] = [];
    const { chain, signals } = build([
      ['outer', { async handle(_ctx, next) { await next(); } }],
      ['waiter', {
        handle: (ctx) => new Promise<void>((resolve) => {
          ctx.signal.addEventListener('abort', () => { reasons.push(ctx.signal.reason); resolve(); });
          started();
        }),
      }],
    ], stop);
    const running = chain.run(base);
    await inside;
    stop.abort('stopping');
    await running;
    expect(reasons).toEqual(['stopping']);
    expect(signals.get('outer')![0]!.aborted).toBe(true);
    expect(chain.stats.get('waiter')!.handled).toBe(1);
  });

  it('stats add up over messages, and each message gets a fresh signal', async () => {
    const { chain, signals } = build([['a', { async handle(_ctx, next) { await next(); } }], ['b', { async handle() { throw new Error('x'); } }]]);
    await chain.run(base);
    await chain.run({ ...base, message: { ...message, msg_num: 8 } } as BaseContext);
    expect(chain.stats.get('a')).toEqual({ handled: 2, errors: 0, timeouts: 0 });
    expect(chain.stats.get('b')).toEqual({ handled: 0, errors: 2, timeouts: 0 });
    const [first, second] = signals.get('a')!;
    expect(first).not.toBe(second);
    expect(second!.aborted).toBe(false);
  });
});
