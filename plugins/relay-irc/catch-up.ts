import type { Logger } from 'pino';
import { advance, lineHash, saidAfter, type CatchUpPosition, type PositionStore } from './catch-up-position.js';
import type { IrcChannelLine } from './incoming.js';
import { ircLower } from './routes.js';

/** What the server offers to read lines said while the relay was away (docs/plugins/relay-irc.md). */
export type HistoryKind = 'chathistory' | 'bouncer' | 'replay-on-join' | 'none';

/** What the server told of itself at registration: the capabilities it offers and its ISUPPORT tokens. */
export interface ServerInfo {
  caps: readonly string[];
  supports(token: string): unknown;
}

/** Lines asked of CHATHISTORY at once when the server names no limit of its own. */
const CHATHISTORY_PAGE = 100;
/** Live lines held while CHATHISTORY is unanswered go on after this long all the same (a server that never answers). */
const ANSWER_WAIT_MS = 15_000;

/** Which of the ways to read missed lines this server offers, best first. */
export function historyKind(server: ServerInfo): HistoryKind {
  if (server.caps.includes('draft/chathistory') || server.supports('CHATHISTORY')) return 'chathistory';
  // ZNC offers its own capabilities (znc.in/...): its buffer is played back on every connection.
  if (server.caps.some((cap) => cap.startsWith('znc.in/'))) return 'bouncer';
  const modes = server.supports('CHANMODES');
  if (typeof modes === 'string' && modes.includes('H')) return 'replay-on-join';
  return 'none';
}

/** `CHATHISTORY AFTER` from a position: by msgid where the position has one, else by server-time. */
export function chathistoryAfter(channel: string, position: CatchUpPosition, limit: number): string | undefined {
  if (position.msgid !== undefined) return `CHATHISTORY AFTER ${channel} msgid=${position.msgid} ${limit}`;
  if (position.time !== undefined) return `CHATHISTORY AFTER ${channel} timestamp=${new Date(position.time).toISOString()} ${limit}`;
  return undefined;
}

export interface CatchUpSettings {
  positions: PositionStore;
  log: Logger;
  /** Writes a command to the server; false when not connected. */
  send(line: string): boolean;
  /** A line to hand to the gateways (IrcToChat), with the position to persist once it was taken. */
  deliver(line: IrcChannelLine, late: boolean, position: CatchUpPosition | undefined): void;
}

/**
 * Catch-up of lines said on IRC while the relay was away (stopped, restarting, another worker taking
 * over). Every channel line goes through here, live or replayed: a replay (InspIRCd's `+H` on join, a
 * ZNC buffer playback, an answer to `CHATHISTORY AFTER`) is read against the channel's position, and
 * only what was said after it goes on, once, in order, marked late; live lines move the position on
 * (but for those said while a CHATHISTORY request is unanswered: they wait for the answer, else a live
 * line would move the position past every line the answer brings).
 * The position the gateways took is persisted (PositionStore) and read again at the next start, here
 * or on the worker that takes the bot over. Lines without a server msgid get an id made of their
 * server-time, nick and text, the same live and replayed, so the gateways' map dedupes a line seen twice.
 */
export class IrcCatchUp {
  /** Per channel: the newest line seen (handed on or not yet taken), which a replay is read against. */
  private readonly front = new Map<string, CatchUpPosition | undefined>();
  /** Per channel on this connection: how often each made id was given (the same line twice in a millisecond). */
  private readonly liveIds = new Map<string, Map<string, number>>();
  /**
   * Per channel with a CHATHISTORY request unanswered: the live lines said meanwhile, held (they would
   * move the position past the lines the answer brings), and the ids of the lines the answers held.
   */
  private readonly awaiting = new Map<string, { held: IrcChannelLine[]; answered: Set<string>; timer: NodeJS.Timeout }>();
  private kind: HistoryKind | undefined;
  private limit = CHATHISTORY_PAGE;
  readonly counters = { caught_up: 0, replayed_seen: 0, chathistory_requests: 0 };

  constructor(private readonly settings: CatchUpSettings) {}

  /** A new connection registered: says once what this server lets the relay catch up. */
  onRegistered(server: ServerInfo): void {
    this.liveIds.clear();
    // Requests of the old connection will not be answered: the lines held meanwhile are after the
    // position, so the next CHATHISTORY brings them again; elsewhere they go on as they came.
    const held = [...this.awaiting.values()].flatMap((wait) => wait.held);
    for (const wait of this.awaiting.values()) clearTimeout(wait.timer);
    this.awaiting.clear();
    if (historyKind(server) !== 'chathistory') for (const line of held) this.onLive(line);
    const kind = historyKind(server);
    const limit = Number(server.supports('CHATHISTORY'));
    this.limit = Number.isInteger(limit) && limit > 0 ? Math.min(limit, CHATHISTORY_PAGE) : CHATHISTORY_PAGE;
    if (kind === this.kind) return;
    this.kind = kind;
    const log = this.settings.log;
    if (kind === 'none') {
      log.warn('this IRC server keeps no history the relay can read (no draft/chathistory, no channel mode +H, not a ZNC bouncer): lines said on IRC while the relay is away (stopped, restarting, failing over) are lost');
    } else {
      const how = kind === 'chathistory' ? 'CHATHISTORY AFTER the last line relayed'
        : kind === 'bouncer' ? 'the bouncer\'s buffer playback (keep AutoClearChanBuffer = false, ChanBufferSize above the lines said in a gap)'
          : 'the history replayed on join (each channel needs mode +H lines:time)';
      log.info({ history: kind }, `lines said on IRC while the relay is away are caught up from ${how}`);
    }
  }

  /** We are in the channel: a first start begins its position here; CHATHISTORY is asked for what came after it. */
  onJoined(channel: string, time: number | undefined): void {
    const key = ircLower(channel);
    if (!this.front.has(key)) this.front.set(key, this.settings.positions.get(key));
    if (this.front.get(key) === undefined && time !== undefined) {
      // The relay never saw this channel: what is said from now on is relayed, not its past.
      const start = { time, same: [] };
      this.front.set(key, start);
      this.settings.positions.set(key, start);
    }
    if (this.kind === 'chathistory') this.askAfter(channel, this.front.get(key));
  }

  /** A line said in the channel now. */
  onLive(line: IrcChannelLine): void {
    const key = ircLower(line.channel);
    const wait = this.awaiting.get(key);
    if (wait) {
      wait.held.push(line);
      return;
    }
    if (!this.front.has(key)) this.front.set(key, this.settings.positions.get(key));
    const made = this.madeId(line, this.liveCounts(key));
    const before = this.front.get(key);
    const position = advance(before, made);
    this.front.set(key, position);
    // A line without server-time or msgid (ngircd) moves nothing: nothing to write when it is taken.
    this.settings.deliver(made, false, position !== before ? position : undefined);
  }

  /** A replayed history of `channel` (a batch, oldest first): what was said after the position goes on, late. */
  onReplayed(channel: string, lines: IrcChannelLine[]): void {
    const key = ircLower(channel);
    if (!this.front.has(key)) this.front.set(key, this.settings.positions.get(key));
    this.counters.replayed_seen += lines.length;
    const counts = new Map<string, number>();
    const made = lines.map((line) => this.madeId(line, counts));
    const wait = this.awaiting.get(key);
    for (const line of made) {
      const id = line.msgid ?? line.id;
      if (wait && id !== undefined) wait.answered.add(id);
    }
    const fresh = saidAfter(made, this.front.get(key));
    for (const line of fresh) {
      const position = advance(this.front.get(key), line);
      this.front.set(key, position);
      this.counters.caught_up += 1;
      this.settings.deliver(line, true, position);
    }
    if (fresh.length > 0) this.settings.log.info({ channel, lines: fresh.length, replayed: lines.length }, 'lines said on IRC while the relay was away are relayed now');
    // A full page of CHATHISTORY may have more after it.
    if (this.kind === 'chathistory' && lines.length >= this.limit && fresh.length > 0 && this.askAfter(channel, this.front.get(key))) return;
    if (wait) this.release(key);
  }

  /** Asks CHATHISTORY for what came after `position`; live lines of the channel are held until it is answered. */
  private askAfter(channel: string, position: CatchUpPosition | undefined): boolean {
    const command = position && chathistoryAfter(channel, position, this.limit);
    if (!command || !this.settings.send(command)) return false;
    this.counters.chathistory_requests += 1;
    const key = ircLower(channel);
    const wait = this.awaiting.get(key);
    if (wait) wait.timer.refresh();
    else {
      const timer = setTimeout(() => {
        this.settings.log.warn({ channel }, 'the IRC server did not answer CHATHISTORY: the live lines held meanwhile go on');
        this.release(key);
      }, ANSWER_WAIT_MS);
      timer.unref();
      this.awaiting.set(key, { held: [], answered: new Set(), timer });
    }
    return true;
  }

  /** The channel's CHATHISTORY is answered: the live lines held meanwhile go on, but for those the answers brought. */
  private release(key: string): void {
    const wait = this.awaiting.get(key);
    if (!wait) return;
    clearTimeout(wait.timer);
    this.awaiting.delete(key);
    for (const line of wait.held) {
      const made = this.madeId(line, new Map());
      const id = made.msgid ?? made.id;
      if (id === undefined || !wait.answered.has(id)) this.onLive(line);
    }
  }

  private liveCounts(key: string): Map<string, number> {
    let counts = this.liveIds.get(key);
    if (!counts) this.liveIds.set(key, (counts = new Map()));
    if (counts.size > 1000) counts.clear();
    return counts;
  }

  /**
   * The line with the id the gateways know it by: the server's msgid, else one made of its server-time,
   * nick and text (and how often the same was said at that millisecond), else none (a random one later).
   */
  private madeId(line: IrcChannelLine, counts: Map<string, number>): IrcChannelLine & { msgid?: string } {
    const msgid = typeof line.tags?.msgid === 'string' && line.tags.msgid !== '' ? line.tags.msgid : undefined;
    if (msgid !== undefined) return { ...line, msgid };
    if (line.time === undefined) return line;
    const base = `t${line.time.toString(36)}-${lineHash(line)}`;
    const seen = (counts.get(base) ?? 0) + 1;
    counts.set(base, seen);
    return { ...line, id: seen === 1 ? base : `${base}-${seen}` };
  }
}
