import { setTimeout as pause } from 'node:timers/promises';
import { request } from 'undici';
import type { PostGate } from './chaos.js';
import type { Line } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { freePort } from './ports.js';
import { waitFor } from './supervisor.js';
import { WebhookReceiver } from './webhook-receiver.js';

const CHANNEL = 'ops';
const TOKEN = 'chaos-http-token-0123456789';
const SECRET = 'chaos-webhook-secret-0123456789';

/**
 * The HTTP API in the gateway chaos run: its people are tools POSTing to the bot's http-api (a bearer
 * token, an Idempotency-Key each, tried again until a 202, as a tool must when the bot is down); what
 * the relay "posts" there are its webhook's deliveries to a real receiver, which keeps each
 * Idempotency-Key once, as a receiver of such webhooks does. Its cuts: the receiver answers 500 a few
 * times, or once does not answer at all (the relay's timeout). Nobody keeps quiet: a POST is queued
 * durably before its 202, and the webhook's queue keeps its order through retries.
 */
export class HttpSide implements PlatformSide {
  readonly side = 'http';
  readonly people = ['hank', 'hope'] as const;

  private constructor(readonly receiver: WebhookReceiver, private readonly port: number) {}

  static async start(): Promise<HttpSide> {
    return new HttpSide(await WebhookReceiver.start(SECRET), await freePort());
  }

  plugin() {
    return {
      use: 'http-api',
      with: {
        listen: { host: '127.0.0.1', port: this.port }, channels: {}, clients: [{ name: 'tools', token: TOKEN }],
        webhooks: [{ url: this.receiver.url, secret: SECRET, timeout_ms: 1_000 }], retry_min_ms: 50, retry_max_ms: 500,
      },
    };
  }

  endpoint() {
    return { http: CHANNEL };
  }

  async connected(): Promise<void> {
    await waitFor('the HTTP API listening', async () => {
      const answer = await request(`http://127.0.0.1:${this.port}/health`).catch(() => undefined);
      await answer?.body.dump();
      return answer?.statusCode === 200;
    }, 30_000);
  }

  /** POSTs the line, again with the same Idempotency-Key until it is taken (the bot may be down). */
  async say(who: string, text: string): Promise<void> {
    const key = /\b[a-z]\d{5}\b/.exec(text)![0];
    for (;;) {
      const answer = await request(`http://127.0.0.1:${this.port}/gateways/${CHANNEL}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ text, username: who }),
      }).catch(() => undefined);
      await answer?.body.dump();
      if (answer?.statusCode === 202) return;
      await pause(100);
    }
  }

  received(): string[] {
    return this.receiver.lines.map((line) => `${(line.speaker as { name: string }).name}: ${String(line.text)}`);
  }

  /** Each POST was taken (202) before the next was made: the order said. */
  origin(sent: Line[]): Line[] {
    return sent;
  }

  async cut(variant: number, _gate: PostGate): Promise<string> {
    if (variant % 2 === 0) {
      this.receiver.failNext(500, 500, 503);
      return 'webhook receiver answers 500, 500, 503';
    }
    this.receiver.failNext('hang');
    return 'webhook receiver does not answer once';
  }

  async beforeKill(): Promise<void> {}

  async killed(): Promise<void> {}

  close(): Promise<void> {
    return this.receiver.close();
  }
}
