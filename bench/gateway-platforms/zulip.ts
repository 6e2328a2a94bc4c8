import { FakeZulip, type FakeZulipUser } from '../../test/helpers/fake-zulip.js';
import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

/** Zulip, on the local Zulip of the tests (test/helpers/fake-zulip.ts): the relay's bot posts into the topic `lobby` of the stream `general`. */
export class ZulipBench implements BenchPlatform {
  readonly point = 'zulip' as const;
  readonly how = 'POST /messages with queue_id + local_id, the attempt noted first';

  private constructor(
    private readonly fake: FakeZulip,
    private readonly stream: number,
    /** The person who speaks on Zulip (the platform → chat hop). */
    private readonly person: FakeZulipUser,
    /** The bare client's own bot (the gateway's is the fake's `bot`). */
    private readonly bare: { user: FakeZulipUser; key: string },
  ) {}

  static async start(): Promise<ZulipBench> {
    const fake = await FakeZulip.start();
    const stream = fake.addStream('general');
    return new ZulipBench(fake, stream, fake.addUser('zoe').user, fake.addUser('bare', { is_bot: true }));
  }

  plugin() {
    return { use: 'relay-zulip', with: { server_url: this.fake.url, email: this.fake.bot.email, api_key: this.fake.botKey, streams: {} } };
  }

  endpoint() {
    return { zulip: 'general/lobby' };
  }

  /** The fake keeps messages in a plain array: its pushes are stamped (the moment a Zulip client could first see the message). */
  watch(marks: Marks): void {
    const messages = this.fake.messages;
    const record = messages.push.bind(messages);
    messages.push = (...added) => {
      const at = performance.now();
      for (const message of added) if (message.stream_id === this.stream) marks.seen('zulip', message.content, at);
      return record(...added);
    };
  }

  say(text: string): void {
    this.fake.say(this.stream, this.person, text, 'lobby');
  }

  async bareSettings() {
    return { serverUrl: this.fake.url, email: this.bare.user.email, apiKey: this.bare.key, stream: 'general', topic: 'lobby', self: this.bare.user.user_id };
  }

  held(): Record<string, number> {
    return this.fake.holding();
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
