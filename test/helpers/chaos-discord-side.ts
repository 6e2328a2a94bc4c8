import type { PostGate } from './chaos.js';
import type { Line } from './chaos-gateway.js';
import { tagsIn } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { FakeDiscord, type FakeUser } from './fake-discord.js';
import { waitFor } from './supervisor.js';

const CHANNEL = '700000000000000042';
const USERS: Record<string, FakeUser> = {
  dana: { id: '600000000000000011', username: 'dana', global_name: null },
  dave: { id: '600000000000000012', username: 'dave', global_name: null },
};

/** Discord's escaping of markdown undone: what a Discord client shows. */
export function discordShown(content: string): string {
  return content.replace(/\\([\\*_~`|>[\]()#-])/g, '$1');
}

/**
 * Discord in the gateway chaos run, on the local Discord (fake-discord.ts): the relay posts through the
 * channel's webhook. Discord keeps every message, so its people never keep quiet: a dropped gateway is
 * resumed and replayed, an invalid session (or the bot's kill) is followed by a catch-up by REST.
 */
export class DiscordSide implements PlatformSide {
  readonly side = 'discord';
  readonly people = ['dana', 'dave'] as const;
  private sessionsSeen = 0;

  private constructor(readonly discord: FakeDiscord) {}

  static async start(): Promise<DiscordSide> {
    const discord = await FakeDiscord.start();
    discord.addChannel(CHANNEL);
    return new DiscordSide(discord);
  }

  plugin() {
    return { use: 'relay-discord', with: { token: this.discord.token, api_url: this.discord.apiUrl, channels: {}, request_timeout_ms: 5_000 } };
  }

  endpoint() {
    return { discord: CHANNEL };
  }

  async connected(): Promise<void> {
    await waitFor('the relay\'s Discord session', () => this.discord.identifies.length > this.sessionsSeen && this.discord.connections > 0, 30_000);
    this.sessionsSeen = this.discord.identifies.length;
  }

  say(who: string, text: string): void {
    this.discord.say(CHANNEL, USERS[who]!, text);
  }

  received(): string[] {
    return this.discord.inChannel(CHANNEL).filter((m) => m.webhook_id !== undefined || m.author.id === this.discord.bot.id).map((m) => discordShown(m.content));
  }

  origin(sent: Line[]): Line[] {
    const byTag = new Map(sent.map((line) => [line.tag, line]));
    return this.discord.inChannel(CHANNEL).filter((m) => m.webhook_id === undefined && m.author.id !== this.discord.bot.id)
      .flatMap((m) => tagsIn(m.content).flatMap((tag) => byTag.get(tag) ?? []));
  }

  /** Discord drops the gateway connection (the relay resumes), or ends the session (it identifies again and reads back by REST). */
  async cut(variant: number, _gate: PostGate): Promise<string> {
    if (variant % 2 === 0) {
      this.discord.dropConnections();
      return 'Discord gateway dropped';
    }
    this.discord.invalidateSessions();
    return 'Discord session invalidated';
  }

  async beforeKill(): Promise<void> {}

  async killed(): Promise<void> {}

  close(): Promise<void> {
    return this.discord.close();
  }
}
