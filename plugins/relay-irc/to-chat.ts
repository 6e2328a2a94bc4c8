import type { Logger } from 'pino';
import { failureFields, PostFailedError, sleep } from '../../src/index.js';
import type { IncomingMessage } from '../../src/gateway/message.js';
import type { GatewayPort } from '../../src/pipeline/plugin.js';
import type { ToChatFormat } from './format.js';
import type { CatchUpPosition } from './catch-up-position.js';
import { incomingFromIrc, LineIds, type IrcChannelLine } from './incoming.js';
import { lateChatText } from './late-mark.js';
import { ircLower } from './routes.js';

/** Lines from IRC held per channel while the gateway's chats do not take them (not joined yet), at most. */
const MAX_PENDING = 1000;
/** A line the chats have not taken for this long is dropped (IRC keeps no history: it is said in the log). */
const MAX_WAIT_MS = 60_000;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 2000;

interface Pending {
  channel: string;
  message: IncomingMessage;
  since: number;
  /** The channel's catch-up position once this line is taken (persisted then). */
  position?: CatchUpPosition;
  late: boolean;
}

/**
 * IRC to the gateways: each PRIVMSG or ACTION in one of the relay's channels is handed to
 * `env.gateway.receive`, which hands it to the gateway's other relays and posts it into its chats
 * (durably). Our own nick and `ignore_nicks` are left out (NOTICEs never get here, CTCP is dropped).
 *
 * Lines of a channel go one at a time, in order. When a chat would not take a line now (PostFailedError:
 * the bot has not joined it yet, since plugins start first) the line waits and is tried again, with
 * those after it behind it; after a minute, or past MAX_PENDING waiting lines, lines are dropped with an
 * error. What the bot's user posts this way is text only: the chain marks it as the bot's own relayed
 * post, so a `!close` said on IRC is never a command from the bot.
 */
export class IrcToChat {
  private readonly queues = new Map<string, Pending[]>();
  private readonly pumping = new Set<string>();
  private readonly warned = new Set<string>();
  private readonly ignored: Set<string>;
  private readonly ids = new LineIds();
  private readonly stopper = new AbortController();
  private closed = false;
  readonly counters = { posted: 0, posted_late: 0, post_failed: 0, dropped_pending: 0, missed_while_stopping: 0 };
  /** A line was taken by its gateway's chats: the channel's catch-up position moves to `position`. */
  onTaken: ((channelKey: string, position: CatchUpPosition) => void) | undefined;

  constructor(
    private readonly gateway: () => GatewayPort,
    private readonly format: ToChatFormat,
    ignoreNicks: string[],
    private readonly isSelf: (nick: string) => boolean,
    private readonly log: Logger,
  ) {
    this.ignored = new Set(ignoreNicks.map(ircLower));
  }

  get waiting(): number {
    let count = 0;
    for (const queue of this.queues.values()) count += queue.length;
    return count;
  }

  /** A channel line; `late`: said while the relay was away (caught up), shown with the time it was said. */
  onChannelMessage(line: IrcChannelLine, late = false, position?: CatchUpPosition): void {
    if (this.isSelf(line.nick) || this.ignored.has(ircLower(line.nick))) return;
    if (this.closed) {
      this.counters.missed_while_stopping += 1;
      return;
    }
    // A CTCP request that is not quite well-formed is still not for the chat.
    if (line.text.startsWith('\x01')) return;
    const message = incomingFromIrc(line, this.format, this.ids);
    if (!message) return;
    if (late && line.time !== undefined && message.chatText !== undefined) message.chatText = lateChatText(message.chatText, line.time);
    const key = ircLower(line.channel);
    const queue = this.queues.get(key) ?? [];
    this.queues.set(key, queue);
    queue.push({ channel: line.channel, message, since: Date.now(), late, ...(position ? { position } : {}) });
    if (queue.length > MAX_PENDING) {
      const dropped = queue.splice(0, queue.length - MAX_PENDING);
      this.counters.dropped_pending += dropped.length;
      this.log.error({ dropped: dropped.length, channel: line.channel }, 'too many lines from IRC waiting for chats that do not take them; the oldest are dropped');
    }
    void this.pump(key);
  }

  /** The bot is stopping (env.stopping): its chats are being closed, take nothing more from IRC. */
  close(): void {
    this.closed = true;
  }

  stop(): void {
    this.closed = true;
    this.stopper.abort();
    if (this.counters.missed_while_stopping > 0) {
      this.log.warn({ lines: this.counters.missed_while_stopping }, 'lines said on IRC while the bot was stopping were not posted (unless the server keeps history the relay catches up from at the next start: docs/plugins/relay-irc.md)');
    }
    const left = [...this.queues.values()].flat();
    if (left.length > 0) {
      this.log.error({ lines: left.length, channels: [...new Set(left.map((p) => p.channel))] }, 'lines from IRC never posted: the chats did not take them');
    }
  }

  /** Hands a channel's lines on, one at a time and in order, until none is left or the relay stops. */
  private async pump(key: string): Promise<void> {
    if (this.pumping.has(key)) return;
    this.pumping.add(key);
    const queue = this.queues.get(key)!;
    let retryMs = RETRY_MIN_MS;
    try {
      while (queue.length > 0 && !this.stopper.signal.aborted) {
        const item = queue[0]!;
        if (Date.now() - item.since > MAX_WAIT_MS) {
          queue.shift();
          this.counters.dropped_pending += 1;
          this.log.error({ channel: item.channel, nick: item.message.speaker.name, waitedMs: Date.now() - item.since },
            'a line from IRC was not taken by its chats for a minute; it is dropped');
          continue;
        }
        try {
          await this.gateway().receive(item.channel, item.message);
          queue.shift();
          this.counters.posted += 1;
          if (item.late) this.counters.posted_late += 1;
          if (item.position) this.onTaken?.(key, item.position);
          retryMs = RETRY_MIN_MS;
          this.warned.delete(key);
        } catch (error) {
          // Stopping: what is left is said by stop().
          if (this.stopper.signal.aborted) break;
          if (error instanceof PostFailedError) {
            if (!this.warned.has(key)) this.log.info({ channel: item.channel, reason: error.message }, 'lines from IRC wait until their chats take them');
            this.warned.add(key);
            await sleep(retryMs, this.stopper.signal);
            retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
            continue;
          }
          queue.shift();
          this.counters.post_failed += 1;
          this.log.error({ ...failureFields(error, PostFailedError), channel: item.channel }, 'a line from IRC could not be handed to its gateway');
        }
      }
    } finally {
      this.pumping.delete(key);
    }
  }
}
