import type { Logger } from 'pino';
import type { SideBacklog } from '../pipeline/plugin.js';
import type { Bot } from '../supervisor/bot.js';

/** One side a bot sends to, and its backlog: a chat (the bot's outbox) or a relay's channel. */
export interface BacklogSide {
  bot: string;
  /** `chat general` (the bot's posts into chat general), or `<relay instance> <channel>` (`relay-irc #soak`). */
  side: string;
  backlog: SideBacklog;
}

/** A side's backlog as `/status` and `/metrics` show it. */
export interface BacklogStatus {
  bot: string;
  side: string;
  /** Lines waiting (queued, and sent but not yet confirmed). */
  lines: number;
  /** Age of the oldest waiting line in seconds (0 when none waits). */
  oldestSeconds: number;
  /** Lines a second queued for the side and taken by it, over the last minute (null until two samples). */
  arrivingPerSecond: number | null;
  takenPerSecond: number | null;
  /** The setting that paces the side (`reply_rate: 10/s`, `rate: 10/s, burst 4`). */
  limit: string | null;
  /** True from the warning until it caught up; `warning` says it in words. */
  behind: boolean;
  warning?: string;
}

/** Every side of the bots, read in O(1) a side (counters and the head's time, never a pass over what waits). */
export function backlogSides(bots: readonly Bot[]): BacklogSide[] {
  const sides: BacklogSide[] = [];
  for (const bot of bots) {
    for (const runner of bot.runners) {
      const { perSecond, burst } = runner.outbox.rate;
      sides.push({ bot: bot.name, side: `chat ${runner.info.subject}`, backlog: { ...runner.outbox.backlog, limit: `reply_rate: ${perSecond}/s, burst ${burst}` } });
    }
    for (const report of bot.pluginReports()) {
      for (const [channel, backlog] of Object.entries(report.status.backlogs ?? {})) sides.push({ bot: bot.name, side: `${report.instance} ${channel}`, backlog });
    }
  }
  return sides;
}

/** How often the sides are sampled, and the rules of the warning (docs/operations.md "Backlogs"). */
export const BACKLOG_RULES = {
  sampleEveryMs: 5_000,
  /** Rates are taken over this much of the past. */
  rateWindowMs: 60_000,
  /** Behind: at least this many lines waiting and more than RISING_FOR_MS ago, or the oldest older than OLD_MS. */
  minLines: 100,
  risingForMs: 30_000,
  oldMs: 60_000,
} as const;

interface Sample {
  at: number;
  depth: number;
  pushed: number;
  taken: number;
}

interface Watched {
  samples: Sample[];
  behind: boolean;
  warning?: string;
}

/**
 * Samples every side's backlog every few seconds and says, once, when one falls behind: its lines keep
 * growing (at least minLines and more than risingForMs ago) or wait too long (the oldest past oldMs).
 * The warning names the bot, the side, the rate lines arrive at and the rate the side takes them over
 * the last minute, the depth and age, and the setting that paces it; it is logged once, and again only
 * after the side caught up (fewer than half minLines waiting and the oldest younger than half oldMs;
 * an info line says so) and fell behind again. `/status` shows it meanwhile.
 */
export class BacklogWatch {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sides: () => BacklogSide[],
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.sample(), BACKLOG_RULES.sampleEveryMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Takes one sample of every side (the timer's work; tests call it with their clock). */
  sample(): void {
    const at = this.now();
    const seen = new Set<string>();
    for (const side of this.sides()) {
      const key = `${side.bot}\u0000${side.side}`;
      seen.add(key);
      let watched = this.watched.get(key);
      if (!watched) this.watched.set(key, watched = { samples: [], behind: false });
      const { depth, pushed, taken } = side.backlog;
      const last = watched.samples.at(-1);
      // Counters that went back: the relay started again (a reload): its rates start again too.
      if (last && (pushed < last.pushed || taken < last.taken)) watched.samples.length = 0;
      watched.samples.push({ at, depth, pushed, taken });
      // Kept: the samples of the rate window, and the one just before it.
      while (watched.samples.length > 2 && watched.samples[1]!.at <= at - BACKLOG_RULES.rateWindowMs) watched.samples.shift();
      this.judge(side, watched, at);
    }
    for (const key of this.watched.keys()) if (!seen.has(key)) this.watched.delete(key);
  }

  /** Every side now, with the rates of its samples and whether it is behind. */
  status(): BacklogStatus[] {
    const at = this.now();
    return this.sides().map((side) => {
      const watched = this.watched.get(`${side.bot}\u0000${side.side}`);
      const rates = watched ? ratesOf(watched.samples) : undefined;
      return {
        bot: side.bot, side: side.side, lines: side.backlog.depth, oldestSeconds: ageSeconds(side.backlog, at),
        arrivingPerSecond: rates?.arriving ?? null, takenPerSecond: rates?.taken ?? null, limit: side.backlog.limit ?? null,
        behind: watched?.behind ?? false, ...(watched?.behind && watched.warning ? { warning: watched.warning } : {}),
      };
    });
  }

  private judge(side: BacklogSide, watched: Watched, at: number): void {
    const { depth } = side.backlog;
    const age = ageSeconds(side.backlog, at);
    const earlier = watched.samples.find((sample) => sample.at <= at - BACKLOG_RULES.risingForMs && sample.at > at - BACKLOG_RULES.rateWindowMs);
    const rising = depth >= BACKLOG_RULES.minLines && earlier !== undefined && depth > earlier.depth;
    const old = age * 1000 >= BACKLOG_RULES.oldMs;
    if (!watched.behind && (rising || old)) {
      watched.behind = true;
      const rates = ratesOf(watched.samples);
      const arriving = rates?.arriving ?? 0;
      const taken = rates?.taken ?? 0;
      const limit = side.backlog.limit ?? 'its platform';
      watched.warning = `${side.side} is falling behind: lines arrive at ${arriving.toFixed(1)}/s and it takes ${taken.toFixed(1)}/s `
        + `(limited by ${limit}); ${depth} waiting, the oldest ${age} s old. They wait on disk; raise the limit if the platform allows it.`;
      this.log.warn({ bot: side.bot, side: side.side, arrivingPerSecond: round(arriving), takenPerSecond: round(taken), lines: depth, oldestSeconds: age, limit },
        `bot ${side.bot}: ${watched.warning}`);
    } else if (watched.behind && depth < BACKLOG_RULES.minLines / 2 && age * 1000 < BACKLOG_RULES.oldMs / 2) {
      watched.behind = false;
      delete watched.warning;
      this.log.info({ bot: side.bot, side: side.side, lines: depth, oldestSeconds: age }, `bot ${side.bot}: ${side.side} caught up`);
    }
  }
}

/** Lines a second queued and taken between the first and the last sample (undefined with fewer than two). */
function ratesOf(samples: readonly Sample[]): { arriving: number; taken: number } | undefined {
  const first = samples[0];
  const last = samples.at(-1);
  if (!first || !last || last.at <= first.at) return undefined;
  const seconds = (last.at - first.at) / 1000;
  return { arriving: round((last.pushed - first.pushed) / seconds), taken: round((last.taken - first.taken) / seconds) };
}

function ageSeconds(backlog: SideBacklog, at: number): number {
  return backlog.depth > 0 && backlog.oldestAt !== undefined ? Math.max(0, Math.round((at - backlog.oldestAt) / 1000)) : 0;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
