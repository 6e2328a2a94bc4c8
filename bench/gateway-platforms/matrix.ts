import { FakeMatrix } from '../../test/helpers/fake-matrix.js';
import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

/** Matrix, on the local homeserver of the tests (test/helpers/fake-matrix.ts): the relay PUTs each line with a transaction id. */
export class MatrixBench implements BenchPlatform {
  readonly point = 'matrix' as const;
  readonly how = 'PUT /send with a txn id';

  private constructor(
    private readonly fake: FakeMatrix,
    private readonly bot: { userId: string; token: string },
    private readonly bare: { userId: string; token: string },
    private readonly room: string,
    private readonly person: string,
  ) {}

  static async start(): Promise<MatrixBench> {
    const fake = await FakeMatrix.start();
    const bot = fake.addUser('groupwire', 'groupwire bot');
    const bare = fake.addUser('bare', 'bare client');
    const person = fake.addUser('maya', 'maya').userId;
    const room = fake.addRoom('bench', { members: [bot.userId, bare.userId, person] });
    return new MatrixBench(fake, bot, bare, room, person);
  }

  plugin() {
    return { use: 'relay-matrix', with: { homeserver: this.fake.url, access_token: this.bot.token, user_id: this.bot.userId, rooms: {} } };
  }

  endpoint() {
    return { matrix: this.room };
  }

  /** Every event goes through the fake's `send`: stamped as the homeserver takes it. */
  watch(marks: Marks): void {
    const take = this.fake.send.bind(this.fake);
    this.fake.send = (...args: Parameters<FakeMatrix['send']>) => {
      const event = take(...args);
      if (event.type === 'm.room.message') marks.seen('matrix', String(event.content.body), performance.now());
      return event;
    };
  }

  say(text: string): void {
    this.fake.say(this.room, this.person, text);
  }

  async bareSettings() {
    return { homeserver: this.fake.url, token: this.bare.token, userId: this.bare.userId, room: this.room };
  }

  held(): Record<string, number> {
    return this.fake.holding();
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
