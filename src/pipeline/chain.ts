import type { Logger } from 'pino';
import { LatencyHistogram } from './latency-histogram.js';
import type { Next, PluginContext, PluginInstance } from './plugin.js';

/** One plugin in a bot's chain, running. */
export interface ChainLink {
  name: string;
  instance: PluginInstance;
  timeoutMs: number;
  log: Logger;
  /** false: the bot's own posts skip this plugin (PluginDefinition.ownPosts). */
  ownPosts: boolean;
  /**
   * Builds this plugin's view of the message (its own logger, store and abort signal). `signals.signal`
   * makes the signal on first use: most plugins never look at it, and one per plugin per message costs.
   */
  context(base: BaseContext, signals: SignalSource): PluginContext;
}

export type BaseContext = Omit<PluginContext, 'log' | 'store' | 'signal'>;

/** Where a plugin's context gets its abort signal from, when asked. */
export interface SignalSource {
  readonly signal: AbortSignal;
}

export interface LinkStats {
  handled: number;
  errors: number;
  timeouts: number;
}

/** Thrown into a plugin's abort signal when its time for a message is up. */
export class PluginTimeoutError extends Error {
  override name = 'PluginTimeoutError';
}

type Outcome = 'done' | 'failed' | 'timeout';

/**
 * What a run answers when every plugin was done with the message before it returned (pass-throughs
 * only): already settled, so a caller may take it as done now rather than wait a turn of microtasks.
 */
export const DONE: Promise<void> = Promise.resolve();

/**
 * One plugin handling one message: its clock (paused while the plugins after it run), its signal, and
 * its `next`. A class with one closure (`next`), because this is made for every plugin and message.
 */
class LinkRun implements SignalSource {
  /** When its time is up (performance.now()); Infinity while the clock is paused. */
  deadline = Number.POSITIVE_INFINITY;
  remaining: number;
  settled = false;
  /** Whether handle() has returned (a `next` called later restarts the clock as soon as the rest ends). */
  returned = false;
  controller: AbortController | undefined;
  /** The rest of the chain, once `next` was called; it never rejects. */
  rest: Promise<void> | undefined;
  /** Ends the wait for a plugin that is still running, when its time is up. */
  expire: ((outcome: Outcome) => void) | undefined;
  error: unknown;
  readonly next: Next;

  constructor(
    private readonly chain: PluginChain,
    readonly index: number,
    readonly base: BaseContext,
    timeoutMs: number,
  ) {
    this.remaining = timeoutMs;
    this.next = () => chain.nextOf(this);
  }

  get signal(): AbortSignal {
    return this.chain.signalOf(this);
  }
}

/**
 * The plugin chain as middleware: each plugin gets the message and `next`, which runs the rest.
 * Every plugin runs behind a boundary: an error or a timeout is logged with its name and counted,
 * and the chain goes on as if it had called `next`. A plugin that returns without calling `next`
 * ends the chain for that message, on purpose.
 *
 * This runs for every plugin and message, so it allocates little: timeouts share one timer, set for
 * the earliest deadline of the plugins running; a plugin that hands on what `next()` returned (as a
 * pass-through does) is done at once, with no promise of its own to wait for; a whole chain of such
 * plugins runs without a promise made.
 */
export class PluginChain {
  readonly stats = new Map<string, LinkStats>();
  /** Per plugin: the time it spent on each message (its own, not the plugins after it). */
  readonly latency = new Map<string, LatencyHistogram>();
  private readonly linkStats: LinkStats[];
  private readonly linkLatency: LatencyHistogram[];
  private readonly running = new Set<LinkRun>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly links: ChainLink[],
    private readonly stopSignal: AbortSignal,
  ) {
    this.linkStats = links.map((link) => {
      const stats = { handled: 0, errors: 0, timeouts: 0 };
      this.stats.set(link.name, stats);
      return stats;
    });
    this.linkLatency = links.map((link) => {
      const histogram = new LatencyHistogram();
      this.latency.set(link.name, histogram);
      return histogram;
    });
    stopSignal.addEventListener('abort', () => {
      for (const run of this.running) run.controller?.abort(stopSignal.reason);
    }, { once: true });
  }

  /** Runs the message through every plugin; resolves when all are done with it, and never rejects. */
  run(base: BaseContext): Promise<void> {
    return this.runFrom(0, base, performance.now());
  }

  /** `now`: performance.now() as the caller read it (one reading serves the clock stopped and the one started). */
  private runFrom(from: number, base: BaseContext, now: number): Promise<void> {
    let index = from;
    const own = base.own !== undefined;
    while (index < this.links.length && (!this.links[index]!.instance.handle || (own && !this.links[index]!.ownPosts))) index += 1;
    const link = this.links[index];
    if (!link) return DONE;
    const run = new LinkRun(this, index, base, link.timeoutMs);
    this.running.add(run);
    this.startClock(run, now);
    let result: Promise<void> | void;
    try {
      result = link.instance.handle!(link.context(base, run), run.next);
    } catch (error) {
      run.error = error;
      return this.settle(run, 'failed');
    }
    run.returned = true;
    // Returned at once, or a pass-through: its own work is done, and the rest (which never rejects)
    // is what is left.
    if (result === run.rest || !(result instanceof Promise)) return this.settle(run, 'done');
    if (run.rest) void run.rest.then(() => this.startClock(run, performance.now()));
    return new Promise<Outcome>((resolve) => {
      run.expire = resolve;
      // A late failure of a plugin that already timed out lands here, and goes nowhere.
      result.then(() => resolve('done'), (error: unknown) => {
        run.error = error;
        resolve('failed');
      });
    }).then((outcome) => this.settle(run, outcome));
  }

  /** `next` of a run: the rest of the chain, once (a second call gets the same promise). */
  nextOf(run: LinkRun): Promise<void> {
    if (run.rest) return run.rest;
    const now = performance.now();
    this.pauseClock(run, now);
    run.rest = this.runFrom(run.index + 1, run.base, now);
    // Called after handle() returned: the plugin's own time starts again when the rest is done.
    if (run.returned) void run.rest.then(() => this.startClock(run, performance.now()));
    return run.rest;
  }

  /** Counts and logs how a plugin ended; one that failed or hung before passing the message on still passes it on. */
  private settle(run: LinkRun, outcome: Outcome): Promise<void> {
    // Its own time: what it used of its allowance (the clock is paused while the rest runs).
    const left = outcome === 'timeout' ? 0 : run.deadline === Number.POSITIVE_INFINITY ? run.remaining : run.deadline - performance.now();
    this.linkLatency[run.index]!.observe(Math.max(0, this.links[run.index]!.timeoutMs - left) / 1000);
    run.settled = true;
    run.deadline = Number.POSITIVE_INFINITY;
    this.running.delete(run);
    const link = this.links[run.index]!;
    const stats = this.linkStats[run.index]!;
    const msgNum = run.base.message.msg_num;
    if (outcome === 'done') {
      stats.handled += 1;
      return run.rest ?? DONE;
    }
    if (outcome === 'timeout') {
      stats.timeouts += 1;
      run.controller?.abort(new PluginTimeoutError(`${link.name} took over ${link.timeoutMs} ms`));
      link.log.error({ plugin: link.name, msgNum, timeoutMs: link.timeoutMs }, 'plugin timed out; the chain goes on');
    } else {
      stats.errors += 1;
      link.log.error({ err: run.error, plugin: link.name, msgNum }, 'plugin failed; the chain goes on');
    }
    return run.rest ?? this.nextOf(run);
  }

  signalOf(run: LinkRun): AbortSignal {
    if (!run.controller) {
      run.controller = new AbortController();
      if (this.stopSignal.aborted) run.controller.abort(this.stopSignal.reason);
    }
    return run.controller.signal;
  }

  private startClock(run: LinkRun, now: number): void {
    if (run.settled) return;
    run.deadline = now + run.remaining;
    if (run.deadline < this.timerAt) this.arm(run.deadline);
  }

  private pauseClock(run: LinkRun, now: number): void {
    run.remaining = Math.max(0, run.deadline - now);
    run.deadline = Number.POSITIVE_INFINITY;
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expireDue(), Math.max(0, at - performance.now()));
    // A watchdog, left armed when its runs end early: it must not hold a stopped process open for
    // up to a plugin timeout (a run still going is held open by its own socket or request).
    this.timer.unref();
  }

  /** Ends the runs whose time is up, and sets the timer for the next deadline (if any run is left). */
  private expireDue(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let earliest = Number.POSITIVE_INFINITY;
    for (const run of this.running) {
      if (run.deadline <= now) {
        run.deadline = Number.POSITIVE_INFINITY;
        run.expire?.('timeout');
      } else earliest = Math.min(earliest, run.deadline);
    }
    if (earliest < Number.POSITIVE_INFINITY) this.arm(earliest);
  }
}
