import type { Logger } from 'pino';
import type { Next, PluginContext, PluginInstance } from './plugin.js';

/** One plugin in a bot's chain, running. */
export interface ChainLink {
  name: string;
  instance: PluginInstance;
  timeoutMs: number;
  log: Logger;
  /** Builds this plugin's view of the message (its own logger, store and abort signal). */
  context(base: BaseContext, signal: AbortSignal): PluginContext;
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

/**
 * The plugin chain as middleware: each plugin gets the message and `next`, which runs the rest.
 * Every plugin runs behind a boundary: an error or a timeout is logged with its name and counted,
 * and the chain goes on as if it had called `next`. A plugin that returns without calling `next`
 * ends the chain for that message, on purpose.
 */
export class PluginChain {
  readonly stats = new Map<string, LinkStats>();

  constructor(
    private readonly links: ChainLink[],
    private readonly stopSignal: AbortSignal,
  ) {
    for (const link of links) this.stats.set(link.name, { handled: 0, errors: 0, timeouts: 0 });
  }

  run(base: BaseContext): Promise<void> {
    return this.runFrom(0, base);
  }

  private async runFrom(index: number, base: BaseContext): Promise<void> {
    const link = this.links[index];
    if (!link) return;
    if (!link.instance.handle) return this.runFrom(index + 1, base);
    const stats = this.stats.get(link.name)!;
    const controller = new AbortController();
    const onStop = () => controller.abort(this.stopSignal.reason);
    if (this.stopSignal.aborted) onStop();
    else this.stopSignal.addEventListener('abort', onStop, { once: true });
    let failed = false;
    // The plugin's own time: its clock stops while the plugins after it run (inside its next()).
    let timer: NodeJS.Timeout | undefined;
    let remaining = link.timeoutMs;
    let startedAt = performance.now();
    let expire: (value: 'timeout') => void = () => undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      expire = resolve;
    });
    let settled = false;
    const startClock = () => {
      if (settled) return;
      startedAt = performance.now();
      timer = setTimeout(() => expire('timeout'), remaining);
    };
    let nextCalled: Promise<void> | undefined;
    const next: Next = () => {
      if (nextCalled) return nextCalled;
      clearTimeout(timer);
      remaining = Math.max(0, remaining - (performance.now() - startedAt));
      nextCalled = this.runFrom(index + 1, base);
      return nextCalled.finally(startClock);
    };
    startClock();
    try {
      const handled = Promise.resolve().then(() => link.instance.handle!(link.context(base, controller.signal), next));
      const outcome = await Promise.race([handled.then(() => 'done' as const), timedOut]);
      if (outcome === 'timeout') {
        failed = true;
        stats.timeouts += 1;
        controller.abort(new PluginTimeoutError(`${link.name} took over ${link.timeoutMs} ms`));
        link.log.error({ plugin: link.name, msgNum: base.message.msg_num, timeoutMs: link.timeoutMs }, 'plugin timed out; the chain goes on');
        handled.catch(() => undefined); // it may still fail later; that is no longer this message's concern
      } else stats.handled += 1;
    } catch (error) {
      failed = true;
      stats.errors += 1;
      link.log.error({ err: error, plugin: link.name, msgNum: base.message.msg_num }, 'plugin failed; the chain goes on');
    } finally {
      settled = true;
      clearTimeout(timer);
      this.stopSignal.removeEventListener('abort', onStop);
    }
    // A plugin that failed or hung before passing the message on: the others still get it.
    if (failed && nextCalled === undefined) await next();
    else if (nextCalled) await nextCalled;
  }
}
