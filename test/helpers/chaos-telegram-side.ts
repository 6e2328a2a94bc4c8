import type { PostGate } from './chaos.js';
import { tagsIn, type Line } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { FakeTelegram, type TgUser } from './fake-telegram.js';
import { waitFor } from './supervisor.js';

const CHAT = -1001000000077;
const USERS: Record<string, TgUser> = {
  tara: { id: 801, is_bot: false, first_name: 'tara' },
  theo: { id: 802, is_bot: false, first_name: 'theo' },
};

/**
 * Telegram in the gateway chaos run, on the local Bot API (fake-telegram.ts): the relay long-polls
 * getUpdates with a kept offset and sends with sendMessage. Its cuts: the Bot API answers 429 (with
 * retry_after) to the next sends, or loses the answer of a getUpdates (a 502: nothing is confirmed, the
 * relay asks again from its offset). Telegram keeps the updates until they are confirmed, so nobody keeps
 * quiet. sendMessage has no idempotency key and a bot cannot read a chat back: the one line in flight
 * when the bot is killed may show twice (`sendsAgainAfterKill`).
 */
export class TelegramSide implements PlatformSide {
  readonly side = 'telegram';
  readonly people = ['tara', 'theo'] as const;
  readonly sendsAgainAfterKill = 1;
  private pollsSeen = 0;

  private constructor(readonly fake: FakeTelegram) {}

  static async start(): Promise<TelegramSide> {
    const fake = await FakeTelegram.start();
    fake.addChat({ id: CHAT, type: 'supergroup', title: 'General' });
    return new TelegramSide(fake);
  }

  plugin() {
    return {
      use: 'relay-telegram',
      with: { token: this.fake.token, api_url: this.fake.url, chats: {}, request_timeout_ms: 5_000, rate: { per_second: 1000, chat_per_minute: 60_000, chat_burst: 100 } },
    };
  }

  endpoint() {
    return { telegram: String(CHAT) };
  }

  /** The relay is polling (a getUpdates after the ones seen before: its first one only takes the offset). */
  async connected(): Promise<void> {
    const polls = () => this.fake.calls.filter((call) => call === 'getUpdates').length;
    await waitFor('the relay\'s getUpdates', () => polls() > this.pollsSeen + 1, 30_000);
    this.pollsSeen = polls();
  }

  say(who: string, text: string): void {
    this.fake.say(CHAT, USERS[who]!, text);
  }

  received(): string[] {
    return this.fake.botPosts(CHAT).map((message) => String(message.text));
  }

  origin(sent: Line[]): Line[] {
    const byTag = new Map(sent.map((line) => [line.tag, line]));
    return this.fake.messages.filter((m) => m.chat.id === CHAT && m.from?.id !== this.fake.bot.id)
      .flatMap((m) => tagsIn(String(m.text ?? '')).flatMap((tag) => byTag.get(tag) ?? []));
  }

  async cut(variant: number, _gate: PostGate): Promise<string> {
    if (variant % 2 === 0) {
      this.fake.rateLimit(3);
      return 'Telegram answers 429 (retry_after 1) to the next 3 sends';
    }
    this.fake.dropPollAnswers(1);
    return 'Telegram loses the answer of the next getUpdates (502)';
  }

  async beforeKill(): Promise<void> {}

  async killed(): Promise<void> {}

  close(): Promise<void> {
    return this.fake.close();
  }
}
