import type { PostGate } from './chaos.js';
import { tagsIn, type Line } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { FakeMattermost, type FakeUser } from './fake-mattermost.js';
import { waitFor } from './supervisor.js';

/** Mattermost's escaping undone: what a Mattermost client shows (backslash escapes, and the zero-width space after a defused `@`). */
export function mattermostShown(message: string): string {
  return message.replace(/\\([\\*_~`[\]()#|><+=.)-])/g, '$1').replace(/@\u200b/g, '@');
}

/**
 * Mattermost in the gateway chaos run, on the local Mattermost (fake-mattermost.ts): the relay posts
 * under each speaker's name through the bot account. Its cuts: the websocket dropped (the relay
 * connects again and reads the gap by REST), or the server answers 429 to the next 2 posts and loses
 * the answer of the one after (the relay finds it in the history). The server keeps every post, so
 * nobody keeps quiet: what was said while the bot was down is read back from its mark.
 */
export class MattermostSide implements PlatformSide {
  readonly side = 'mattermost';
  readonly people = ['olga', 'otto'] as const;
  private readonly users: Record<string, FakeUser>;
  private hellosSeen = 0;

  private constructor(
    readonly fake: FakeMattermost,
    private readonly channel: string,
  ) {
    this.users = Object.fromEntries(this.people.map((who) => [who, fake.addUser(who).user]));
  }

  static async start(): Promise<MattermostSide> {
    const fake = await FakeMattermost.start();
    return new MattermostSide(fake, fake.addChannel('town-square'));
  }

  plugin() {
    return { use: 'relay-mattermost', with: { server_url: this.fake.url, token: this.fake.botToken, channels: {}, request_timeout_ms: 5_000 } };
  }

  endpoint() {
    return { mattermost: 'acme/town-square' };
  }

  async connected(): Promise<void> {
    await waitFor('the relay\'s Mattermost websocket', () => this.fake.hellos > this.hellosSeen && this.fake.sockets > 0, 30_000);
    this.hellosSeen = this.fake.hellos;
  }

  say(who: string, text: string): void {
    this.fake.say(this.channel, this.users[who]!, text);
  }

  received(): string[] {
    return this.fake.inChannel(this.channel).filter((post) => post.user_id === this.fake.bot.id).map((post) => mattermostShown(post.message));
  }

  origin(sent: Line[]): Line[] {
    const byTag = new Map(sent.map((line) => [line.tag, line]));
    return this.fake.inChannel(this.channel).filter((post) => post.user_id !== this.fake.bot.id)
      .flatMap((post) => tagsIn(post.message).flatMap((tag) => byTag.get(tag) ?? []));
  }

  async cut(variant: number, _gate: PostGate): Promise<string> {
    if (variant % 2 === 0) {
      this.fake.dropConnections();
      return 'Mattermost websocket dropped';
    }
    this.fake.rateLimit(2);
    this.fake.loseAnswer(1);
    return 'Mattermost answers 429 to the next 2 posts and loses the answer of the one after';
  }

  async beforeKill(): Promise<void> {}

  async killed(): Promise<void> {}

  close(): Promise<void> {
    return this.fake.close();
  }
}
