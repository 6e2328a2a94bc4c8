import { FakeMattermost, type FakeUser } from '../../test/helpers/fake-mattermost.js';
import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

/** Mattermost, on the local Mattermost of the tests (test/helpers/fake-mattermost.ts): the relay's bot account posts under each speaker's name. */
export class MattermostBench implements BenchPlatform {
  readonly point = 'mattermost' as const;
  readonly how = 'POST /posts with a pending_post_id, the attempt noted first';

  private constructor(
    private readonly fake: FakeMattermost,
    private readonly channel: string,
    /** The person who speaks on Mattermost (the platform → chat hop). */
    private readonly person: FakeUser,
    /** The bare client's own bot account (the gateway's is the fake's `bot`). */
    private readonly bare: { user: FakeUser; token: string },
  ) {}

  static async start(): Promise<MattermostBench> {
    const fake = await FakeMattermost.start();
    const channel = fake.addChannel('town-square');
    return new MattermostBench(fake, channel, fake.addUser('olga').user, fake.addUser('bare', { is_bot: true }));
  }

  plugin() {
    return { use: 'relay-mattermost', with: { server_url: this.fake.url, token: this.fake.botToken, channels: {} } };
  }

  endpoint() {
    return { mattermost: this.channel };
  }

  /** The fake keeps posts in a plain array: its pushes are stamped (the moment a Mattermost client could first see the post). */
  watch(marks: Marks): void {
    const posts = this.fake.posts;
    const record = posts.push.bind(posts);
    posts.push = (...added) => {
      const at = performance.now();
      for (const post of added) if (post.channel_id === this.channel) marks.seen('mattermost', post.message, at);
      return record(...added);
    };
  }

  say(text: string): void {
    this.fake.say(this.channel, this.person, text);
  }

  async bareSettings() {
    return { serverUrl: this.fake.url, token: this.bare.token, channel: this.channel };
  }

  held(): Record<string, number> {
    return this.fake.holding();
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
