/**
 * How long a plugin spends on a message, in fixed buckets (seconds, Prometheus style): counted on the
 * hot path with a few comparisons and no allocation, read out by the operations endpoint when scraped.
 */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

export class LatencyHistogram {
  /** counts[i]: observations at most LATENCY_BUCKETS[i] (and above the bucket before); the last one: above every bucket. */
  readonly counts = new Float64Array(LATENCY_BUCKETS.length + 1);
  sum = 0;
  count = 0;

  observe(seconds: number): void {
    let index = 0;
    while (index < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[index]!) index += 1;
    this.counts[index]! += 1;
    this.sum += seconds;
    this.count += 1;
  }

  /** Cumulative counts per upper bound, `+Inf` last, as the Prometheus histogram has them. */
  cumulative(): Array<{ le: number; count: number }> {
    let running = 0;
    const out: Array<{ le: number; count: number }> = LATENCY_BUCKETS.map((le, index) => ({ le, count: (running += this.counts[index]!) }));
    out.push({ le: Number.POSITIVE_INFINITY, count: running + this.counts[LATENCY_BUCKETS.length]! });
    return out;
  }

  /** Adds another histogram's counts (a plugin restarted by a reload keeps its history). */
  add(other: LatencyHistogram): void {
    for (let index = 0; index < this.counts.length; index += 1) this.counts[index]! += other.counts[index]!;
    this.sum += other.sum;
    this.count += other.count;
  }
}
