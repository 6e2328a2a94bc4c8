import type { PostGate } from './chaos.js';
import { tagsIn, type Line } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { FakeRocketchat, type FakeUser } from './fake-rocketchat.js';
import { waitFor } from './supervisor.js';

/** Rocket.Chat's escaping undone: what a Rocket.Chat client shows (backslash escapes, and the zero-width space after a defused `@`). */
export function rocketchatShown(message: string): string {
  return message.replace(/\\([\\*_~`[\]()#|><+=.)$-])/g, '$1').replace(/@\u200b/g, '@');
}

/**
 * Rocket.Chat in the gateway chaos run, on the local Rocket.Chat (fake-rocketchat.ts): the relay sends
 * under each speaker's name (`alias`) with an `_id` made from the line. Its cuts: the realtime websocket
 * dropped (the relay connects again and reads the gap from the rooms' history), or the server answers 429
 * to the next 2 sends and loses the answer of the one after (the retry's duplicate `_id` is refused and
 * taken as sent). The server keeps every message, so nobody keeps quiet: what was said while the bot was
 * down is read back from its mark.
 */
export class RocketchatSide implements PlatformSide {
  readonly side = 'rocketchat';
  readonly people = ['rita', 'rolf'] as const;
  private readonly users: Record<string, FakeUser>;
  private loginsSeen = 0;

  private constructor(
    readonly fake: FakeRocketchat,
    private readonly room: string,
  ) {
    this.users = Object.fromEntries(this.people.map((who) => [who, fake.addUser(who).user]));
  }

  static async start(): Promise<RocketchatSide> {
    const fake = await FakeRocketchat.start();
    return new RocketchatSide(fake, fake.addRoom('general'));
  }

  plugin() {
    return { use: 'relay-rocketchat', with: { server_url: this.fake.url, user_id: this.fake.bot._id, token: this.fake.botToken, rooms: {}, request_timeout_ms: 5_000 } };
  }

  endpoint() {
    return { rocketchat: '#general' };
  }

  async connected(): Promise<void> {
    await waitFor('the relay\'s Rocket.Chat realtime session', () => this.fake.logins > this.loginsSeen && this.fake.sockets > 0, 30_000);
    this.loginsSeen = this.fake.logins;
  }

  say(who: string, text: string): void {
    this.fake.say(this.room, this.users[who]!, text);
  }

  received(): string[] {
    return this.fake.inRoom(this.room).filter((message) => message.u._id === this.fake.bot._id).map((message) => rocketchatShown(message.msg));
  }

  origin(sent: Line[]): Line[] {
    const byTag = new Map(sent.map((line) => [line.tag, line]));
    return this.fake.inRoom(this.room).filter((message) => message.u._id !== this.fake.bot._id)
      .flatMap((message) => tagsIn(message.msg).flatMap((tag) => byTag.get(tag) ?? []));
  }

  async cut(variant: number, _gate: PostGate): Promise<string> {
    if (variant % 2 === 0) {
      this.fake.dropConnections();
      return 'Rocket.Chat realtime websocket dropped';
    }
    this.fake.rateLimit(2);
    this.fake.loseAnswer(1);
    return 'Rocket.Chat answers 429 to the next 2 sends and loses the answer of the one after';
  }

  async beforeKill(): Promise<void> {}

  async killed(): Promise<void> {}

  close(): Promise<void> {
    return this.fake.close();
  }
}
