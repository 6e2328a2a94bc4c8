import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Api } from 'grammy';
import type { Logger } from 'pino';
import type { KeyValueStore } from '../../src/index.js';
import { grammySignal } from './client.js';
import { ALLOWED_UPDATES, type TelegramInbound, type TelegramUpdate } from './inbound.js';
import { OFFSET_KEY, WEBHOOK_KEY } from './poll.js';

/** An update is a few KiB; a body past this is not Telegram's. */
const MAX_BODY = 1024 * 1024;
const SECRET_HEADER = 'x-telegram-bot-api-secret-token';

/**
 * Updates by webhook: Telegram POSTs each update to the `url` set with setWebhook, one at a time
 * (`max_connections: 1`, so they come in order), and sends it again until it gets a 2xx, for 24 hours at
 * most. The relay answers 200 only once the update's line was handed to the gateways durably, so an
 * update cut short by a crash or a stop comes again (the gateway drops what it already took). A POST
 * without the secret token is refused (401) and read no further.
 */
export class TelegramWebhook {
  private server: Server | undefined;
  /** One update at a time, in the order they came: Telegram's own retry of one waits behind it. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: {
      url: string;
      listen: { host: string; port: number };
      secret: string;
      api: () => Api;
      store: KeyValueStore;
      inbound: TelegramInbound;
      log: Logger;
      counters: { webhook_updates: number; webhook_refused: number };
      stopping: AbortSignal;
    },
  ) {}

  /** Listens, then sets the webhook (the updates Telegram holds are kept and delivered). */
  async start(): Promise<void> {
    const server = createServer((req, res) => void this.take(req, res));
    this.server = server;
    await new Promise<void>((ready, fail) => {
      server.once('error', fail);
      server.listen(this.options.listen.port, this.options.listen.host, () => ready());
    });
    // A first start (neither a webhook set nor an offset kept before) relays what is said from now on, as a first poll does.
    const first = this.options.store.get(WEBHOOK_KEY) === undefined && this.options.store.get(OFFSET_KEY) === undefined;
    await this.options.api().setWebhook(this.options.url, {
      secret_token: this.options.secret, max_connections: 1, allowed_updates: [...ALLOWED_UPDATES], drop_pending_updates: first,
    }, grammySignal(this.options.stopping));
    this.options.store.set(WEBHOOK_KEY, true);
    this.options.log.info({ listen: `${this.options.listen.host}:${this.options.listen.port}` }, 'Telegram webhook set; updates come by POST');
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
    await this.chain;
  }

  private async take(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const answer = (status: number) => void res.writeHead(status, { 'content-type': 'text/plain' }).end();
    const given = Buffer.from(String(req.headers[SECRET_HEADER] ?? ''));
    const secret = Buffer.from(this.options.secret);
    if (req.method !== 'POST' || given.length !== secret.length || !timingSafeEqual(given, secret)) {
      this.options.counters.webhook_refused += 1;
      req.resume();
      return answer(req.method !== 'POST' ? 405 : 401);
    }
    let update: TelegramUpdate;
    try {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        size += (chunk as Buffer).length;
        if (size > MAX_BODY) return answer(413);
        chunks.push(chunk as Buffer);
      }
      update = JSON.parse(Buffer.concat(chunks).toString('utf8')) as TelegramUpdate;
      if (typeof update?.update_id !== 'number') return answer(400);
    } catch {
      return answer(400);
    }
    const handled = this.chain.then(() => this.options.inbound.batch([update]));
    this.chain = handled.catch(() => undefined);
    try {
      await handled;
      // Stopped before the line was handed on: Telegram sends it again to the next start.
      if (this.options.stopping.aborted) return answer(503);
      this.options.counters.webhook_updates += 1;
      answer(200);
    } catch (error) {
      this.options.log.warn({ update: update.update_id, reason: (error as Error).message }, 'a Telegram update could not be handed on; Telegram sends it again');
      answer(500);
    }
  }
}
