export interface PostRate {
  perSecond: number;
  burst: number;
}

/**
 * The pace of one chat's posts: a token bucket (`reply_rate`), and a pause the service asked for (a
 * post refused for rate names how long to wait).
 */
export class PostPacer {
  private tokens: number;
  private refilled = performance.now();
  /** No post goes out before this (performance.now()). */
  private resumeAt = 0;

  constructor(private readonly rate: PostRate) {
    this.tokens = rate.burst;
  }

  /** 0 when a post may go now (its token taken); otherwise how many ms to wait before asking again. */
  wait(): number {
    const now = performance.now();
    if (this.resumeAt > now) return this.resumeAt - now;
    const { perSecond, burst } = this.rate;
    this.tokens = Math.min(burst, this.tokens + ((now - this.refilled) / 1000) * perSecond);
    this.refilled = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return ((1 - this.tokens) / perSecond) * 1000;
  }

  /** A post that took its token was not sent after all. */
  giveBack(): void {
    this.tokens += 1;
  }

  /** The service asked to wait this long before the next post. */
  pauseFor(seconds: number): void {
    this.resumeAt = Math.max(this.resumeAt, performance.now() + seconds * 1000);
  }
}
