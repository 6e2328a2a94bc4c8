import { sleep } from '../../src/index.js';

/** A token bucket: `burst` sends at once, then one every 1/`perSecond` s. */
class Bucket {
  private tokens: number;
  private at: number;

  constructor(private readonly perSecond: number, private readonly burst: number, now: number) {
    this.tokens = burst;
    this.at = now;
  }

  /** Ms until a token is there (0: take it now). */
  waitMs(now: number): number {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.perSecond) * 1000);
  }

  take(): void {
    this.tokens -= 1;
  }
}

/**
 * Telegram's send limits kept on the relay's side, so its 429s are the exception: a bucket per chat
 * (about 20 a minute in a group, a short burst) and one for the bot (30 a second in all). A send waits
 * until both have a token; each chat's queue waits on its own bucket, so a busy chat holds back no other.
 */
export class SendPacing {
  private readonly chats = new Map<string, Bucket>();
  private readonly global: Bucket | undefined;

  private readonly now: () => number;
  private readonly pause: (ms: number, signal: AbortSignal) => Promise<void>;

  /** `clock`: the time and the pause (tests give a clock of their own). */
  constructor(
    private readonly rate: 'off' | { per_second: number; chat_per_minute: number; chat_burst: number },
    clock: { now: () => number; sleep: (ms: number, signal: AbortSignal) => Promise<void> } = { now: Date.now, sleep },
  ) {
    this.now = clock.now;
    this.pause = clock.sleep;
    this.global = rate === 'off' ? undefined : new Bucket(rate.per_second, Math.max(1, Math.ceil(rate.per_second)), this.now());
  }

  /** Resolves when a message may go to `chatId` (the tokens taken); an abort ends the wait early. */
  async take(chatId: string, signal: AbortSignal): Promise<void> {
    if (this.rate === 'off' || !this.global) return;
    let chat = this.chats.get(chatId);
    if (!chat) this.chats.set(chatId, (chat = new Bucket(this.rate.chat_per_minute / 60, this.rate.chat_burst, this.now())));
    for (;;) {
      if (signal.aborted) return;
      const wait = Math.max(chat.waitMs(this.now()), this.global.waitMs(this.now()));
      if (wait === 0) break;
      await this.pause(wait, signal);
    }
    chat.take();
    this.global.take();
  }
}
