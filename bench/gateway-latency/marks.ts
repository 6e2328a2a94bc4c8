/**
 * When each bench line was sent and first seen at each observation point, all read from this process's
 * one clock (performance.now()). A line is `lat <tag> <n>`; every side shows it with something around
 * it (the chat as `<talker> lat g0 5`), so it is found by that pattern anywhere in the text. Only tags
 * that are open are kept: probes and earlier runs still arriving late are not mixed in.
 */
/**
 * Where a line was seen: sent, the chat, Slack, or another platform of the gateway (its side's name);
 * `irc` is the channel on the second IRC server of the IRC → IRC setups.
 */
export type Point = 'sent' | 'chat' | 'slack' | 'discord' | 'matrix' | 'xmpp' | 'http' | 'irc' | 'telegram' | 'mattermost' | 'zulip' | 'rocketchat';

export type Times = Partial<Record<Point, number>>;

const LINE = /\blat ([a-z0-9]+) (\d+)\b/;

export class Marks {
  private readonly byTag = new Map<string, Map<number, Times>>();
  /** Every sighting of an open tag's lines at each point, in the order they came (doubles included). */
  private readonly arrivalsByTag = new Map<string, Map<Point, number[]>>();

  /** The text a line `n` of `tag` is sent as. */
  static text(tag: string, n: number): string {
    return `lat ${tag} ${n}`;
  }

  open(tag: string): Map<number, Times> {
    const lines = new Map<number, Times>();
    this.byTag.set(tag, lines);
    this.arrivalsByTag.set(tag, new Map());
    return lines;
  }

  /** The line numbers of `tag` seen at `point`, in arrival order, each time it was seen (while the tag was open). */
  arrivals(tag: string, point: Exclude<Point, 'sent'>): number[] {
    return this.arrivalsByTag.get(tag)?.get(point) ?? [];
  }

  /** Stops recording `tag`; its arrivals stay readable until it is opened again or `forget` is called. */
  close(tag: string): void {
    this.byTag.delete(tag);
  }

  forget(tag: string): void {
    this.byTag.delete(tag);
    this.arrivalsByTag.delete(tag);
  }

  sent(tag: string, n: number, at: number): void {
    this.at(tag, n, 'sent', at);
  }

  /** Something an observer saw at `at`: kept when it is a line of an open tag not seen there yet. */
  seen(point: Exclude<Point, 'sent'>, text: string, at: number): void {
    const found = LINE.exec(text);
    if (found) this.at(found[1]!, Number(found[2]), point, at);
  }

  private at(tag: string, n: number, point: Point, at: number): void {
    const lines = this.byTag.get(tag);
    if (!lines) return;
    if (point !== 'sent') {
      const arrivals = this.arrivalsByTag.get(tag)!;
      const order = arrivals.get(point) ?? [];
      if (order.length === 0) arrivals.set(point, order);
      order.push(n);
    }
    let times = lines.get(n);
    if (!times) lines.set(n, (times = {}));
    times[point] ??= at;
  }
}
