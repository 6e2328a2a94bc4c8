import { sleep } from './backoff.js';

/** Upgrades per second and how many may go at once (a token bucket). */
export interface UpgradePace {
  perSecond: number;
  burst: number;
}

/** The local service's default upgrade limit per caller (docs/protocol.md "Rate limits"). */
export const DEFAULT_UPGRADE_PACE: UpgradePace = { perSecond: 20, burst: 50 };

/** Time for the gate: the real one, or a hand-driven one in tests. */
export interface GateClock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Resolves after `ms`, or at once when `signal` is aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

const REAL_CLOCK: GateClock = { now: () => performance.now(), sleep };

/** The slowest the gate goes after refusals: one upgrade every ten seconds. */
const MIN_PER_SECOND = 0.1;
/** After a cut, successes bring the pace back up by this share of the ceiling per second. */
const RECOVERY_PER_SECOND = 0.1;
/**
 * The share of the burst the gate spends at once. Upgrades reach the service some time after the gate
 * let them through, and not evenly (handshakes queue behind each other): the half kept in reserve
 * absorbs that bunching, where a bucket as full as the service's runs it dry and is refused.
 */
const BURST_SHARE = 0.5;

/**
 * A token bucket shared by all of a supervisor's sockets: when many drop at once, their upgrades are
 * spread over time instead of hitting the service in one burst, at the ceiling's pace but with half
 * its burst (the rest is headroom for handshakes that reach the service bunched up). It adapts: an upgrade refused with
 * 429 halves the pace and empties the bucket for every socket waiting, and upgrades that go through
 * bring it back towards the configured ceiling (a tenth of it per second). A round of refusals of
 * upgrades let through before the cut (they were in flight) counts once, so a mass reconnect settles
 * just under the service's own limit with few refusals even when the ceiling is set too high.
 */
export class UpgradeGate {
  private perSecond: number;
  private tokens: number;
  private refilled: number;
  /** When the pace last changed: recovery is counted from there. */
  private changed: number;
  private queue: Promise<unknown> = Promise.resolve();
  /** Numbers the upgrades let through, so a refusal can tell whether it came before or after a cut. */
  private issued = 0;
  private cutAtTicket = 0;
  readonly stats = { accepted: 0, refused: 0, cuts: 0 };

  constructor(
    readonly ceiling: UpgradePace = DEFAULT_UPGRADE_PACE,
    private readonly clock: GateClock = REAL_CLOCK,
  ) {
    if (!(ceiling.perSecond > 0) || !(ceiling.burst >= 1)) throw new RangeError('an upgrade pace needs per_second > 0 and burst >= 1');
    this.perSecond = ceiling.perSecond;
    this.tokens = this.burst;
    this.refilled = this.changed = clock.now();
  }

  /** Upgrades per second the gate lets through now (the ceiling unless the service refused some). */
  get pace(): number {
    return this.perSecond;
  }

  /** The bucket's size now: half the burst, shrunk with the pace, so a slowed gate does not burst at its old size. */
  private get burst(): number {
    return Math.max(1, Math.floor((BURST_SHARE * this.ceiling.burst * this.perSecond) / this.ceiling.perSecond));
  }

  /**
   * Resolves when this caller may upgrade; callers are served in turn. The answer is a ticket to hand
   * to refused() should the service say no. A caller whose signal was aborted gets through at once
   * (it will not upgrade) without taking a token.
   */
  take(signal?: AbortSignal): Promise<number> {
    const turn = this.queue.then(() => this.wait(signal));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  /** The service took an upgrade: the pace climbs back towards the ceiling. */
  accepted(): void {
    this.stats.accepted += 1;
    if (this.perSecond >= this.ceiling.perSecond) return;
    const now = this.clock.now();
    this.refill(now);
    const climbed = ((now - this.changed) / 1000) * RECOVERY_PER_SECOND * this.ceiling.perSecond;
    this.perSecond = Math.min(this.ceiling.perSecond, this.perSecond + climbed);
    this.changed = now;
  }

  /**
   * The service refused the upgrade of `ticket` for its rate limit (429): nobody goes at once, and
   * unless the upgrade was let through before the last cut, the pace halves.
   */
  refused(ticket: number): void {
    this.stats.refused += 1;
    const now = this.clock.now();
    this.refill(now);
    this.tokens = Math.min(this.tokens, 0);
    if (ticket <= this.cutAtTicket) return;
    this.perSecond = Math.max(MIN_PER_SECOND, Math.min(this.ceiling.perSecond, this.perSecond) / 2);
    this.tokens = Math.min(this.tokens, this.burst);
    this.cutAtTicket = this.issued;
    this.changed = now;
    this.stats.cuts += 1;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.refilled) / 1000) * this.perSecond);
    this.refilled = now;
  }

  private async wait(signal?: AbortSignal): Promise<number> {
    for (;;) {
      // A caller that gave up (its chat is stopping) neither waits nor takes a token.
      if (signal?.aborted) return 0;
      this.refill(this.clock.now());
      if (this.tokens >= 1) {
        this.tokens -= 1;
        this.issued += 1;
        return this.issued;
      }
      // Woken by the clock, it looks again: a cut meanwhile makes it wait longer.
      await this.clock.sleep(((1 - this.tokens) / this.perSecond) * 1000, signal);
    }
  }
}
