import type { PlannedEndpoint, PlannedGateway } from '../gateway/gateway-plan.js';
import type { SideBacklog } from '../pipeline/plugin.js';
import type { Bot } from '../supervisor/bot.js';
import type { PluginReport } from '../supervisor/bot-plugins.js';
import { chatSideKey, relaySideKey } from '../supervisor/side-traffic.js';

/** How often each gateway side is sampled, and how many samples each side keeps (15 minutes at 5 s). */
export const GATEWAY_SAMPLING = { everyMs: 5_000, samples: 180 } as const;

/** One side of a gateway as `/status` shows it (docs/operations.md "Gateways"). */
export interface GatewaySideStatus {
  /** `chat general`, `irc #general`. */
  side: string;
  bot: string;
  kind: 'chat' | 'relay';
  /** The relay instance (`relay-irc`), for a relay's side. */
  instance?: string;
  direction: 'in' | 'out' | 'inout';
  /** A chat's socket state; a relay's connection state (its own words); `not running`, `not joined`. */
  state: string;
  /** Lines the side handed to the gateways, and lines it took from them (posted, sent), since the start. */
  linesIn: number;
  linesOut: number;
  /** Lines waiting for the side (its outbox or channel queue). */
  queue: number;
  /** When the last line came in from or went out to the side (going out: to the sampling's few seconds). */
  lastLineAt: string | null;
  lastLineSeconds: number | null;
  /** The side's lag: how long the oldest line waiting for it has waited, in seconds (0 when none waits). */
  lagSeconds: number;
  /** Lines in and out over the last minute (null until the first sample). */
  lastMinute: { in: number; out: number } | null;
  /** One point per sample, oldest first: lines a second (in and out) since the sample before, and the queue. */
  history: { perSecond: number[]; queue: number[] };
}

export interface GatewayStatus {
  name: string;
  /** Made from a relay's own `channels:` rather than bots.yaml's `gateways:`. */
  implied: boolean;
  /** Seconds between two points of the sides' history, and when the last point was taken. */
  sampleEverySeconds: number;
  /** How many points a side's history holds at most (15 minutes at the 5 s sampling). */
  historyPoints: number;
  lastSampleAt: string | null;
  sides: GatewaySideStatus[];
}

/** A side's samples, in a ring of fixed size: the oldest is overwritten. */
class SampleRing {
  private readonly at: Float64Array;
  private readonly in: Float64Array;
  private readonly out: Float64Array;
  private readonly queue: Float64Array;
  private next = 0;
  size = 0;
  /** When the side's lines out last went up (seen by a sample). */
  lastOutAt: number | undefined;

  constructor(readonly capacity: number) {
    this.at = new Float64Array(capacity);
    this.in = new Float64Array(capacity);
    this.out = new Float64Array(capacity);
    this.queue = new Float64Array(capacity);
  }

  push(sample: Sample): void {
    const newest = this.size > 0 ? this.sample(this.size - 1) : undefined;
    if (newest && sample.out > newest.out) this.lastOutAt = sample.at;
    this.at[this.next] = sample.at;
    this.in[this.next] = sample.in;
    this.out[this.next] = sample.out;
    this.queue[this.next] = sample.queue;
    this.next = (this.next + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /** The i-th sample, oldest first. */
  sample(i: number): Sample {
    const index = (this.next - this.size + i + this.capacity) % this.capacity;
    return { at: this.at[index]!, in: this.in[index]!, out: this.out[index]!, queue: this.queue[index]! };
  }
}

interface Sample {
  at: number;
  in: number;
  out: number;
  queue: number;
}

interface SideNow {
  status: Omit<GatewaySideStatus, 'lastLineAt' | 'lastLineSeconds' | 'lagSeconds' | 'lastMinute' | 'history'>;
  inLastAt: number | undefined;
  oldestAt: number | undefined;
  /** The counters' key among the samples. */
  key: string;
}

/**
 * Each gateway's sides, now and over the last 15 minutes: the sides' counters (lines in, lines out, the
 * queue) are sampled every few seconds into a ring of fixed size per side, so a page opened late still
 * draws the last 15 minutes, and memory stays bounded (GATEWAY_SAMPLING.samples points a side). Reading
 * it is O(sides × samples): counters and states, never a pass over lines.
 */
export class GatewayWatch {
  private readonly rings = new Map<string, SampleRing>();
  private lastSampleAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly source: { bots(): readonly Bot[]; gateways(): readonly PlannedGateway[] },
    private readonly everyMs: number = GATEWAY_SAMPLING.everyMs,
    private readonly now: () => number = Date.now,
  ) {}

  /** Samples now (the first point: lines from here on count in the last minute) and every few seconds. */
  start(): void {
    if (this.timer) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Takes one sample of every side (the timer's work). */
  sample(): void {
    const at = this.now();
    const seen = new Set<string>();
    for (const gateway of this.source.gateways()) {
      for (const side of this.sidesNow(gateway)) {
        if (seen.has(side.key)) continue;
        seen.add(side.key);
        let ring = this.rings.get(side.key);
        if (!ring) this.rings.set(side.key, ring = new SampleRing(GATEWAY_SAMPLING.samples + 1));
        const { linesIn, linesOut, queue } = side.status;
        ring.push({ at, in: linesIn, out: linesOut, queue });
      }
    }
    for (const key of this.rings.keys()) if (!seen.has(key)) this.rings.delete(key);
    this.lastSampleAt = at;
  }

  /** Every gateway with its sides, now, and each side's history. */
  status(): GatewayStatus[] {
    const at = this.now();
    return this.source.gateways().map((gateway) => ({
      name: gateway.name, implied: gateway.implied, sampleEverySeconds: this.everyMs / 1000, historyPoints: GATEWAY_SAMPLING.samples,
      lastSampleAt: this.lastSampleAt === undefined ? null : new Date(this.lastSampleAt).toISOString(),
      sides: this.sidesNow(gateway).map((side) => this.sideStatus(side, at)),
    }));
  }

  private sideStatus(side: SideNow, at: number): GatewaySideStatus {
    const ring = this.rings.get(side.key);
    const last = Math.max(side.inLastAt ?? 0, ring?.lastOutAt ?? 0);
    const history = { perSecond: [] as number[], queue: [] as number[] };
    let lastMinute: GatewaySideStatus['lastMinute'] = null;
    if (ring && ring.size > 0) {
      for (let i = 0; i < ring.size; i += 1) {
        const sample = ring.sample(i);
        history.queue.push(sample.queue);
        if (i === 0) continue;
        const before = ring.sample(i - 1);
        const seconds = (sample.at - before.at) / 1000;
        // Counters that went back (a relay started again) count from zero.
        const lines = Math.max(0, sample.in - before.in) + Math.max(0, sample.out - before.out);
        history.perSecond.push(seconds > 0 ? round(lines / seconds) : 0);
      }
      history.queue.shift();
      lastMinute = this.lastMinute(ring, side, at);
    }
    return {
      ...side.status,
      lastLineAt: last > 0 ? new Date(last).toISOString() : null,
      lastLineSeconds: last > 0 ? Math.max(0, Math.round((at - last) / 1000)) : null,
      lagSeconds: side.status.queue > 0 && side.oldestAt !== undefined ? Math.max(0, Math.round((at - side.oldestAt) / 1000)) : 0,
      lastMinute,
      history,
    };
  }

  /** Lines in and out since the newest sample at least a minute old (the oldest kept, if none is), to the live counters. */
  private lastMinute(ring: SampleRing, side: SideNow, at: number): { in: number; out: number } {
    let from = ring.sample(0);
    for (let i = ring.size - 1; i >= 0; i -= 1) {
      const sample = ring.sample(i);
      if (sample.at <= at - 60_000) {
        from = sample;
        break;
      }
    }
    return { in: Math.max(0, side.status.linesIn - from.in), out: Math.max(0, side.status.linesOut - from.out) };
  }

  /** The gateway's sides as they are now: counters and states of the bots' chats and relays. */
  private sidesNow(gateway: PlannedGateway): SideNow[] {
    const bots = new Map(this.source.bots().map((bot) => [bot.name, bot]));
    const reports = new Map<string, PluginReport[]>();
    return gateway.endpoints.map((endpoint) => {
      const bot = bots.get(endpoint.bot);
      if (endpoint.kind === 'chat') return chatSide(endpoint, bot);
      let botReports = reports.get(endpoint.bot);
      if (!botReports) reports.set(endpoint.bot, botReports = bot?.pluginReports() ?? []);
      return relaySide(endpoint, bot, botReports.find((report) => report.instance === endpoint.instance));
    });
  }
}

function chatSide(endpoint: Extract<PlannedEndpoint, { kind: 'chat' }>, bot: Bot | undefined): SideNow {
  const runner = bot?.runners.find((r) => r.info.subject === endpoint.chat || String(r.info.id) === endpoint.chat);
  const backlog = runner?.outbox.backlog;
  const traffic = runner && bot ? bot.linesIn.read(chatSideKey(String(runner.info.id))) : { lines: 0, lastAt: undefined };
  return {
    key: `${endpoint.bot}\u0000chat\u0000${runner ? runner.info.id : endpoint.chat}`,
    inLastAt: traffic.lastAt, oldestAt: backlog?.oldestAt,
    status: {
      side: `chat ${runner?.info.subject ?? endpoint.chat}`, bot: endpoint.bot, kind: 'chat', direction: endpoint.direction,
      state: !runner ? 'not joined' : runner.waitingToJoin ? 'waiting_to_join' : runner.connection.state,
      linesIn: traffic.lines, linesOut: backlog?.taken ?? 0, queue: backlog?.depth ?? 0,
    },
  };
}

function relaySide(endpoint: Extract<PlannedEndpoint, { kind: 'relay' }>, bot: Bot | undefined, report: PluginReport | undefined): SideNow {
  const backlog = backlogOf(report?.status.backlogs, endpoint);
  const traffic = bot ? bot.linesIn.read(relaySideKey(endpoint.instance, endpoint.channelKey)) : { lines: 0, lastAt: undefined };
  return {
    key: `${endpoint.bot}\u0000${endpoint.instance}\u0000${endpoint.channelKey}`,
    inLastAt: traffic.lastAt, oldestAt: backlog?.oldestAt,
    status: {
      side: `${endpoint.platform} ${endpoint.channel}`, bot: endpoint.bot, kind: 'relay', instance: endpoint.instance, direction: endpoint.direction,
      state: !report ? 'not running' : report.status.connection?.state ?? 'running',
      linesIn: traffic.lines, linesOut: backlog?.taken ?? 0, queue: backlog?.depth ?? 0,
    },
  };
}

/** A relay's backlog of a channel: keyed by the channel as the relay names it (IRC folds case). */
function backlogOf(backlogs: Record<string, SideBacklog> | undefined, endpoint: { channel: string; channelKey: string }): SideBacklog | undefined {
  if (!backlogs) return undefined;
  const exact = backlogs[endpoint.channel] ?? backlogs[endpoint.channelKey];
  if (exact) return exact;
  const folded = endpoint.channelKey.toLowerCase();
  return Object.entries(backlogs).find(([channel]) => channel.toLowerCase() === folded)?.[1];
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
