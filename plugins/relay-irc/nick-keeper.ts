import type { Client } from 'irc-framework';
import type { Logger } from 'pino';
import { ircLower } from './routes.js';

const REGAIN_EVERY_MS = 30_000;

/** The next nick to try when one is taken: one more "_", or the last characters made digits when too long. */
export function nextNick(taken: string, maxLength: number): string {
  if (taken.length + 1 <= maxLength) return `${taken}_`;
  const digits = String(Math.floor(Math.random() * 1000)).padStart(3, '0');
  return `${taken.slice(0, Math.max(1, maxLength - 3))}${digits}`;
}

/**
 * Keeps the relay's nick: while registering, a taken nick is replaced by `nick_` (and so on); once
 * registered under another nick, ours is asked for every 30 s, and at once when its holder quits or
 * changes nick where we can see it.
 */
export class NickKeeper {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: Client,
    private readonly wanted: string,
    private readonly log: Logger,
    /** Registered (connected and welcomed by the server). */
    private readonly registered: () => boolean,
  ) {
    client.on('nick in use', (event: { nick?: string }) => {
      if (this.registered()) return; // an answer to asking for our nick back: keep the one we have
      const next = nextNick(event.nick || client.user.nick, Number(client.network.supports('NICKLEN')) || 30);
      this.log.warn({ taken: event.nick, trying: next }, 'IRC nick in use; trying another');
      client.changeNick(next);
    });
    client.on('nick invalid', (event: { nick?: string; reason?: string }) => {
      if (this.registered()) return;
      const fallback = `gw${Math.floor(1000 + Math.random() * 9000)}`;
      this.log.error({ nick: event.nick, reason: event.reason, trying: fallback }, 'the IRC server refuses the nick');
      client.changeNick(fallback);
    });
    client.on('quit', (event: { nick: string }) => this.released(event.nick));
    client.on('nick', (event: { nick: string; new_nick: string }) => {
      if (!this.isSelf(event.nick)) {
        this.released(event.nick);
        return;
      }
      this.log.info({ from: event.nick, to: event.new_nick }, 'IRC nick changed');
      if (ircLower(event.new_nick) === ircLower(this.wanted)) this.stop();
    });
  }

  /** On registration under `nick`: ask for ours back from time to time if it is another. */
  onRegistered(nick: string): void {
    this.stop();
    if (ircLower(nick) === ircLower(this.wanted)) return;
    this.log.warn({ nick, wanted: this.wanted }, 'registered under another nick; asking for ours back every 30 s');
    this.timer = setInterval(() => this.askBack(), REGAIN_EVERY_MS);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private isSelf(nick: string): boolean {
    return ircLower(nick) === ircLower(this.client.user.nick);
  }

  private released(nick: string): void {
    if (this.timer && ircLower(nick) === ircLower(this.wanted)) this.askBack();
  }

  private askBack(): void {
    if (this.isSelf(this.wanted)) this.stop();
    else if (this.registered()) this.client.changeNick(this.wanted);
  }
}
