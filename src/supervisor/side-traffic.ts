/**
 * Lines that came into the gateways from each side of one bot (one of its chats, a channel of one of
 * its relays) and when the last one did: the status page's "in" per side (docs/operations.md). A count
 * and a time per side, touched once a line: no line is kept.
 */
export class SideTraffic {
  private readonly sides = new Map<string, { lines: number; lastAt: number }>();

  note(side: string, at = Date.now()): void {
    const known = this.sides.get(side);
    if (known) {
      known.lines += 1;
      known.lastAt = at;
    } else this.sides.set(side, { lines: 1, lastAt: at });
  }

  read(side: string): { lines: number; lastAt: number | undefined } {
    const known = this.sides.get(side);
    return known ? { lines: known.lines, lastAt: known.lastAt } : { lines: 0, lastAt: undefined };
  }
}

/** The key of a chat's side, and of a relay channel's (its channel in the form that compares equal). */
export const chatSideKey = (chatId: string): string => `chat ${chatId}`;
export const relaySideKey = (instance: string, channelKey: string): string => `${instance} ${channelKey}`;
