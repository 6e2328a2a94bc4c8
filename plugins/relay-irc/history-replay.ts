import { randomBytes } from 'node:crypto';
import type { IrcMessage } from 'irc-framework';
import { ircLower } from './routes.js';

/** One of our own lines as a channel's history shows it. */
export interface ReplayedLine {
  text: string;
  msgid?: string;
}

/**
 * Reads what a server replays of a channel's history when we join it (InspIRCd's and UnrealIRCd's
 * channel mode +H, Ergo's replay on join: a `chathistory` batch right after the names), keeping our
 * own lines. A PING sent after the JOIN tells when the replay is over: the server handles a client's
 * commands in order, so the PONG comes after whatever the join brought. A server without history
 * answers the PING all the same, with nothing replayed.
 */
export class HistoryReplay {
  private readonly tag = `gwh${randomBytes(3).toString('hex')}`;
  private next = 1;
  /** PING tokens waiting for their PONG, and the channel each one settles. */
  private readonly waiting = new Map<string, { channelKey: string; lines: ReplayedLine[] }>();
  /** Open history batches (their ids) and the channel each one replays. */
  private readonly batches = new Map<string, string>();

  constructor(private readonly isOwn: (nick: string) => boolean) {}

  /** A new connection: replays and PONGs of the old one will not come. */
  reset(): void {
    this.waiting.clear();
    this.batches.clear();
  }

  /** We joined a channel: the PING to send after the join, whose PONG ends its replay. */
  begin(channelKey: string): string {
    const token = `${this.tag}.${this.next++}`;
    this.waiting.set(token, { channelKey, lines: [] });
    return `PING :${token}`;
  }

  /** Every server message; at the PONG that ends a channel's replay, our own lines it held, in order. */
  onMessage(message: IrcMessage): { channelKey: string; lines: ReplayedLine[] } | undefined {
    if (message.command === 'BATCH') {
      const [ref = '', type = '', target = ''] = message.params;
      if (ref.startsWith('+') && /chathistory/i.test(type)) this.batches.set(ref.slice(1), ircLower(target));
      else if (ref.startsWith('-')) this.batches.delete(ref.slice(1));
      return undefined;
    }
    if (message.command === 'PRIVMSG') {
      const batch = typeof message.tags.batch === 'string' ? this.batches.get(message.tags.batch) : undefined;
      if (batch === undefined || !this.isOwn(message.nick)) return undefined;
      const msgid = typeof message.tags.msgid === 'string' ? message.tags.msgid : undefined;
      for (const wait of this.waiting.values()) {
        if (wait.channelKey === batch) wait.lines.push({ text: message.params[1] ?? '', msgid });
      }
      return undefined;
    }
    if (message.command === 'PONG') {
      const token = message.params.at(-1) ?? '';
      const wait = this.waiting.get(token);
      if (!wait) return undefined;
      this.waiting.delete(token);
      return wait;
    }
    return undefined;
  }
}

/**
 * How many of the queue's first lines the channel's history shows were taken already: lines sent on a
 * connection that died (or by a process that was killed) before the server's confirmation came back.
 * Only our lines after `last` count (the server's id of the last line whose confirmation we had); when
 * the history does not reach back to it (too short, or lost with a server restart) nothing can be
 * told apart from older lines, so nothing is settled and the lines go again, as without history.
 * Lines match by their text, in order, from the queue's head.
 */
export function alreadyTaken(queued: readonly string[], replay: readonly ReplayedLine[], last: string | undefined): { count: number; last?: string } {
  if (last === undefined) return { count: 0 };
  const from = replay.findIndex((line) => line.msgid === last);
  if (from < 0) return { count: 0 };
  let count = 0;
  let newest: string | undefined;
  for (const line of replay.slice(from + 1)) {
    if (count >= queued.length || queued[count] !== line.text) break;
    newest = line.msgid;
    count += 1;
  }
  return count > 0 && newest !== undefined ? { count, last: newest } : { count: 0 };
}
