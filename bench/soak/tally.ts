/**
 * Every line a long bench says, and every time a watched side showed it, read from this process's one
 * clock. A line is `soak <origin> <n>`: origin `c` said in the chat by a member, `i` on IRC by a raw
 * client, `h` POSTed to the HTTP API; `p`/`q` are probes (chat/IRC) that only show the path is up and
 * are not counted. Each side shows a line with something around it (`<talker> soak i 5`), so it is
 * found anywhere in the text. A responder's answer to `!pingn soak c 17` is `PONG:SOAK C 17` (upper
 * case, so it is not taken for the line itself).
 */
export type Origin = 'c' | 'i' | 'h' | 'p' | 'q';
/** Where a line was seen: a member's chat socket, an IRC client (the bot's PRIVMSGs only), the HTTP API's event stream; `pong` a responder's answer to it in the chat. */
export type Point = 'chat' | 'irc' | 'http' | 'pong';

export interface Line {
  origin: Origin;
  n: number;
  /** Its place among all counted lines said, from 1. */
  seq: number;
  sent: number;
  ping: boolean;
  seen: Partial<Record<Point, { first: number; count: number }>>;
}

/**
 * How often each origin's line should show at each point: a member's chat line shows in the chat
 * (the member's own post), on IRC and on the stream; an IRC line in the chat and on the stream (never
 * back on IRC); a POSTed line in the chat and on IRC (never back to the API's own channel).
 */
export const EXPECTED: Record<'c' | 'i' | 'h', Record<Exclude<Point, 'pong'>, number>> = {
  c: { chat: 1, irc: 1, http: 1 },
  i: { chat: 1, irc: 0, http: 1 },
  h: { chat: 1, irc: 1, http: 0 },
};

const LINE = /\bsoak ([cihpq]) (\d+)\b/;
const PONG = /PONG:SOAK C (\d+)/;

export class Tally {
  readonly lines = new Map<string, Line>();
  private readonly next: Record<Origin, number> = { c: 0, i: 0, h: 0, p: 0, q: 0 };
  private counted = 0;

  /** Numbers the next line of `origin`, notes when it is said, and answers its text. */
  say(origin: Origin, ping = false): { text: string; line: Line } {
    const n = (this.next[origin] += 1);
    const probe = origin === 'p' || origin === 'q';
    const line: Line = { origin, n, seq: probe ? 0 : (this.counted += 1), sent: performance.now(), ping, seen: {} };
    this.lines.set(`${origin} ${n}`, line);
    const text = `soak ${origin} ${n}`;
    return { text: ping ? `!pingn ${text}` : text, line };
  }

  /** Counted lines said so far. */
  get said(): number {
    return this.counted;
  }

  seen(point: Exclude<Point, 'pong'>, text: string, at: number): void {
    const found = LINE.exec(text);
    if (found) this.mark(`${found[1]} ${found[2]}`, point, at);
    if (point !== 'chat') return;
    const pong = PONG.exec(text);
    if (pong) this.mark(`c ${pong[1]}`, 'pong', at);
  }

  private mark(key: string, point: Point, at: number): void {
    const line = this.lines.get(key);
    if (!line) return;
    const seen = line.seen[point];
    if (seen) seen.count += 1;
    else line.seen[point] = { first: at, count: 1 };
  }

  /** The counted lines, in the order said. */
  counting(): Line[] {
    return [...this.lines.values()].filter((line) => line.seq > 0);
  }

  /** Whether every counted line has shown everywhere it should (answered pings included). */
  complete(): boolean {
    return this.missing() === 0;
  }

  /** Showings still missing: a line not (yet) seen at a point it should reach, a ping not (yet) answered. */
  missing(lines: readonly Line[] = this.counting()): number {
    let missing = 0;
    for (const line of lines) {
      const expected = EXPECTED[line.origin as 'c' | 'i' | 'h'];
      for (const point of ['chat', 'irc', 'http'] as const) if (expected[point] > 0 && !line.seen[point]) missing += 1;
      if (line.ping && !line.seen.pong) missing += 1;
    }
    return missing;
  }

  /**
   * Lost: showings that never came (per point, and pings never answered). Doubled: showings beyond the
   * expected count, a line coming back to the side it was said on included (a loop).
   */
  account(): { lost: Record<string, number>; doubled: Record<string, number>; lostTotal: number; doubledTotal: number } {
    const lost: Record<string, number> = {};
    const doubled: Record<string, number> = {};
    const add = (into: Record<string, number>, key: string, by: number) => (into[key] = (into[key] ?? 0) + by);
    for (const line of this.counting()) {
      const expected = EXPECTED[line.origin as 'c' | 'i' | 'h'];
      for (const point of ['chat', 'irc', 'http'] as const) {
        const count = line.seen[point]?.count ?? 0;
        if (count < expected[point]) add(lost, `${line.origin}→${point}`, expected[point] - count);
        if (count > expected[point]) add(doubled, `${line.origin}→${point}`, count - expected[point]);
      }
      if (line.ping && !line.seen.pong) add(lost, 'pong', 1);
      if ((line.seen.pong?.count ?? 0) > 1) add(doubled, 'pong', line.seen.pong!.count - 1);
    }
    const sum = (into: Record<string, number>) => Object.values(into).reduce((a, b) => a + b, 0);
    return { lost, doubled, lostTotal: sum(lost), doubledTotal: sum(doubled) };
  }
}

/** The hops a long bench times, each from one clock. */
export const HOPS = {
  'irc-chat': { label: 'IRC → chat', origin: 'i', from: 'sent', to: 'chat' },
  'chat-irc': { label: 'chat → IRC', origin: 'c', from: 'chat', to: 'irc' },
  'http-chat': { label: 'HTTP → chat', origin: 'h', from: 'sent', to: 'chat' },
  ping: { label: '!pingn → answer', origin: 'c', from: 'sent', to: 'pong' },
} as const;
export type Hop = keyof typeof HOPS;

/** A hop's latencies (ms) over some lines: chat → IRC from the moment a member's socket read the line in the chat. */
export function hopLatencies(lines: readonly Line[], hop: Hop): number[] {
  const { origin, from, to } = HOPS[hop];
  const out: number[] = [];
  for (const line of lines) {
    if (line.origin !== origin || (hop === 'ping' && !line.ping)) continue;
    const start = from === 'sent' ? line.sent : line.seen[from]?.first;
    const end = line.seen[to]?.first;
    if (start !== undefined && end !== undefined) out.push(end - start);
  }
  return out;
}
