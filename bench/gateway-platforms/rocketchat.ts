import { FakeRocketchat, type FakeUser } from '../../test/helpers/fake-rocketchat.js';
import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

/** Rocket.Chat, on the local Rocket.Chat of the tests (test/helpers/fake-rocketchat.ts): the relay's bot user sends under each speaker's name (`alias`). */
export class RocketchatBench implements BenchPlatform {
  readonly point = 'rocketchat' as const;
  readonly how = 'chat.sendMessage with an _id made from the line';

  private constructor(
    private readonly fake: FakeRocketchat,
    private readonly room: string,
    /** The person who speaks on Rocket.Chat (the platform → chat hop). */
    private readonly person: FakeUser,
    /** The bare client's own bot user (the gateway's is the fake's `bot`). */
    private readonly bare: { user: FakeUser; token: string },
  ) {}

  static async start(): Promise<RocketchatBench> {
    const fake = await FakeRocketchat.start();
    const room = fake.addRoom('general');
    return new RocketchatBench(fake, room, fake.addUser('rita').user, fake.addUser('bare', { roles: ['user', 'bot'] }));
  }

  plugin() {
    return { use: 'relay-rocketchat', with: { server_url: this.fake.url, user_id: this.fake.bot._id, token: this.fake.botToken, rooms: {} } };
  }

  endpoint() {
    return { rocketchat: this.room };
  }

  /** The fake keeps messages in a plain array: its pushes are stamped (the moment a Rocket.Chat client could first see the message). */
  watch(marks: Marks): void {
    const messages = this.fake.messages;
    const record = messages.push.bind(messages);
    messages.push = (...added) => {
      const at = performance.now();
      for (const message of added) if (message.rid === this.room) marks.seen('rocketchat', message.msg, at);
      return record(...added);
    };
  }

  say(text: string): void {
    this.fake.say(this.room, this.person, text);
  }

  async bareSettings() {
    return { serverUrl: this.fake.url, userId: this.bare.user._id, token: this.bare.token, room: this.room };
  }

  held(): Record<string, number> {
    return this.fake.holding();
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
