import type { PostGate } from './chaos.js';
import { tagsIn, type Line } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { FakeZulip, type FakeZulipUser } from './fake-zulip.js';
import { waitFor } from './supervisor.js';

/** Zulip's escaping undone: what a Zulip client shows (backslash escapes, and the zero-width spaces). */
export function zulipShown(content: string): string {
  return content.replace(/\\([\\`*_[\]()>#!|+=.)-])/g, '$1').replace(/\u200b/g, '');
}

/**
 * Zulip in the gateway chaos run, on the local Zulip (fake-zulip.ts): the relay's bot posts
 * `**name**: text` into the topic `lobby` of the stream `general`. Its cuts: every event queue dropped
 * (BAD_EVENT_QUEUE_ID: the relay registers again and reads the gap from the history) with the held polls
 * cut, or the server answers 429 to the next 2 sends and loses the answer of the one after (the queue's
 * echo, or else the history, tells the relay it was made). The server keeps every message, so nobody
 * keeps quiet: what was said while the bot was down is read back from its mark.
 */
export class ZulipSide implements PlatformSide {
  readonly side = 'zulip';
  readonly people = ['zoe', 'zack'] as const;
  private readonly users: Record<string, FakeZulipUser>;
  private registersSeen = 0;

  private constructor(
    readonly fake: FakeZulip,
    private readonly stream: number,
  ) {
    this.users = Object.fromEntries(this.people.map((who) => [who, fake.addUser(who).user]));
  }

  static async start(): Promise<ZulipSide> {
    const fake = await FakeZulip.start();
    return new ZulipSide(fake, fake.addStream('general'));
  }

  plugin() {
    return { use: 'relay-zulip', with: { server_url: this.fake.url, email: this.fake.bot.email, api_key: this.fake.botKey, streams: {}, request_timeout_ms: 5_000 } };
  }

  endpoint() {
    return { zulip: 'general/lobby' };
  }

  async connected(): Promise<void> {
    await waitFor('the relay\'s Zulip event queue', () => this.fake.registers > this.registersSeen && this.fake.polling > 0, 30_000);
    this.registersSeen = this.fake.registers;
  }

  say(who: string, text: string): void {
    this.fake.say(this.stream, this.users[who]!, text, 'lobby');
  }

  received(): string[] {
    return this.fake.inStream(this.stream, 'lobby').filter((message) => message.sender_id === this.fake.bot.user_id).map((message) => zulipShown(message.content));
  }

  origin(sent: Line[]): Line[] {
    const byTag = new Map(sent.map((line) => [line.tag, line]));
    return this.fake.inStream(this.stream, 'lobby').filter((message) => message.sender_id !== this.fake.bot.user_id)
      .flatMap((message) => tagsIn(message.content).flatMap((tag) => byTag.get(tag) ?? []));
  }

  async cut(variant: number, _gate: PostGate): Promise<string> {
    if (variant % 2 === 0) {
      this.fake.expireQueues();
      this.fake.dropPolls();
      return 'Zulip dropped every event queue';
    }
    this.fake.rateLimit(2);
    this.fake.loseAnswer(1);
    return 'Zulip answers 429 to the next 2 sends and loses the answer of the one after';
  }

  async beforeKill(): Promise<void> {}

  async killed(): Promise<void> {}

  close(): Promise<void> {
    return this.fake.close();
  }
}
