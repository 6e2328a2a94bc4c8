import { FakeTelegram, type TgUser } from '../../test/helpers/fake-telegram.js';
import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

const CHAT = -1001000000099;
const PERSON: TgUser = { id: 901, is_bot: false, first_name: 'tara' };

/**
 * Telegram, on the local Bot API of the tests (test/helpers/fake-telegram.ts): the relay sends each line
 * with sendMessage and long-polls getUpdates. The gateway and the bare client take turns with the one
 * bot token (a Bot API token has one poller at a time), each starting from the newest update.
 */
export class TelegramBench implements BenchPlatform {
  readonly point = 'telegram' as const;
  readonly how = 'sendMessage, no pacing (rate: off)';

  private constructor(private readonly fake: FakeTelegram) {}

  static async start(): Promise<TelegramBench> {
    const fake = await FakeTelegram.start();
    fake.addChat({ id: CHAT, type: 'supergroup', title: 'bench' });
    return new TelegramBench(fake);
  }

  plugin() {
    // Telegram's own limits (20 a minute in a group) would set the pace, not the relay: off, as with a Bot API server of one's own.
    return { use: 'relay-telegram', with: { token: this.fake.token, api_url: this.fake.url, chats: {}, rate: 'off' } };
  }

  endpoint() {
    return { telegram: String(CHAT) };
  }

  watch(marks: Marks): void {
    this.fake.onBotPost = (message) => marks.seen('telegram', String(message.text), performance.now());
  }

  say(text: string): void {
    this.fake.say(CHAT, PERSON, text);
  }

  async bareSettings() {
    return { apiUrl: this.fake.url, token: this.fake.token, chat: CHAT, self: this.fake.bot.id };
  }

  held(): Record<string, number> {
    return this.fake.holding();
  }

  close(): Promise<void> {
    return this.fake.close();
  }
}
