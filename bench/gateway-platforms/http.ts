import { WebhookReceiver } from '../../test/helpers/webhook-receiver.js';
import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

const SECRET = 'bench-webhook-secret-0123456789';

/** The HTTP API: the relay's lines go out as signed webhook POSTs to a receiver in the bench process. */
export class HttpBench implements BenchPlatform {
  readonly point = 'http' as const;
  readonly how = 'signed webhook POST';

  private constructor(private readonly receiver: WebhookReceiver) {}

  static async start(): Promise<HttpBench> {
    return new HttpBench(await WebhookReceiver.start(SECRET));
  }

  plugin() {
    return { use: 'http-api', with: { listen: { host: '127.0.0.1', port: 0 }, channels: {}, webhooks: [{ url: this.receiver.url, secret: SECRET }] } };
  }

  endpoint() {
    return { http: 'bench' };
  }

  /** The receiver keeps each accepted line in a plain array: its pushes are stamped (the moment the receiving tool has the line). */
  watch(marks: Marks): void {
    const lines = this.receiver.lines;
    const record = lines.push.bind(lines);
    lines.push = (...added) => {
      const at = performance.now();
      for (const line of added) marks.seen('http', String(line.text), at);
      return record(...added);
    };
  }

  async bareSettings() {
    return { url: this.receiver.url, secret: SECRET };
  }

  close(): Promise<void> {
    return this.receiver.close();
  }
}
