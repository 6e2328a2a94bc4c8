import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

/**
 * A platform whose local fake is started afresh for each setup of the platforms bench: a fake keeps
 * every message, event queue and session of the clients that came before (a dead Zulip queue is fed
 * each message, a Discord session keeps each dispatch for a RESUME, a Matrix room's history grows), and
 * all of it runs in the bench's one process, where every hop is timed. Without this, each setup did
 * more work per line than the one before it, and the last ones (the second round's gateway) were
 * measured on a busier loop than the first. `reset` closes the fake and starts an empty one; the
 * bench then writes the bot's or the bare client's settings from it.
 */
export class FreshEachSetup implements BenchPlatform {
  private marks: Marks | undefined;

  private constructor(private current: BenchPlatform, private readonly start: () => Promise<BenchPlatform>) {}

  static async start(start: () => Promise<BenchPlatform>): Promise<FreshEachSetup> {
    return new FreshEachSetup(await start(), start);
  }

  get point(): BenchPlatform['point'] {
    return this.current.point;
  }

  get how(): string {
    return this.current.how;
  }

  /** Closes the fake and starts an empty one, watched as the last one was. */
  async reset(): Promise<void> {
    await this.current.close();
    this.current = await this.start();
    if (this.marks) this.current.watch(this.marks);
  }

  plugin() {
    return this.current.plugin();
  }

  endpoint() {
    return this.current.endpoint();
  }

  watch(marks: Marks): void {
    this.marks = marks;
    this.current.watch(marks);
  }

  say(text: string, to: 'gateway' | 'bare'): void | Promise<void> {
    return this.current.say(text, to);
  }

  bareSettings(): Promise<Record<string, unknown>> {
    return this.current.bareSettings();
  }

  held(): Record<string, number> {
    return this.current.held?.() ?? {};
  }

  close(): Promise<void> {
    return this.current.close();
  }
}
