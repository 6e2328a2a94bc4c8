import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { IrcServer } from '../../test/helpers/irc-server.js';
import { stopChild, type Running } from '../lib/child.js';
import { ROOT } from '../lib/paths.js';
import type { Figure } from '../lib/report.js';
import type { ServiceProcess } from '../lib/service-process.js';
import { spread } from '../lib/stats.js';
import type { Times } from './marks.js';
import { IRC_CHANNEL, startBridge } from './setups.js';

/**
 * The IRC → IRC row of the gateway bench (issue #32): lines said on one ngircd reach a channel of a
 * second ngircd (each its own process on loopback), through
 *
 * - `gateway`: one bot, two relay-irc (relay-irc on server A, relay-irc-2 on server B), and a named
 *   gateway of chat general and both channels: IRC A → IRC B from the gateway's intake, the line posted
 *   into the chat beside it (it must arrive there too);
 * - `bare`: a raw client reading the channel on A and writing each line to the channel on B, confirming
 *   nothing (bare-irc-irc-relay.ts, in a process of its own).
 *
 * Each at 10 and 100 lines a second. A watcher on B stamps arrivals; lost, doubled and out-of-order
 * lines are counted from the order they arrived in.
 */
export type IrcIrcPath = 'gateway' | 'bare';
export const IRC_IRC_RATES = [10, 100] as const;
/** A line seen twice usually comes late (a resend): the watcher keeps listening this long after the last line. */
export const SETTLE_MS = 500;
/** The target: a relay-to-relay hop within twice the bare relay's p50 and p99 (p99: + 5 ms for one stall of this shared machine). */
const LIMIT = { factor: 2, plusMs: 5 };

export interface IrcIrcSides {
  service: ServiceProcess;
  irc: IrcServer;
  ircB: IrcServer;
}

/** Measured lines at a rate: all of them at 100 a second; half at 10 a second (each takes 10 times as long). */
export function linesAt(rate: number, measured: number): number {
  return rate >= 100 ? measured : Math.ceil(measured / 2);
}

function relayIrc(port: number): unknown {
  // rate: off, as in the other setups: ngircd's penalties are off, and the relay's pacing is not what is measured.
  return { use: 'relay-irc', with: { server: '127.0.0.1', port, tls: false, nick: 'gwbot', channels: {}, rate: 'off' } };
}

export async function startIrcToIrc(path: IrcIrcPath, sides: IrcIrcSides, dir: string, run: string): Promise<Running> {
  if (path === 'gateway') {
    const endpoints = [{ chat: 'general' }, { irc: IRC_CHANNEL, plugin: 'relay-irc' }, { irc: IRC_CHANNEL, plugin: 'relay-irc-2' }];
    return startBridge(sides.service, dir, run, [relayIrc(sides.irc.port), relayIrc(sides.ircB.port)], [{ name: 'general', endpoints }]);
  }
  const settings = { fromPort: sides.irc.port, toPort: sides.ircB.port, nick: 'bare', channel: IRC_CHANNEL };
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/gateway-latency/bare-irc-irc-relay.ts'), JSON.stringify(settings)], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 2],
  });
  await new Promise<void>((ready, fail) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) ready();
    });
    child.once('exit', (code) => fail(new Error(`the bare IRC → IRC relay ended (${code}) before it was ready`)));
  });
  return { stop: () => stopChild(child) };
}

export interface Integrity {
  lost: number;
  doubled: number;
  /** Lines that arrived after a line said later than them. */
  outOfOrder: number;
}

/** Lost, doubled and out of order, from the numbers of `count` lines in the order they arrived (each sighting). */
export function integrity(arrivals: readonly number[], count: number): Integrity {
  const seen = new Set<number>();
  let doubled = 0;
  let outOfOrder = 0;
  let highest = -1;
  for (const n of arrivals) {
    if (seen.has(n)) {
      doubled += 1;
      continue;
    }
    seen.add(n);
    if (n < highest) outOfOrder += 1;
    else highest = n;
  }
  return { lost: count - seen.size, doubled, outOfOrder };
}

interface Sum extends Integrity {
  lines: number;
  latencies: number[];
  /** The gateway's other side: IRC A → a chat member reads the bot's post (beside the hop to IRC B). */
  toChat: number[];
}

const key = (path: IrcIrcPath, rate: number) => `${path} ${rate}`;
const PATH_LABEL: Record<IrcIrcPath, string> = { gateway: 'gateway', bare: 'bare IRC → IRC relay' };

/** The IRC → IRC figures of a run, summed over its rounds. */
export class IrcToIrcResults {
  private readonly sums = new Map<string, Sum>();

  /** One measured turn: its lines' times and the line numbers in the order the watcher on B saw them; answers its round's rows. */
  record(path: IrcIrcPath, rate: number, round: number, lines: readonly Times[], arrivals: readonly number[]): Array<Array<string | number>> {
    const latencies: number[] = [];
    const toChat: number[] = [];
    for (const t of lines) {
      if (t.sent !== undefined && t.irc !== undefined) latencies.push(t.irc - t.sent);
      if (t.sent !== undefined && t.chat !== undefined) toChat.push(t.chat - t.sent);
    }
    const checked = integrity(arrivals, lines.length);
    const sum = this.sum(path, rate);
    sum.lines += lines.length;
    sum.latencies.push(...latencies);
    if (path === 'gateway') {
      sum.toChat.push(...toChat);
    }
    sum.lost += checked.lost;
    sum.doubled += checked.doubled;
    sum.outOfOrder += checked.outOfOrder;
    const s = spread(latencies);
    process.stderr.write(`round ${round + 1} IRC → IRC ${rate}/s ${path}: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, ` +
      `lost ${checked.lost}, doubled ${checked.doubled}, out of order ${checked.outOfOrder}\n`);
    return [[`round ${round + 1}: IRC → IRC ${rate}/s`, PATH_LABEL[path], s.count, s.p50, s.p99, s.max, s.mean, checked.lost, checked.doubled, checked.outOfOrder]];
  }

  /** The summary rows: each rate's gateway and bare relay, and the gateway's post of the lines into the chat. */
  rows(): Array<Array<string | number>> {
    return IRC_IRC_RATES.flatMap((rate) => {
      const gw = this.sum('gateway', rate);
      const bare = this.sum('bare', rate);
      const row = (hop: string, path: string, values: number[], sum?: Sum) => {
        const s = spread(values);
        return [hop, path, s.count, s.p50, s.p99, s.max, s.mean, sum?.lost ?? '–', sum?.doubled ?? '–', sum?.outOfOrder ?? '–'];
      };
      return [
        row(`IRC → IRC ${rate}/s`, PATH_LABEL.gateway, gw.latencies, gw),
        row(`IRC → IRC ${rate}/s`, PATH_LABEL.bare, bare.latencies, bare),
        row(`  beside it IRC → chat`, PATH_LABEL.gateway, gw.toChat),
      ];
    });
  }

  figures(): Figure[] {
    return IRC_IRC_RATES.flatMap((rate) => {
      const gw = spread(this.sum('gateway', rate).latencies);
      const bare = spread(this.sum('bare', rate).latencies);
      const meaning = 'of the bare IRC → IRC relay\'s (lower is better)';
      const p50Limit = LIMIT.factor * bare.p50;
      const p99Limit = LIMIT.factor * bare.p99 + LIMIT.plusMs;
      return [
        {
          label: `gateway IRC → IRC at ${rate}/s p50`, value: gw.p50, unit: 'ms', baseline: { label: 'bare relay p50', value: bare.p50 }, ratio: gw.p50 / bare.p50, ratioMeaning: meaning,
          limit: { text: `≤ ${LIMIT.factor}× the bare p50 = ${p50Limit.toFixed(1)} ms (#32)`, ok: gw.p50 <= p50Limit },
        },
        {
          label: `gateway IRC → IRC at ${rate}/s p99`, value: gw.p99, unit: 'ms', baseline: { label: 'bare relay p99', value: bare.p99 }, ratio: gw.p99 / bare.p99, ratioMeaning: meaning,
          limit: { text: `≤ ${LIMIT.factor}× the bare p99 + ${LIMIT.plusMs} ms = ${p99Limit.toFixed(1)} ms (#32)`, ok: gw.p99 <= p99Limit },
        },
      ];
    });
  }

  notes(rounds: number): string[] {
    const per = IRC_IRC_RATES.map((rate) => `${this.sum('gateway', rate).lines} lines at ${rate}/s`).join(' and ');
    const broken = this.brokenInGateway() + IRC_IRC_RATES.reduce((n, rate) => n + this.broken(this.sum('bare', rate)), 0);
    return [
      `IRC → IRC: a talker on one ngircd, a watcher on a second ngircd (each its own process on loopback), ${per} per path over ${rounds} rounds. The gateway: one bot with two relay-irc (rate: off), one per server, and a named gateway of chat general and both channels (the gateway's intake hands the line to the second server's relay at once, and posts it into the chat beside it: no read of the chat's history is waited for). The baseline: a raw client in the channel on the first server writing each line to its own connection to the second, confirming nothing (bench/gateway-latency/bare-irc-irc-relay.ts, a process of its own). From just before the talker's PRIVMSG is written to the watcher's socket reading the line; "beside it" is the same line's way into the chat (until a chat member's socket reads the bot's post), which each line must make too.`,
      `Lost: not seen on the second server within 15 s; doubled: seen there more than once (watched ${SETTLE_MS} ms past the last line); out of order: seen after a line said later.`,
      ...(broken > 0 ? [`IRC → IRC: ${broken} lines lost, doubled or out of order (see the table)`] : []),
    ];
  }

  /** Lines the gateway lost, doubled or put out of order: a bug, not a slow figure. */
  brokenInGateway(): number {
    return IRC_IRC_RATES.reduce((n, rate) => n + this.broken(this.sum('gateway', rate)), 0);
  }

  private broken(sum: Sum): number {
    return sum.lost + sum.doubled + sum.outOfOrder;
  }

  private sum(path: IrcIrcPath, rate: number): Sum {
    let sum = this.sums.get(key(path, rate));
    if (!sum) this.sums.set(key(path, rate), (sum = { lines: 0, latencies: [], toChat: [], lost: 0, doubled: 0, outOfOrder: 0 }));
    return sum;
  }
}
