import { setTimeout as sleep } from 'node:timers/promises';
import { sampleProcess, timedGet, totalBytes, type ProcessSample } from '../lib/process-probe.js';
import { quantile } from '../lib/stats.js';
import type { Bot } from '../soak/bot.js';
import type { Origin, Point, Tally } from '../soak/tally.js';

/**
 * The overload bench's readings of the bot, every few seconds through every phase, each labelled with
 * the phase it was taken in: the process sample (RSS, heap, lag, fds, files) and how long /healthz
 * took to answer (the stalled bot did not answer /metrics within 30 s).
 */
export type Phase = 'calm' | 'overload' | 'quiet';

export interface PhaseSample {
  phase: Phase;
  sample: ProcessSample;
  healthzMs: number;
  healthzOk: boolean;
}

export class Sampler {
  readonly samples: PhaseSample[] = [];
  phase: Phase = 'calm';
  failure: unknown;
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(private readonly bot: Bot, intervalSeconds: number) {
    this.loop = (async () => {
      let next = performance.now();
      while (!this.stopped) {
        try {
          if (bot.ended()) throw new Error('groupwire run ended during the overload bench');
          const phase = this.phase;
          const healthz = await timedGet(`${bot.opsUrl}/healthz`, 30_000);
          const sample = await sampleProcess(bot.pid, bot.opsUrl, bot.stateDir, bot.transcriptDir);
          this.samples.push({ phase, sample, healthzMs: healthz.ms, healthzOk: healthz.status === 200 });
        } catch (error) {
          this.failure = error;
          return;
        }
        next += intervalSeconds * 1000;
        await sleep(Math.max(0, next - performance.now()));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  of(phase: Phase): PhaseSample[] {
    return this.samples.filter((s) => s.phase === phase);
  }
}

/** The largest of some readings (NaN readings left out; NaN when none). */
export function peak(values: readonly number[]): number {
  const finite = values.filter(Number.isFinite);
  return finite.length === 0 ? Number.NaN : Math.max(...finite);
}

export function median(values: readonly number[]): number {
  return quantile(values.filter(Number.isFinite).sort((a, b) => a - b), 0.5);
}

/** What one phase's samples show: the worst of each reading in it. */
export function phaseFigures(samples: readonly PhaseSample[]) {
  const s = samples.map((x) => x.sample);
  const depth = (queue: string) => peak(s.map((x) => x.queueDepths[queue] ?? Number.NaN));
  return {
    samples: samples.length,
    lagP99MedianMs: median(s.map((x) => x.lagP99Ms)),
    lagP99PeakMs: peak(s.map((x) => x.lagP99Ms)),
    lagMaxMs: peak(s.map((x) => x.lagMaxMs)),
    rssPeakMB: peak(s.map((x) => x.rssMB)),
    heapPeakMB: peak(s.map((x) => x.heapUsedMB)),
    scrapeSlowestMs: peak(s.map((x) => x.scrapeMs)),
    scrapesFailed: s.filter((x) => x.scrapeFailed).length,
    healthzSlowestMs: peak(samples.map((x) => x.healthzMs)),
    healthzFailed: samples.filter((x) => !x.healthzOk).length,
    outboxPeak: peak(s.map((x) => x.outboxDepth)),
    toIrcPeak: depth('to_irc'),
    stateKBPeak: peak(s.map((x) => totalBytes(x.stateFiles) / 1024)),
    /** Written to storage from the phase's first sample to its last. */
    diskWrittenMB: s.length < 2 ? Number.NaN : s.at(-1)!.diskWrittenMB - s[0]!.diskWrittenMB,
  };
}

/** Each state file's largest size over the samples (KB), largest first. */
export function peakFiles(samples: readonly PhaseSample[]): Array<{ file: string; peakKB: number }> {
  const peaks = new Map<string, number>();
  for (const { sample } of samples) for (const [file, size] of sample.stateFiles) peaks.set(file, Math.max(peaks.get(file) ?? 0, size));
  return [...peaks].map(([file, size]) => ({ file, peakKB: size / 1024 })).sort((a, b) => b.peakKB - a.peakKB);
}

/** Lines of `origin` first shown at `point` between `from` and `to` (performance.now() times). */
export function shownBetween(tally: Tally, origin: Origin, point: Point, from: number, to: number): number {
  let count = 0;
  for (const line of tally.lines.values()) {
    const first = line.origin === origin ? line.seen[point]?.first : undefined;
    if (first !== undefined && first >= from && first < to) count += 1;
  }
  return count;
}

/** Counted lines of `origin` said by `at` and not shown at `point` by then: the backlog at that moment. */
export function backlogAt(tally: Tally, origin: Origin, point: Point, at: number): number {
  let count = 0;
  for (const line of tally.lines.values()) {
    if (line.origin !== origin || line.seq === 0 || line.sent > at) continue;
    const first = line.seen[point]?.first;
    if (first === undefined || first > at) count += 1;
  }
  return count;
}
