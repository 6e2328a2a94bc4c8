import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { FILE_STORAGE, type Storage } from '../../src/index.js';

/**
 * Where a channel's catch-up stands: the last line of it the relay handed on (docs/plugins/relay-irc.md
 * "Lines said while the relay was away"). `msgid` is the server's id of that line when it gives ids;
 * `time` its server-time (ms), with `same` the hashes (nick and text) of the lines taken at exactly that
 * time, so that a line at the same millisecond as the last one is still told apart.
 */
export interface CatchUpPosition {
  msgid?: string;
  time?: number;
  same?: string[];
}

/** A channel line as the catch-up compares it: who said it, what, and the server's time and id. */
export interface PositionedLine {
  nick: string;
  text: string;
  time?: number;
  msgid?: string;
}

/** At most this many hashes of lines at the position's exact millisecond are kept. */
const SAME_MAX = 50;

export function lineHash(line: Pick<PositionedLine, 'nick' | 'text'>): string {
  return createHash('sha256').update(`${line.nick.toLowerCase()}\u0000${line.text}`).digest('base64url').slice(0, 12);
}

/** The position once `line` is handed on (a line without server-time or msgid leaves it as it was). */
export function advance(position: CatchUpPosition | undefined, line: PositionedLine): CatchUpPosition | undefined {
  if (line.time === undefined && line.msgid === undefined) return position;
  const hash = lineHash(line);
  const same = line.time !== undefined && line.time === position?.time ? [...(position.same ?? []), hash].slice(-SAME_MAX) : [hash];
  return { ...(line.msgid !== undefined ? { msgid: line.msgid } : {}), ...(line.time !== undefined ? { time: line.time } : {}), same };
}

/**
 * Which lines of a replayed history (a `+H` replay on join, a bouncer's playback, a CHATHISTORY answer;
 * oldest first) were said after `position`:
 * - the position's msgid in the replay: every line after it;
 * - else by server-time: later lines, and lines at the same millisecond that are not among those taken
 *   at it. A replay that keeps whole seconds only (InspIRCd's `+H` history: `.000Z`) cannot order a line
 *   within the position's second: such lines are kept (they carry msgids, so a line relayed before is
 *   not posted again: the gateways' map knows it by its id);
 * - no position at all (the relay never saw the channel): nothing, the channel's past is not relayed.
 */
export function saidAfter<T extends PositionedLine>(replay: readonly T[], position: CatchUpPosition | undefined): T[] {
  if (position === undefined) return [];
  if (position.msgid !== undefined) {
    const at = replay.findIndex((line) => line.msgid === position.msgid);
    if (at >= 0) return replay.slice(at + 1);
  }
  const since = position.time;
  if (since === undefined) return [];
  const same = new Set(position.same ?? []);
  return replay.filter((line) => {
    if (line.time === undefined) return false;
    if (line.time > since) return true;
    if (line.time === since) return !same.has(lineHash(line));
    return line.time % 1000 === 0 && line.time > since - 1000 && line.msgid !== undefined;
  });
}

/**
 * The relay's catch-up positions, one per channel, in one small document (`catch-up.json` under the
 * plugin's data dir; a key of the bot's unit on Redis, so a worker that takes the bot over starts from
 * the position its predecessor wrote). Written each time a line is handed on.
 */
export class PositionStore {
  private readonly path: string;
  private readonly positions: Record<string, CatchUpPosition>;

  constructor(dataDir: string, private readonly storage: Storage = FILE_STORAGE) {
    this.path = join(dataDir, 'catch-up.json');
    this.positions = storage.readDocument<Record<string, CatchUpPosition>>(this.path, {}, 'IRC catch-up positions');
  }

  get(channelKey: string): CatchUpPosition | undefined {
    return this.positions[channelKey];
  }

  set(channelKey: string, position: CatchUpPosition): void {
    this.positions[channelKey] = position;
    this.storage.writeDocument(this.path, this.positions);
  }
}
