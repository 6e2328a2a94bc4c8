import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceProcess } from '../lib/service-process.js';
import { GROUP, mark, type Setup } from './setups.js';

/**
 * Topics made in the archive and when each setup's chat showed them: `sent` is read on the bench's
 * clock just before the admin `topics` call that creates one (the call takes a few ms, against
 * announcement delays of seconds), `seen` when a watcher's socket handed over the announcement.
 */
export class TopicMarks {
  private readonly sentAt = new Map<string, number>();
  private readonly seenAt = new Map<string, number>();

  constructor(private readonly service: ServiceProcess) {}

  /** Makes topic `n` of `tag` as a member (alice and carol by turns), its mark in the subject. */
  async post(tag: string, n: number): Promise<void> {
    const user = n % 2 === 0 ? 'alice@example.com' : 'carol@example.com';
    this.sentAt.set(`${tag}-${n}`, performance.now());
    await this.service.admin('topics', { group: GROUP, user, subject: `Bench topic ${mark(tag, n)}`, body: `Body of topic ${n}.` });
  }

  /** The watchers' callback: the first time a setup's chat showed topic `n` of `tag`. */
  seen(setup: Setup, tag: string, n: number, at: number): void {
    const key = `${setup.key}/${tag}-${n}`;
    if (!this.seenAt.has(key)) this.seenAt.set(key, at);
  }

  /** How many topics of `tag` (0..count-1) each setup's chat showed. */
  shown(setup: Setup, tag: string, count: number): number {
    let shown = 0;
    for (let n = 0; n < count; n += 1) if (this.seenAt.has(`${setup.key}/${tag}-${n}`)) shown += 1;
    return shown;
  }

  /** Creation to announcement of each topic of `tag` that the setup's chat showed, in ms; and how many it did not. */
  delays(setup: Setup, tag: string, count: number): { delays: number[]; lost: number } {
    const delays: number[] = [];
    for (let n = 0; n < count; n += 1) {
      const seen = this.seenAt.get(`${setup.key}/${tag}-${n}`);
      const sent = this.sentAt.get(`${tag}-${n}`);
      if (seen !== undefined && sent !== undefined) delays.push(seen - sent);
    }
    return { delays, lost: count - delays.length };
  }

  /**
   * Makes a probe topic every 2.5 s until every setup's chat showed one: each is running and past its
   * first read (which takes the archive's newest message as its position, so an earlier topic is never told).
   */
  async untilFlowing(setups: Setup[], tag: string, timeoutMs = 60_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (let n = 0; ; n += 1) {
      if (setups.every((setup) => this.shown(setup, tag, n) > 0)) return;
      if (performance.now() > deadline) throw new Error(`no probe topic reached ${setups.filter((s) => this.shown(s, tag, n) === 0).map((s) => s.key).join(', ')} within ${timeoutMs / 1000} s`);
      await this.post(tag, n);
      await sleep(2_500);
    }
  }

  /** Waits until every setup's chat showed topics 0..count-1 of `tag`, or `patienceMs` passed. */
  async untilShown(setups: Setup[], tag: string, count: number, patienceMs: number): Promise<void> {
    const deadline = performance.now() + patienceMs;
    while (setups.some((setup) => this.shown(setup, tag, count) < count) && performance.now() < deadline) await sleep(50);
  }
}
