/** What the memory says of a signature: first seen now, seen before (a replay), or no room to remember it. */
export type Admission = 'new' | 'seen' | 'full';

/**
 * The signatures of signed requests taken within the window, so that each is taken once (#31 item 6).
 * A signature is only valid while its X-Timestamp is within `windowS` of the clock, so it is kept until
 * then and no longer: the memory is grouped by timestamp second, and a second that left the window is
 * dropped whole (at most 2 × windowS + 1 groups exist at once). At `max` signatures kept, a new one is
 * refused rather than an old one forgotten: forgetting would let its request be replayed.
 * In memory only: a restart forgets them (docs/plugins/http-api.md says what that allows).
 */
export class SeenSignatures {
  private readonly bySecond = new Map<number, Set<string>>();
  private count = 0;

  constructor(
    private readonly max: number,
    private readonly windowS: number,
  ) {}

  get size(): number {
    return this.count;
  }

  /** Remembers a signature whose X-Timestamp is `timestamp` (Unix seconds, already checked to be in the window). */
  admit(signature: string, timestamp: number, nowMs = Date.now()): Admission {
    this.forgetExpired(nowMs);
    const second = this.bySecond.get(timestamp);
    if (second?.has(signature)) return 'seen';
    if (this.count >= this.max) return 'full';
    if (second) second.add(signature);
    else this.bySecond.set(timestamp, new Set([signature]));
    this.count += 1;
    return 'new';
  }

  /** Seconds until the oldest group leaves the window (room for new signatures when full). */
  secondsUntilRoom(nowMs = Date.now()): number {
    let oldest = Infinity;
    for (const second of this.bySecond.keys()) oldest = Math.min(oldest, second);
    return oldest === Infinity ? 1 : Math.max(1, Math.ceil(oldest + this.windowS + 1 - nowMs / 1000));
  }

  private forgetExpired(nowMs: number): void {
    const oldestValid = nowMs / 1000 - this.windowS;
    for (const [second, signatures] of this.bySecond) {
      if (second >= oldestValid) continue;
      this.bySecond.delete(second);
      this.count -= signatures.size;
    }
  }
}
