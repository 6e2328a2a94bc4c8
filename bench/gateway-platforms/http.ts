import { request } from 'undici';
import { freePort } from '../../test/helpers/ports.js';
import { WebhookReceiver } from '../../test/helpers/webhook-receiver.js';
import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

const SECRET = 'bench-webhook-secret-0123456789';
const TOKEN = 'bench-http-token-0123456789';

/** The HTTP API: the relay's lines go out as signed webhook POSTs to a receiver in the bench process. */
export class HttpBench implements BenchPlatform {
  readonly point = 'http' as const;
  readonly how = 'signed webhook POST';

  private constructor(private readonly receiver: WebhookReceiver, private readonly ports: { gateway: number; bare: number }) {}

  static async start(): Promise<HttpBench> {
    return new HttpBench(await WebhookReceiver.start(SECRET), { gateway: await freePort(), bare: await freePort() });
  }

  plugin() {
    return {
      use: 'http-api',
      with: { listen: { host: '127.0.0.1', port: this.ports.gateway }, channels: {}, clients: [{ name: 'tools', token: TOKEN }], webhooks: [{ url: this.receiver.url, secret: SECRET }] },
    };
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

  /** A tool POSTs a message: to the bot's http-api, or to the bare client's own HTTP server. */
  say(text: string, to: 'gateway' | 'bare'): void {
    void request(`http://127.0.0.1:${to === 'gateway' ? this.ports.gateway : this.ports.bare}/gateways/bench/messages`, {
      method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ text, username: 'hank' }),
    }).then((answer) => answer.body.dump()).catch(() => undefined);
  }

  async bareSettings() {
    return { url: this.receiver.url, secret: SECRET, listenPort: this.ports.bare };
  }

  close(): Promise<void> {
    return this.receiver.close();
  }
}
