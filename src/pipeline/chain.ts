import type { Logger } from 'pino';
import type { Next, PluginContext, PluginInstance } from './plugin.js';

/** One plugin in a bot's chain, running. */
export interface ChainLink {
  name: string;
  instance: PluginInstance;
  timeoutMs: number;
  log: Logger;
  /**
   * Builds this plugin's view of the message (its own logger, store and abort signal). `signal` makes
   * the signal on first use: most plugins never look at it, and one per plugin per message costs.
   */
  context(base: BaseContext, signal: () => AbortSignal): PluginContext;
}

export type BaseContext = Omit<PluginContext, 'log' | 'store' | 'signal'>;

export interface LinkStats {
  handled: number;
  errors: number;
  timeouts: number;
}

/** Thrown into a plugin's abort signal when its time for a message is up. */
export class PluginTimeoutError extends Error {
  override name = 'PluginTimeoutError';
}

/** One plugin handling one message: its clock (paused while the plugins after it run) and its signal. */
class LinkRun {
  /** When its time is up (performance.now()); Infinity while the clock is paused. */
  deadline = Number.POSITIVE_INFINITY;
  remaining: number;
  settled = false;
  controller: AbortController | undefined;
  expire: (() => void) | undefined;

  constructor(timeoutMs: number) {
    this.remaining = timeoutMs;
  }
}

/**
 * The plugin chain as middleware: each plugin gets the message and `next`, which runs the rest.
 * Every plugin runs behind a boundary: an error or a timeout is logged with its name and counted,
 * and the chain goes on as if it had called `next`. A plugin that returns without calling `next`
 * ends the chain for that message, on purpose.
 *
 * Timeouts share one timer, set for the earliest deadline of the plugins running (a timer per plugin
 * per message was a measurable share of the throughput bench).
 */
export class PluginChain {
  readonly stats = new Map<string, LinkStats>();
  private readonly linkStats: LinkStats[];
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
    stopSignal.addEventListener('abort', () => {
      for (const run of this.running) run.controller?.abort(stopSignal.reason);
    }, { once: true });
  }

  run(base: BaseContext): Promise<void> {
    return this.runFrom(0, base);
  }

  private async runFrom(index: number, base: BaseContext): Promise<void> {
    const link = this.links[index];
    if (!link) return;
    if (!link.instance.handle) return this.runFrom(index + 1, base);
    const stats = this.linkStats[index]!;
    const run = new LinkRun(link.timeoutMs);
    this.running.add(run);
    let nextCalled: Promise<void> | undefined;
    // The plugin's own time: its clock stops while the plugins after it run (inside its next()).
    const next: Next = () => {
      if (nextCalled) return nextCalled;
      this.pauseClock(run);
      nextCalled = this.runFrom(index + 1, base);
      return nextCalled.finally(() => this.startClock(run));
    };
    let failed = false;
    this.startClock(run);
    try {
      const outcome = await new Promise<'done' | 'timeout'>((resolve, reject) => {
        run.expire = () => resolve('timeout');
        const result = link.instance.handle!(link.context(base, () => this.signalOf(run)), next);
        // A late failure of a plugin that already timed out has this handler, and goes nowhere.
        if (result instanceof Promise) result.then(() => resolve('done'), reject);
        else resolve('done');
      });
      if (outcome === 'timeout') {
        failed = true;
        stats.timeouts += 1;
        run.controller?.abort(new PluginTimeoutError(`${link.name} took over ${link.timeoutMs} ms`));
        link.log.error({ plugin: link.name, msgNum: base.message.msg_num, timeoutMs: link.timeoutMs }, 'plugin timed out; the chain goes on');
      } else stats.handled += 1;
    } catch (error) {
      failed = true;
      stats.errors += 1;
      link.log.error({ err: error, plugin: link.name, msgNum: base.message.msg_num }, 'plugin failed; the chain goes on');
    } finally {
      run.settled = true;
      run.deadline = Number.POSITIVE_INFINITY;
      this.running.delete(run);
    }
    // A plugin that failed or hung before passing the message on: the others still get it.
    if (failed && nextCalled === undefined) await next();
    else if (nextCalled) await nextCalled;
  }

  private signalOf(run: LinkRun): AbortSignal {
    if (!run.controller) {
      run.controller = new AbortController();
      if (this.stopSignal.aborted) run.controller.abort(this.stopSignal.reason);
    }
    return run.controller.signal;
  }

  private startClock(run: LinkRun): void {
    if (run.settled) return;
    run.deadline = performance.now() + run.remaining;
    if (run.deadline < this.timerAt) this.arm(run.deadline);
  }

  private pauseClock(run: LinkRun): void {
    run.remaining = Math.max(0, run.deadline - performance.now());
    run.deadline = Number.POSITIVE_INFINITY;
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expireDue(), Math.max(0, at - performance.now()));
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
        run.expire?.();
      } else earliest = Math.min(earliest, run.deadline);
    }
    if (earliest < Number.POSITIVE_INFINITY) this.arm(earliest);
  }
}
