import type { Logger } from 'pino';
import { failureFields, PostFailedError, type PluginEnv } from '../../src/index.js';
import { ircToChatText, type ToChatFormat } from './format.js';
import { ircLower, type Routes } from './routes.js';

/** Lines from IRC held while their chat is not joined yet, at most. */
const MAX_PENDING = 1000;

/**
 * IRC to chat: a PRIVMSG or ACTION in a mapped channel is posted into its chat(s) as "<nick> text" or
 * "* nick text". Our own nick and `ignore_nicks` are left out (NOTICEs and CTCP never get here). The
 * text is only ever posted, by the bot's user: the supervisor never hands the bot's own posts to
 * plugins, so nothing said on IRC can trigger a command. Lines wait (in order) until their chat is
 * joined, since the plugin starts before the bot's chats.
 */
export class IrcToChat {
  private pending: Array<{ chat: string; text: string }> = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly warned = new Set<string>();
  private readonly ignored: Set<string>;
  private closed = false;
  readonly counters = { posted: 0, post_failed: 0, dropped_pending: 0, missed_while_stopping: 0 };

  constructor(
    private readonly env: Pick<PluginEnv, 'send' | 'chats'>,
    private readonly routes: Routes,
    private readonly format: ToChatFormat,
    ignoreNicks: string[],
    private readonly isSelf: (nick: string) => boolean,
    private readonly log: Logger,
  ) {
    this.ignored = new Set(ignoreNicks.map(ircLower));
  }

  get waiting(): number {
    return this.pending.length;
  }

  onChannelMessage(kind: 'privmsg' | 'action', nick: string, channel: string, text: string): void {
    if (this.isSelf(nick) || this.ignored.has(ircLower(nick))) return;
    if (this.closed) {
      this.counters.missed_while_stopping += 1;
      return;
    }
    // A CTCP request that is not quite well-formed is still not for the chat.
    if (text.startsWith('\x01')) return;
    const routes = this.routes.forChannel(channel);
    if (routes.length === 0) return;
    const body = ircToChatText(kind, nick, channel, text, this.format);
    if (body === undefined) return;
    for (const route of routes) this.pending.push({ chat: route.chat, text: body });
    this.flush();
  }

  /** The bot is stopping (env.stopping): its chats are being closed, take nothing more from IRC. */
  close(): void {
    this.closed = true;
  }

  stop(): void {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.counters.missed_while_stopping > 0) {
      this.log.warn({ lines: this.counters.missed_while_stopping }, 'lines said on IRC while the bot was stopping were not posted (IRC keeps no history to fetch them later)');
    }
    if (this.pending.length > 0) {
      this.log.error({ lines: this.pending.length, chats: [...new Set(this.pending.map((p) => p.chat))] }, 'lines from IRC never posted: their chats were not joined');
    }
  }

  private flush(): void {
    const chats = this.env.chats();
    const waiting: typeof this.pending = [];
    const blocked = new Set<string>();
    for (const item of this.pending) {
      const joined = chats.some((chat) => chat.subject === item.chat || String(chat.id) === item.chat);
      if (!joined || blocked.has(item.chat)) {
        blocked.add(item.chat);
        waiting.push(item);
        continue;
      }
      // Posts are queued by the supervisor in call order, so not awaiting keeps the order.
      this.env.send(item.chat, item.text).then(
        () => {
          this.counters.posted += 1;
        },
        (error: unknown) => {
          this.counters.post_failed += 1;
          this.log.error({ ...failureFields(error, PostFailedError), chat: item.chat }, 'a line from IRC could not be posted into the chat');
        },
      );
    }
    for (const chat of blocked) {
      if (!this.warned.has(chat)) this.log.info({ chat }, 'lines from IRC wait until the bot has joined the chat');
      this.warned.add(chat);
    }
    if (waiting.length > MAX_PENDING) {
      const dropped = waiting.splice(0, waiting.length - MAX_PENDING);
      this.counters.dropped_pending += dropped.length;
      this.log.error({ dropped: dropped.length, chats: [...blocked] }, 'too many lines from IRC waiting for chats that are not joined; the oldest are dropped');
    }
    this.pending = waiting;
    if (waiting.length > 0 && !this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush();
      }, 250);
    }
  }
}
