/** One sample of a metric: its labels and value (`suffix` for a histogram's `_bucket`, `_sum`, `_count`). */
export interface Sample {
  labels: Record<string, string | number>;
  value: number;
  suffix?: '_bucket' | '_sum' | '_count';
}

type MetricType = 'counter' | 'gauge' | 'histogram';

/**
 * A metric whose samples are read from the running bots when Prometheus scrapes, in prom-client's
 * metric shape (registered with `registry.registerMetric`): the counters already live in the chats,
 * chains and plugins, so nothing is counted twice on the message path, and a chat or a bot that went
 * away (a reload) leaves no stale series behind.
 */
export class ScrapeMetric {
  readonly aggregator = 'sum' as const;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: MetricType,
    private readonly read: () => Iterable<Sample>,
  ) {}

  get() {
    const values = [];
    for (const sample of this.read()) {
      values.push({ labels: sample.labels, value: sample.value, ...(sample.suffix ? { metricName: `${this.name}${sample.suffix}` } : {}) });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  // prom-client calls these on registered metrics (reset / resetMetrics); there is nothing to reset here.
  reset(): void {}
}
