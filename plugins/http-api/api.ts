import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { failureFields, QueueFullError, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus } from '../../src/index.js';
import { fileNameOf } from './files.js';
import { SIGNATURE_WINDOW_S } from './auth.js';
import { IdempotencyKeys } from './idempotency.js';
import { Intake, NativeIds, type IntakeItem } from './intake.js';
import { payloadOf, safeName, stripControls, type FilePayload } from './line.js';
import { httpApiWarnings, type ClientOptions, type HttpApiOptions } from './options.js';
import { SeenSignatures } from './replay.js';
import { buildServer, urlOf, type Answer, type PostBody } from './server.js';
import { EventStreams } from './stream.js';
import { ChannelLog } from './stream-log.js';
import { UploadDir, type PostedFile } from './uploads.js';
import { WebhookDelivery } from './webhooks.js';

/** How long a client whose POST met a full queue is asked to wait. */
const FULL_RETRY_AFTER_S = 5;
/** The pause before a posted message a chat would not take is handed over again (growing from here). */
const RECEIVE_RETRY_MS = 1_000;
/**
 * The most signatures kept for the window (replay.ts): about 830 signed requests a second, sustained
 * over the 120 s window, and some 15 MB at most. Past it new signed requests get 503.
 */
const SEEN_SIGNATURES_MAX = 100_000;

/**
 * The HTTP endpoint: a gateway endpoint whose channels are names, spoken to over HTTP. Messages come
 * in by POST (intake.ts, durably queued before the 202), lines go out to signed webhooks
 * (webhooks.ts, a durable queue each) and to a durable numbered log per channel that event streams and
 * polling read from their own positions (stream-log.ts, stream.ts). The server is fastify (server.ts).
 * A server that cannot listen (port taken, TLS files unreadable) fails this plugin only.
 */
export class HttpApi {
  private readonly counters = {
    received: 0, receive_retries: 0, accepted: 0, replayed: 0, refused: 0, signatures_replayed: 0, signatures_full: 0, sent: 0, sent_again: 0,
    webhook_delivered: 0, webhook_retries: 0, webhook_dropped: 0, dead_lettered: 0, stream_connects: 0, stream_resets: 0,
    files_received: 0, files_served: 0, uploads_swept: 0,
  };
  private readonly uploads: UploadDir;
  private readonly ids: NativeIds;
  private readonly idempotency: IdempotencyKeys;
  private readonly intake: Intake;
  private readonly logs = new Map<string, ChannelLog>();
  private readonly webhooks: WebhookDelivery[];
  private readonly streams: EventStreams;
  /** Kept across a stop and start of this instance (a reload): the window is not reopened by it. */
  private readonly seen = new SeenSignatures(SEEN_SIGNATURES_MAX, SIGNATURE_WINDOW_S);
  private fullWarnedAt = 0;
  private app: FastifyInstance | undefined;
  private state: 'starting' | 'connected' | 'failed' | 'stopped' = 'starting';
  private detail: string | undefined;
  private port = 0;
  /** The address served, once listening (the start of the API's download URLs without `public_url`). */
  private listening: string | undefined;

  constructor(
    private readonly options: HttpApiOptions,
    private readonly env: PluginEnv,
  ) {
    const { dataDir, storage, log } = env;
    this.ids = new NativeIds(env.store);
    this.idempotency = IdempotencyKeys.open(join(dataDir, 'idempotency.json'), storage, options.idempotency_ttl);
    this.uploads = new UploadDir(join(dataDir, 'uploads'));
    this.intake = new Intake({
      dataDir, storage, max: options.intake_max, gateway: env.gateway, log, counters: this.counters, incoming: options.incoming, retryMs: RECEIVE_RETRY_MS, uploads: this.uploads,
    });
    this.webhooks = options.webhooks.map((webhook) => new WebhookDelivery(webhook, {
      dataDir, storage, max: options.webhook_queue_max, log, counters: this.counters, retryMinMs: options.retry_min_ms, retryMaxMs: options.retry_max_ms,
    }));
    this.streams = new EventStreams({ keepaliveMs: options.keepalive_ms, log, counters: this.counters });
  }

  instance(): PluginInstance {
    return {
      start: () => this.start(),
      stop: () => this.stop(),
      endpoint: { send: (channel, message) => this.send(channel, message) },
      stats: () => ({
        ...this.counters, port: this.port, stream_clients: this.streams.clients, intake_queued: this.intake.size,
        webhook_queued: this.webhooks.reduce((sum, w) => sum + w.size, 0), idempotency_keys: this.idempotency.size, signatures_kept: this.seen.size,
      }),
      status: () => this.status(),
    };
  }

  private async start(): Promise<void> {
    for (const channel of this.env.gateway.channels()) {
      // Opening a channel's intake starts its worker: what was queued before a restart goes on now.
      for (const item of this.intake.queue(channel).all()) this.rememberAgain(item);
    }
    try {
      // Uploads no queued line names: a crash came between a line being taken and its files removed, or mid-upload.
      this.counters.uploads_swept += await this.uploads.sweep(this.intake.uploadsQueued());
    } catch (error) {
      this.env.log.warn({ ...failureFields(error) }, 'the uploads folder could not be cleaned');
    }
    for (const webhook of this.webhooks) webhook.start();
    const { listen, tls } = this.options;
    for (const warning of httpApiWarnings(this.options)) this.env.log.warn({ host: listen.host }, warning.message);
    try {
      this.app = buildServer(this.options, this.env.configDir, this.env.log, {
        channels: () => this.env.gateway.channels(),
        post: (client, channel, body, key, files) => this.post(client, channel, body, key, files),
        uploads: this.uploads,
        file: (channel, id, name) => this.file(channel, id, name),
        replay: (client, key) => this.idempotency.find(client.name, key),
        page: (channel, after, limit) => ({ ...this.log(channel).after(after, limit), last: this.log(channel).last }),
        stream: (channel, response: ServerResponse, at) => this.streams.serve(channel, this.log(channel), response, at),
        admitSignature: (signature, timestamp) => this.admitSignature(signature, timestamp),
        refused: () => void (this.counters.refused += 1),
      });
      await this.app.listen({ host: listen.host, port: listen.port });
    } catch (error) {
      this.state = 'failed';
      this.detail = `cannot serve on ${listen.host}:${listen.port}: ${error instanceof Error ? error.message : String(error)}`;
      this.env.log.error({ host: listen.host, port: listen.port, ...failureFields(error) }, 'the HTTP API could not start; the rest of the bot goes on');
      return;
    }
    const url = urlOf(this.app, tls !== undefined);
    this.listening = url;
    this.port = Number(new URL(url).port);
    this.state = 'connected';
    this.detail = `listening on ${url}`;
    this.env.log.info({ url, channels: this.env.gateway.channels(), webhooks: this.webhooks.map((w) => w.id) }, 'HTTP API listening');
  }

  private async stop(): Promise<void> {
    if (this.state !== 'failed') this.state = 'stopped';
    this.streams.closeAll();
    await this.app?.close();
    await this.intake.stop();
    await Promise.all(this.webhooks.map((webhook) => webhook.stop()));
  }

  private admitSignature(signature: string, timestamp: number): { admission: 'new' | 'seen' | 'full'; retryAfterS: number } {
    const admission = this.seen.admit(signature, timestamp);
    if (admission === 'seen') this.counters.signatures_replayed += 1;
    if (admission === 'full') {
      this.counters.signatures_full += 1;
      // Logged at most once a minute: a flood would otherwise flood the log too.
      if (Date.now() - this.fullWarnedAt >= 60_000) {
        this.fullWarnedAt = Date.now();
        this.env.log.warn({ kept: this.seen.size, refused: this.counters.signatures_full }, 'signed requests are refused: too many signatures within the window to remember (a flood of signed requests?)');
      }
    }
    return { admission, retryAfterS: admission === 'full' ? this.seen.secondsUntilRoom() : 0 };
  }

  /** The channel's numbered log, opened on first use. */
  private log(channel: string): ChannelLog {
    let log = this.logs.get(channel);
    if (!log) this.logs.set(channel, (log = ChannelLog.open(join(this.env.dataDir, `stream-${fileNameOf(channel)}.json`), this.env.storage, this.options.stream_keep)));
    return log;
  }

  /**
   * A gateway line for a channel: queued for each webhook that wants it, then numbered in the channel's
   * log (both written before this returns). A line whose id the log still has was sent already (the
   * gateway sending again after a crash): it goes nowhere. The webhooks come first, so a crash between
   * the two can only send a line twice (with one Idempotency-Key), never skip a webhook.
   */
  private send(channel: string, message: OutgoingMessage): void {
    const line = payloadOf(channel, message, (file, name) => this.apiUrlOf(channel, file.id, name));
    const log = this.log(channel);
    if (log.has(line.id)) {
      this.counters.sent_again += 1;
      return;
    }
    for (const webhook of this.webhooks) if (webhook.wants(channel)) webhook.push(line);
    log.append(line);
    this.counters.sent += 1;
  }

  /** This API's download URL of a file sent to `channel` (when the media store has no public link). */
  private apiUrlOf(channel: string, id: string, name: string): string {
    const { listen, tls, public_url: publicUrl } = this.options;
    const base = publicUrl ?? this.listening ?? `${tls ? 'https' : 'http'}://${listen.host}:${listen.port}`;
    return `${base.replace(/\/+$/, '')}/gateways/${encodeURIComponent(channel)}/files/${encodeURIComponent(id)}/${encodeURIComponent(name)}`;
  }

  /** A file of a line still in the channel's log, opened from the media store. */
  private async file(channel: string, id: string, name: string): Promise<{ file: FilePayload; bytes: Readable } | 'unknown' | 'gone'> {
    const file = this.log(channel).file(id);
    // The name must be the file's, as on the media store's own listener: a URL is the file's whole.
    if (!file || file.name !== name) return 'unknown';
    try {
      const bytes = await this.env.media.open(id);
      this.counters.files_served += 1;
      return { file, bytes };
    } catch {
      return 'gone';
    }
  }

  private async post(client: ClientOptions, channel: string, body: PostBody, key: string | undefined, files: PostedFile[] = []): Promise<Answer> {
    const refuse = async (answer: Answer): Promise<Answer> => {
      // Not queued: its files go.
      await this.uploads.remove(files.map((file) => file.file));
      return answer;
    };
    if (this.env.stopping.aborted) {
      // The bot is stopping: it takes no more work (the client sends it again to the next run).
      return refuse({ status: 503, body: { error: 'the bot is stopping; try again' }, headers: { 'retry-after': String(FULL_RETRY_AFTER_S) } });
    }
    // The username was checked to be one line (server.ts); the template marks it as the API's.
    const username = body.username?.trim() || client.name;
    const name = safeName(this.options.speaker_name.replace(/\{(username|client)\}/g, (_all, token: string) => (token === 'username' ? username : client.name)), 200);
    const item: IntakeItem = {
      id: this.ids.next(), channel, client: client.name, kind: body.kind, text: stripControls(body.text), name, time: new Date().toISOString(),
      ...(body.reply_to !== undefined ? { reply_to: body.reply_to } : {}),
      ...(key !== undefined ? { idempotency_key: key } : {}),
      ...(files.length > 0 ? { files } : {}),
    };
    try {
      this.intake.push(item);
    } catch (error) {
      if (!(error instanceof QueueFullError)) throw error;
      this.env.log.warn({ channel, client: client.name }, 'a POST was refused: the channel\'s queue to the chat is full');
      return refuse({ status: 503, body: { error: 'the queue to the chat is full; try again later' }, headers: { 'retry-after': String(FULL_RETRY_AFTER_S) } });
    }
    const answer = { status: 202, body: { id: item.id, status: 'queued' } };
    this.rememberAgain(item);
    try {
      // With Redis (workers), the push is durable once this resolves.
      await this.env.storage.durable();
    } catch (error) {
      this.env.log.warn({ channel, ...failureFields(error) }, 'a POST was refused: this worker no longer holds the bot');
      return { status: 503, body: { error: 'not accepted here; try again' }, headers: { 'retry-after': String(FULL_RETRY_AFTER_S) } };
    }
    this.counters.accepted += 1;
    this.counters.files_received += files.length;
    return answer;
  }

  /** An item with an Idempotency-Key: its 202 is remembered (again, after a crash between the push and the first remembering). */
  private rememberAgain(item: IntakeItem): void {
    if (item.idempotency_key === undefined) return;
    try {
      this.idempotency.remember({ client: item.client, key: item.idempotency_key, at: Date.parse(item.time), status: 202, body: { id: item.id, status: 'queued' } });
    } catch (error) {
      this.env.log.warn({ client: item.client, ...failureFields(error) }, 'an Idempotency-Key could not be remembered: too many are kept');
    }
  }

  private status(): PluginStatus {
    const queues: Record<string, number> = { ...this.intake.sizes() };
    for (const webhook of this.webhooks) queues[`webhook_${webhook.id}`] = webhook.size;
    return { connection: { state: this.state, ...(this.detail ? { detail: this.detail } : {}) }, queues };
  }
}
