import { FakeDiscord } from '../../test/helpers/fake-discord.js';
import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

const CHANNEL = '700000000000000077';
/** The person who speaks on Discord (the platform → chat hop). */
const DANA = { id: '600000000000000021', username: 'dana', global_name: null };

/** Discord, on the local Discord of the tests (test/helpers/fake-discord.ts): the relay posts through the channel's webhook. */
export class DiscordBench implements BenchPlatform {
  readonly point = 'discord' as const;
  readonly how = 'webhook execute (wait=true)';

  private constructor(private readonly fake: FakeDiscord) {}

  static async start(): Promise<DiscordBench> {
    const fake = await FakeDiscord.start();
    fake.addChannel(CHANNEL);
    return new DiscordBench(fake);
  }

  plugin() {
    return { use: 'relay-discord', with: { token: this.fake.token, api_url: this.fake.apiUrl, channels: {} } };
  }

  endpoint() {
    return { discord: CHANNEL };
  }

  /** The fake keeps messages in a plain array: its pushes are stamped (the moment a Discord client could first see the message). */
  watch(marks: Marks): void {
    const messages = this.fake.messages;
    const record = messages.push.bind(messages);
    messages.push = (...added) => {
      const at = performance.now();
      for (const message of added) if (message.channel_id === CHANNEL) marks.seen('discord', message.content, at);
      return record(...added);
    };
  }

  say(text: string): void {
    this.fake.say(CHANNEL, DANA, text);
  }

  async bareSettings() {
    return { apiUrl: this.fake.apiUrl, token: this.fake.token, channel: CHANNEL };
  }

  held(): Record<string, number> {
    return this.fake.holding();
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
