import type { Logger } from 'pino';
import { failureFields } from '../api/failure-fields.js';
import type { Bot } from '../supervisor/bot.js';
import type { ChatRunner } from '../supervisor/chat-runner.js';

/** At most this many chats are read per round: 10,000 chats down at once must not flood the service. */
const PER_ROUND = 20;

/**
 * A chat whose socket is down sees nothing new, so its lag would stay where it was. Every
 * `everyMs` this reads the newest msg_num of a few such chats (those read longest ago first), so the
 * lag metric rises while a chat is held down and the alert can fire.
 */
export class LagProbe {
  private readonly lastRead = new WeakMap<ChatRunner, number>();
  private readonly timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly bots: () => readonly Bot[], private readonly log: Logger, everyMs: number) {
    if (everyMs > 0) this.timer = setInterval(() => void this.round(), everyMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One round (exported for tests that do not want to wait for the timer). */
  async round(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const down: ChatRunner[] = [];
      for (const bot of this.bots()) {
        if (bot.phase !== 'running') continue;
        for (const runner of bot.runners) {
          const state = runner.connection.state;
          if (state === 'reconnecting' || state === 'connecting' || state === 'closed' || runner.waitingToJoin) down.push(runner);
        }
      }
      down.sort((a, b) => (this.lastRead.get(a) ?? 0) - (this.lastRead.get(b) ?? 0));
      for (const runner of down.slice(0, PER_ROUND)) {
        this.lastRead.set(runner, Date.now());
        try {
          await runner.probeNewest();
        } catch (error) {
          this.log.debug({ ...failureFields(error), chat: runner.info.subject }, 'could not read the newest msg_num of a chat that is down');
        }
      }
    } finally {
      this.running = false;
    }
  }
}
