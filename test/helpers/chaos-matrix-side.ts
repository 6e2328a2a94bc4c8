import type { PostGate } from './chaos.js';
import { tagsIn, type Line } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { FakeMatrix } from './fake-matrix.js';
import { waitFor } from './supervisor.js';

/**
 * Matrix in the gateway chaos run, on the local homeserver (fake-matrix.ts): the relay syncs with a
 * kept `since` token and sends with transaction ids. Its cuts: the homeserver answers 429 to the next
 * sends, or loses the answer of a /sync (a 502, as a proxy in an outage). A homeserver keeps every
 * event, so nobody keeps quiet: what was said while the bot was down comes with the next /sync.
 */
export class MatrixSide implements PlatformSide {
  readonly side = 'matrix';
  readonly people = ['maya', 'milo'] as const;
  private readonly users: Record<string, string>;
  private syncsSeen = 0;

  private constructor(
    readonly fake: FakeMatrix,
    private readonly bot: { userId: string; token: string },
    private readonly room: string,
  ) {
    this.users = Object.fromEntries(this.people.map((who) => [who, `@${who}:localhost`]));
  }

  static async start(): Promise<MatrixSide> {
    const fake = await FakeMatrix.start();
    const bot = fake.addUser('groupwire', 'groupwire bot');
    const people = ['maya', 'milo'].map((who) => fake.addUser(who, who).userId);
    const room = fake.addRoom('general', { members: [bot.userId, ...people] });
    return new MatrixSide(fake, bot, room);
  }

  plugin() {
    return { use: 'relay-matrix', with: { homeserver: this.fake.url, access_token: this.bot.token, user_id: this.bot.userId, rooms: {}, request_timeout_ms: 5_000 } };
  }

  endpoint() {
    return { matrix: this.room };
  }

  /** The relay is syncing (a /sync after the ones seen before). */
  async connected(): Promise<void> {
    const syncs = () => this.fake.calls.filter((call) => call === 'GET /sync').length;
    await waitFor('the relay\'s /sync', () => syncs() > this.syncsSeen + 1, 30_000);
    this.syncsSeen = syncs();
  }

  say(who: string, text: string): void {
    this.fake.say(this.room, this.users[who]!, text);
  }

  received(): string[] {
    return this.fake.eventsIn(this.room)
      .filter((event) => event.sender === this.bot.userId && event.type === 'm.room.message' && !event.content['m.relates_to'])
      .map((event) => String(event.content.body));
  }

  origin(sent: Line[]): Line[] {
    const byTag = new Map(sent.map((line) => [line.tag, line]));
    return this.fake.eventsIn(this.room).filter((event) => event.sender !== this.bot.userId && event.type === 'm.room.message')
      .flatMap((event) => tagsIn(String(event.content.body)).flatMap((tag) => byTag.get(tag) ?? []));
  }

  async cut(variant: number, _gate: PostGate): Promise<string> {
    if (variant % 2 === 0) {
      this.fake.rateLimit(3);
      return 'Matrix answers 429 to the next 3 sends';
    }
    this.fake.dropNextSyncAnswer();
    return 'Matrix loses the answer of the next /sync (502)';
  }

  async beforeKill(): Promise<void> {}

  async killed(): Promise<void> {}

  close(): Promise<void> {
    return this.fake.close();
  }
}
