import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import type { DurableQueue } from '../../src/index.js';
import type { ChannelToJoin } from './routes.js';

/**
 * One PRIVMSG text waiting for its channel; `src` is `<chat id>:<msg_num>` of the chat message it was
 * handed on from, `key` the gateway line's id in SentKeys (absent in queues written before gateways).
 * The first PRIVMSG of a gateway line also has the line's own key (`line`, for the message map) and the
 * IRC msgid of what it answers (`replyTo`, sent as `+draft/reply`).
 */
export interface QueuedLine {
  src: string;
  key?: string;
  text: string;
  line?: string;
  replyTo?: string;
}

/** A line sent on this connection, waiting for the server to confirm it. */
export interface Flight {
  ticket: number;
  done: boolean;
  sentAt: number;
  /** The IRCv3 msgid of its echo, once confirmed by one. */
  msgid?: string;
}

/** What a channel's queue remembers besides its lines: the server's id of the last line it confirmed. */
interface DeliveryNote {
  last?: string;
}

/** The file of a channel's queue: the folded name, made safe for a file name. */
export function queueFile(dataDir: string, channelKey: string): string {
  return join(dataDir, `queue-${encodeURIComponent(channelKey)}.json`);
}

/** Lines queued for channels no longer in the config stay on disk; say so. */
export function warnAboutOrphanQueues(dataDir: string, channels: ChannelToJoin[], log: Logger): void {
  let files: string[] = [];
  try {
    files = readdirSync(dataDir).filter((name) => /^queue-.*\.json$/.test(name));
  } catch {
    return;
  }
  const known = new Set(channels.map((channel) => basename(queueFile(dataDir, channel.key))));
  const orphans = files.filter((name) => !known.has(name));
  if (orphans.length > 0) log.warn({ files: orphans, dir: dataDir }, 'queued IRC lines for channels no longer configured are kept but not sent');
}

/** A channel's durable queue; its first `flight.length` lines were sent on this connection and await confirmation. */
export class ChannelOutbox {
  readonly flight: Flight[] = [];
  failures = 0;
  retryAt = 0;
  /**
   * False from a join until what the channel's history replayed is read (docs: "Nothing doubled"):
   * a line sent before that could be one the history shows was taken already.
   */
  settled = false;
  /** When the lines go out even if the replay was not read (a server that never answered the PING). */
  settleBy = 0;

  constructor(
    readonly channel: ChannelToJoin,
    readonly queue: DurableQueue<QueuedLine>,
  ) {}

  get unsent(): number {
    return this.queue.size - this.flight.length;
  }

  /** The server's msgid of the last line it confirmed, as kept with the queue (survives a restart). */
  get lastDelivered(): string | undefined {
    const note = this.queue.note as DeliveryNote | null | undefined;
    return typeof note?.last === 'string' ? note.last : undefined;
  }

  /**
   * Drops the first `count` lines, delivered; `msgid` (the server's id of the last of them) is kept in
   * the same write. Without one (a server without msgids), an older id is forgotten: it no longer marks
   * the last line delivered.
   */
  delivered(count: number, msgid: string | undefined): void {
    const note: DeliveryNote | null | undefined = msgid !== undefined ? { last: msgid } : this.queue.note == null ? undefined : null;
    this.queue.shift(count, note);
  }
}
