import { monitorEventLoopDelay, PerformanceObserver, type IntervalHistogram } from 'node:perf_hooks';
import type { BenchPlatform } from './platform.js';

/**
 * What each setup of the platforms bench ran under, so that rounds can be compared: what every fake
 * holds for the clients that came and went (bench/gateway-platforms/platform.ts `held`), read as the
 * setup starts and as it ends, and the bench process's own state over the setup (its heap, its GC
 * pauses, its event loop's delay: every fake and the chat's watcher run on that one loop, so a pause
 * there is in every hop's figure).
 */
/** The loop delay's sampling: each sample is this much plus the delay, which is what is kept. */
const SAMPLE_MS = 10;

export interface SetupConditions {
  /** Per platform: what its fake held as the setup started, and the counters' growth over the setup. */
  held: Record<string, { start: Record<string, number>; grew: Record<string, number> }>;
  heapMb: number;
  gcCount: number;
  gcMs: number;
  gcMaxMs: number;
  /** How late the bench's event loop ran (beyond the sampling interval): p99 and the longest. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

export class Conditions {
  private readonly loop: IntervalHistogram = monitorEventLoopDelay({ resolution: SAMPLE_MS });
  private gc = { count: 0, ms: 0, maxMs: 0 };
  private readonly observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      this.gc.count += 1;
      this.gc.ms += entry.duration;
      this.gc.maxMs = Math.max(this.gc.maxMs, entry.duration);
    }
  });

  constructor(private readonly platforms: readonly BenchPlatform[]) {
    this.loop.enable();
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /** Starts a setup's reading; the function it answers ends it. */
  begin(): () => SetupConditions {
    const start = new Map(this.platforms.map((platform) => [platform.point, platform.held?.() ?? {}]));
    this.loop.reset();
    this.gc = { count: 0, ms: 0, maxMs: 0 };
    return () => {
      const held: SetupConditions['held'] = {};
      for (const platform of this.platforms) {
        const before = start.get(platform.point)!;
        const after = platform.held?.() ?? {};
        held[platform.point] = { start: before, grew: Object.fromEntries(Object.entries(after).map(([key, value]) => [key, value - (before[key] ?? 0)])) };
      }
      return {
        held, heapMb: process.memoryUsage().heapUsed / 2 ** 20, gcCount: this.gc.count, gcMs: this.gc.ms, gcMaxMs: this.gc.maxMs,
        loopDelayP99Ms: Math.max(0, this.loop.percentile(99) / 1e6 - SAMPLE_MS), loopDelayMaxMs: Math.max(0, this.loop.max / 1e6 - SAMPLE_MS),
      };
    };
  }

  stop(): void {
    this.loop.disable();
    this.observer.disconnect();
  }
}

/** One line of a setup's conditions, for the log and the notes. */
export function describe(conditions: SetupConditions): string {
  const fakes = Object.entries(conditions.held)
    .filter(([, { start }]) => Object.keys(start).length > 0)
    .map(([point, { start, grew }]) => `${point} ${Object.entries(start).map(([key, value]) => `${key} ${value}${grew[key] ? ` (+${grew[key]})` : ''}`).join(', ')}`);
  return `bench process: heap ${conditions.heapMb.toFixed(0)} MB, ${conditions.gcCount} GC pauses ${conditions.gcMs.toFixed(0)} ms (longest ${conditions.gcMaxMs.toFixed(1)} ms), loop late by ${conditions.loopDelayP99Ms.toFixed(1)} ms at p99 (at most ${conditions.loopDelayMaxMs.toFixed(0)} ms); fakes at the start (growth over the setup): ${fakes.join('; ')}`;
}
