/**
 * The plan and the bookkeeping of the gateway chaos run (test/chaos-gateway.test.ts, docs/chaos.md
 * "The gateway run"): which lines each side says and when, which faults strike and when, and the
 * tally of what arrived where. Every line carries a tag (`c00017`, `i00342`, `s00908`: its side's
 * letter and its number there) that is found again in whatever form a side shows it, so lost, doubled,
 * echoed and reordered lines are counted by tag, and the text around it is checked to be intact.
 */

/** A side of the gateway: `chat`, `irc`, and the platforms of the run (`slack`, `discord`, ...). */
export type Side = string;
const LETTERS: Record<Side, string> = { chat: 'c', irc: 'i', slack: 's', discord: 'd', matrix: 'm', xmpp: 'x', http: 'h', telegram: 't', mattermost: 'o', zulip: 'z', rocketchat: 'r' };
const SIDE_OF: Record<string, Side> = Object.fromEntries(Object.entries(LETTERS).map(([side, letter]) => [letter, side]));
const TAG = new RegExp(`\\b([${Object.values(LETTERS).join('')}])(\\d{5})\\b`, 'g');

/** Text around the tag: plain, and what each platform must carry through its escaping. */
const FLAVOURS = ['', '', ' & co', ' <3 this', ' \u{1f389}', ' 50% off'];

/** One line said on `side` by `who`. */
export interface Line {
  side: Side;
  who: string;
  tag: string;
  text: string;
}

/** Lines one person says in a row (people type in bursts), due `atMs` after the start. */
export interface Burst {
  side: Side;
  who: string;
  atMs: number;
  lines: Line[];
}

const between = (random: () => number, low: number, high: number) => low + random() * (high - low);
const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

export function tagOf(side: Side, n: number): string {
  return `${LETTERS[side]}${String(n).padStart(5, '0')}`;
}

/** The tags in a text as it arrived somewhere. */
export function tagsIn(text: string): string[] {
  return [...text.matchAll(TAG)].map((match) => match[0]);
}

export function sideOfTag(tag: string): Side {
  return SIDE_OF[tag[0]!]!;
}

/**
 * `perSide` lines for each side, in bursts of 1 to 4 by one of its `people`, the bursts of each side
 * spread evenly over `durationMs` (a little jitter so that the sides do not march in step).
 */
export function planLines(random: () => number, perSide: number, people: Record<Side, readonly string[]>, durationMs: number): Record<Side, Burst[]> {
  const plan = {} as Record<Side, Burst[]>;
  for (const side of Object.keys(people)) {
    const bursts: Burst[] = [];
    let n = 0;
    while (n < perSide) {
      const who = pick(random, people[side]!);
      const count = Math.min(perSide - n, 1 + Math.floor(random() * 4));
      const lines = Array.from({ length: count }, () => {
        n += 1;
        const tag = tagOf(side, n);
        return { side, who, tag, text: `${who} says ${tag}${pick(random, FLAVOURS)}` };
      });
      bursts.push({ side, who, atMs: 0, lines });
    }
    const step = durationMs / bursts.length;
    bursts.forEach((burst, index) => {
      burst.atMs = Math.round(Math.max(0, (index + between(random, -0.4, 0.4)) * step));
    });
    plan[side] = bursts.sort((a, b) => a.atMs - b.atMs);
  }
  return plan;
}

export type GatewayFault =
  | { kind: 'drop-chat-sockets' }
  /** The platform cuts its relay's connection (Slack drops or refreshes its socket, Discord drops the gateway, ...). */
  | { kind: 'platform-cut'; side: Side; variant: number }
  | { kind: 'irc-kill'; downMs: number }
  | { kind: 'bot-kill'; downMs: number };

export interface TimedGatewayFault {
  atMs: number;
  fault: GatewayFault;
}

/**
 * The faults of one run over `durationMs`: every chat socket dropped at random intervals all along;
 * each platform's connection cut by the platform `cutsPerPlatform` times (spread over the run, each
 * with a variant the platform picks its way of cutting by); the IRC server killed once and the bot
 * killed once (SIGKILL), one in the first half and the other in the second. (The run takes these
 * episodes one at a time: one that comes while another lasts waits for it.)
 */
export function planGatewayFaults(random: () => number, durationMs: number, platforms: readonly Side[], cutsPerPlatform = 3): TimedGatewayFault[] {
  const faults: TimedGatewayFault[] = [];
  const at = (from: number, to: number) => Math.round(between(random, from, to) * durationMs);
  for (let t = between(random, 800, 2500); t < durationMs - 1500; t += between(random, 800, 3500)) {
    faults.push({ atMs: Math.round(t), fault: { kind: 'drop-chat-sockets' } });
  }
  for (const side of platforms) {
    for (let cut = 0; cut < cutsPerPlatform; cut += 1) {
      const span = 0.85 / cutsPerPlatform;
      faults.push({ atMs: at(0.05 + cut * span, 0.05 + (cut + 1) * span), fault: { kind: 'platform-cut', side, variant: Math.floor(random() * 1_000) } });
    }
  }
  const [botAt, ircAt] = random() < 0.5 ? [at(0.1, 0.3), at(0.5, 0.7)] : [at(0.5, 0.7), at(0.1, 0.3)];
  faults.push({ atMs: botAt, fault: { kind: 'bot-kill', downMs: Math.round(between(random, 1000, 2500)) } });
  faults.push({ atMs: ircAt, fault: { kind: 'irc-kill', downMs: Math.round(between(random, 1000, 2500)) } });
  return faults.sort((a, b) => a.atMs - b.atMs);
}

/** What one side received from one other side. */
export interface PathTally {
  expected: number;
  arrived: number;
  lost: string[];
  /** Tags that arrived more than once (each named once), but for those `resent` explains. */
  doubled: string[];
  /**
   * Tags that arrived twice because the IRC server was killed while they were in flight: the first copy
   * among the last `inFlight` lines before the new connection's first, the second after it (see
   * Reconnection).
   */
  resent: string[];
  /** The first place where the lines of the origin arrived out of the order said, if anywhere. */
  outOfOrder?: string;
  /** Tags whose text arrived changed (beyond the side's name prefix and escaping). */
  altered: string[];
}

export interface SideTally {
  from: Record<Side, PathTally>;
  /** Lines said on this side that came back to it. */
  echoed: string[];
  /** Lines that arrived with no tag, or a tag nobody said. */
  strangers: string[];
}

/**
 * Where on a side the lines of a new connection begin after the old one died with lines in flight
 * (`at`, an index into what the side received), and how many lines could have been in flight (sent,
 * the confirmation not yet taken in: IRC's `queue.in_flight`). Used for the IRC server's SIGKILL only:
 * the server dies with the confirmations it had not sent yet and with the channel's history, so
 * nobody can tell afterwards whether it took such a line, and the relay sends it again. After the
 * bot's kill nothing is excused (the relays ask the channel's history (IRC) or look for the post's
 * metadata (Slack) before sending again) but on a platform with neither an idempotency key nor a
 * history a bot can read (Telegram): there the line in flight when the bot died may come twice.
 */
export interface Reconnection {
  at: number;
  inFlight: number;
}

/**
 * The tally of a run: for each side, what it received (texts in arrival order, already unescaped)
 * against what the two other sides said (in the order their origin has them).
 */
export function tally(said: Record<Side, Line[]>, received: Record<Side, string[]>, reconnections: Partial<Record<Side, Reconnection[]>> = {}): Record<Side, SideTally> {
  const sides = Object.keys(said);
  const lineOf = new Map(sides.flatMap((side) => said[side]!.map((line) => [line.tag, line] as const)));
  const result = {} as Record<Side, SideTally>;
  for (const side of sides) {
    const arrivals = new Map<string, string[]>();
    const places = new Map<string, number[]>();
    const order: string[] = [];
    const strangers: string[] = [];
    received[side]!.forEach((text, index) => {
      const tags = tagsIn(text).filter((tag) => lineOf.has(tag));
      if (tags.length !== 1) {
        strangers.push(text);
        return;
      }
      const tag = tags[0]!;
      if (!arrivals.has(tag)) order.push(tag);
      arrivals.set(tag, [...(arrivals.get(tag) ?? []), text]);
      places.set(tag, [...(places.get(tag) ?? []), index]);
    });
    const resentAcrossReconnection = (tag: string) => {
      const [first, second, ...more] = places.get(tag) ?? [];
      return second !== undefined && more.length === 0 && (reconnections[side] ?? []).some(({ at, inFlight }) =>
        first! >= at - inFlight && first! < at && second >= at);
    };
    const from: Record<Side, PathTally> = {};
    for (const origin of sides.filter((s) => s !== side)) {
      const expected = said[origin]!;
      const lost = expected.filter((line) => !arrivals.has(line.tag)).map((line) => line.tag);
      const twice = expected.filter((line) => (arrivals.get(line.tag)?.length ?? 0) > 1).map((line) => line.tag);
      const resent = twice.filter(resentAcrossReconnection);
      const doubled = twice.filter((tag) => !resent.includes(tag));
      const altered = expected.filter((line) => arrivals.get(line.tag)?.some((text) => !text.endsWith(line.text))).map((line) => line.tag);
      const came = order.filter((tag) => sideOfTag(tag) === origin);
      const wanted = expected.map((line) => line.tag).filter((tag) => arrivals.has(tag));
      const at = wanted.findIndex((tag, index) => came[index] !== tag);
      from[origin] = {
        expected: expected.length, arrived: came.length, lost, doubled, resent, altered,
        ...(at >= 0 ? { outOfOrder: `at ${at}: said ${wanted.slice(at, at + 3).join(' ')}, arrived ${came.slice(at, at + 3).join(' ')}` } : {}),
      };
    }
    const echoed = order.filter((tag) => sideOfTag(tag) === side);
    result[side] = { from, echoed, strangers };
  }
  return result;
}

/** One line per path for the summary: `irc←chat 1002/1002`, with what went wrong when anything did. */
export function describeTally(result: Record<Side, SideTally>): string[] {
  return Object.keys(result).flatMap((side) => [
    ...Object.entries(result[side]!.from).map(([origin, path]) => {
      const problems = [
        path.lost.length ? `${path.lost.length} lost (${path.lost.slice(0, 5).join(' ')})` : '',
        path.doubled.length ? `${path.doubled.length} doubled (${path.doubled.slice(0, 5).join(' ')})` : '',
        path.resent.length ? `${path.resent.length} sent again after a connection died with them in flight (${path.resent.slice(0, 5).join(' ')})` : '',
        path.altered.length ? `${path.altered.length} altered (${path.altered.slice(0, 5).join(' ')})` : '',
        path.outOfOrder ? `out of order ${path.outOfOrder}` : '',
      ].filter(Boolean);
      return `${side}<-${origin} ${path.arrived}/${path.expected}${problems.length ? `: ${problems.join(', ')}` : ''}`;
    }),
    ...(result[side]!.echoed.length ? [`${side}: ${result[side]!.echoed.length} echoed (${result[side]!.echoed.slice(0, 5).join(' ')})`] : []),
    ...(result[side]!.strangers.length ? [`${side}: ${result[side]!.strangers.length} strangers (${result[side]!.strangers.slice(0, 3).join(' | ')})`] : []),
  ]);
}
