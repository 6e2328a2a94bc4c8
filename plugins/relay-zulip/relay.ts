import { join } from 'node:path';
import {
  attributedLines, Backoff, DurableQueue, failureFields, oneLineName, receiveUntilTaken, RecentIds, sleep,
  type IncomingMessage, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus,
} from '../../src/index.js';
import { isRefusal, ZulipClient, ZulipError } from './client.js';
import { DEFAULT_MAX_MIB, incomingFile, uploadLinks } from './files.js';
import { StreamIntake, type IntakeHandler, type ZulipMessage } from './intake.js';
import { parseSide, type RelayZulipOptions } from './options.js';
import { ZulipOutbound, type OutboundItem } from './outbound.js';
import { plainFromZulip } from './render.js';
import { itemOf } from './line-item.js';
import { TopicLookup, TopicMemory } from './topics.js';

type ConnectionState = 'connecting' | 'connected' | 'stopped' | 'failed';
const RETRY_MS = 2_000;
/** How long a stop waits for Zulip to delete an event queue. */
const QUEUE_DELETE_MS = 2_000;

interface Me {
  user_id: number;
  full_name: string;
}

/**
 * The Zulip relay, a gateway endpoint, on a thin client of Zulip's REST API (client.ts). Start: check
 * the bot's key (GET /users/me), resolve each stream's id, then send (outbound.ts) and read each stream
 * through an event queue of its own (intake.ts). A `stream/topic` side is that topic; a `stream` side is
 * the whole stream, its topics the gateway's threads (a message in a topic answers the topic's first
 * message). A refused key stops the relay only: the rest of the bot goes on.
 */
export class ZulipRelay {
  private readonly client: ZulipClient;
  private readonly outbound: ZulipOutbound;
  private readonly stopper = new AbortController();
  private readonly counters = {
    posted: 0, edited: 0, deleted: 0, dropped: 0, retries: 0, rate_limited: 0, found_after_retry: 0,
    received: 0, caught_up: 0, receive_retries: 0, registers: 0, queues_lost: 0, polls: 0,
  };
  private state: ConnectionState = 'connecting';
  private detail: string | undefined;
  private selfId = 0;
  /** Stream name (lower case) → its intake. */
  private readonly intakes = new Map<string, StreamIntake>();
  /** The relay's sends as their queue's echoes named them (local_id → message). */
  private readonly echoes = new Map<string, ZulipMessage>();
  private readonly lastPosted = new Map<string, number>();
  private readonly topics = new TopicMemory(10_000);
  private readonly topicLookup: TopicLookup;
  /** Ids of the relay's own messages lately: their deletion by a moderator is not news to the gateway. */
  private readonly ownMessages = new RecentIds(10_000);
  /** What the server said in register (`max_file_upload_size_mib`), until then Zulip's default. */
  private serverMaxMib = DEFAULT_MAX_MIB;
  private running: Promise<void> | undefined;

  constructor(
    private readonly options: RelayZulipOptions,
    private readonly env: PluginEnv,
  ) {
    this.client = new ZulipClient(options.server_url, options.email, options.api_key, options.request_timeout_ms, this.stopper.signal);
    this.topicLookup = new TopicLookup(this.topics, () => this.client, env.log, this.stopper.signal);
    this.outbound = new ZulipOutbound(
      DurableQueue.open<OutboundItem>(join(env.dataDir, 'to-zulip.json'), {
        storage: env.storage,
        maxItems: options.queue_max,
        onHighWater: (size, max) => env.log.warn({ size, max }, 'the queue to Zulip is filling up'),
      }),
      {
        client: () => this.client, self: () => this.selfId, log: env.log, counters: this.counters, durable: () => env.storage.durable(),
        streamIdOf: (stream) => this.intakes.get(stream.toLowerCase())?.streamId,
        queueOf: (stream) => this.intakes.get(stream.toLowerCase())?.queueId,
        echoed: (localId) => this.echoes.get(localId),
        newest: (stream) => Math.max(this.lastPosted.get(stream.toLowerCase()) ?? 0, this.intakes.get(stream.toLowerCase())?.mark ?? 0),
        topicOf: (messageId, signal) => this.topicLookup.topicOf(messageId, signal),
        defaultTopic: options.topic,
        posted: (item, message) => {
          this.ownMessages.add(String(message.id));
          this.topics.set(String(message.id), message.topic);
          const stream = message.stream.toLowerCase();
          this.lastPosted.set(stream, Math.max(this.lastPosted.get(stream) ?? 0, message.id));
          this.env.gateway.posted(item.key, item.channel, String(message.id));
        },
        nativeOf: (key, channel) => env.gateway.nativeOf(key, channel),
        fatal: (error) => this.fail(error),
        media: env.media,
        uploadLimit: () => options.max_upload_bytes ?? this.serverMaxMib * 1024 * 1024,
      },
    );
  }

  instance(): PluginInstance {
    return {
      start: () => {
        this.running ??= this.run().catch((error: unknown) => this.fail(error));
      },
      stop: () => this.stop(),
      endpoint: { send: (channel, message) => this.send(channel, message) },
      stats: () => ({ ...this.counters, queued: this.outbound.size }),
      status: () => this.status(),
    };
  }

  /** Checks the key, resolves the streams, then sends and reads until stopped; a server that does not answer is tried again. */
  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    const backoff = new Backoff(500, 30_000);
    let me: Me | undefined;
    while (!me && !signal.aborted) {
      try {
        me = await this.client.get<Me>('/users/me');
      } catch (error) {
        if (isRefusal(error)) return this.fail(error);
        if (signal.aborted) return;
        this.trouble(`cannot reach the server: ${(error as Error).message}`);
        this.env.log.warn({ ...failureFields(error) }, 'could not reach Zulip; trying again');
        await sleep(backoff.next(), signal);
      }
    }
    if (!me || signal.aborted) return;
    this.selfId = me.user_id;
    const streams = new Map<string, string>();
    for (const side of this.env.gateway.channels()) {
      const { stream } = parseSide(side);
      streams.set(stream.toLowerCase(), stream);
    }
    for (const name of streams.values()) {
      const id = await this.resolve(name, backoff);
      if (id !== undefined) this.intakes.set(name.toLowerCase(), this.intakeOf({ id, name }));
    }
    if (signal.aborted || this.state === 'failed') return;
    this.env.log.info({ bot: me.full_name, streams: this.intakes.size }, 'Zulip bot key accepted; streams resolved');
    this.outbound.start();
    await Promise.all([...this.intakes.values()].map((intake) => intake.run()));
  }

  /** A stream's id by its name (undefined when there is no such stream, or the bot cannot see it). */
  private async resolve(name: string, backoff: Backoff): Promise<number | undefined> {
    while (!this.stopper.signal.aborted) {
      try {
        return (await this.client.get<{ stream_id: number }>('/get_stream_id', { stream: name })).stream_id;
      } catch (error) {
        if (isRefusal(error)) {
          this.fail(error);
          return undefined;
        }
        if (error instanceof ZulipError && error.status === 400) {
          this.env.log.error({ stream: name, reason: error.message }, 'the Zulip stream does not exist or the bot cannot see it: nothing is relayed to or from it');
          return undefined;
        }
        this.env.log.warn({ stream: name, ...failureFields(error) }, 'could not look the Zulip stream up; trying again');
        await sleep(backoff.next(), this.stopper.signal);
      }
    }
    return undefined;
  }

  private intakeOf(stream: { id: number; name: string }): StreamIntake {
    const handler: IntakeHandler = {
      message: (message, caughtUp) => this.incoming(stream.name, message, caughtUp),
      echo: (localId, message) => {
        if (localId === undefined) return;
        this.echoes.set(localId, message);
        if (this.echoes.size > 1_000) this.echoes.delete(this.echoes.keys().next().value!);
      },
      edit: (messageId, content) => this.changed(stream.name, messageId, 'edit', content),
      delete: (messageId) => this.changed(stream.name, messageId, 'delete'),
    };
    return new StreamIntake({
      client: () => this.client, store: this.env.store, log: this.env.log, counters: this.counters, stream, self: () => this.selfId, handler,
      stopping: this.stopper.signal, connected: () => this.connected(), trouble: (detail) => this.trouble(detail), refused: (error) => this.fail(error),
      uploadLimitMib: (mib) => {
        this.serverMaxMib = mib;
      },
    });
  }

  /** The gateway's sides a message of this stream and topic belongs to: its `stream/topic` side, and the whole stream's. */
  private sidesOf(stream: string, topic: string | undefined): string[] {
    return this.env.gateway.channels().filter((side) => {
      const parsed = parseSide(side);
      if (parsed.stream.toLowerCase() !== stream.toLowerCase()) return false;
      return parsed.topic === undefined || (topic !== undefined && parsed.topic.toLowerCase() === topic.toLowerCase());
    });
  }

  /** A message of someone else: to each side it belongs to; on a whole-stream side, a message of another topic than the default answers its topic's first. */
  private async incoming(stream: string, message: ZulipMessage, caughtUp: boolean): Promise<void> {
    this.topics.set(String(message.id), message.subject);
    // Uploads it links to are its files (read through the bot's key); the rest is its text.
    const { text: said, links } = uploadLinks(message.content, this.options.server_url);
    const { text, action } = plainFromZulip(said);
    if (text === '' && links.length === 0) return;
    const files = links.map((link) => incomingFile(this.client, link));
    const speaker = { platform: 'zulip', id: String(message.sender_id), name: message.sender_full_name };
    const sides = this.sidesOf(stream, message.subject);
    for (const side of sides) {
      const whole = parseSide(side).topic === undefined;
      const root = whole && message.subject.toLowerCase() !== this.options.topic.toLowerCase() ? await this.topicLookup.rootOf(stream, message) : undefined;
      const line: IncomingMessage = {
        kind: action ? 'action' : 'message', text, nativeId: String(message.id), time: new Date(message.timestamp * 1000).toISOString(), speaker,
        ...(root !== undefined && root !== message.id ? { replyTo: String(root) } : {}),
        ...(action || text === '' ? {} : { chatText: this.render(speaker.name, text) }),
        ...(files.length > 0 ? { files } : {}),
      };
      await this.receive(side, line);
    }
    if (sides.length > 0) this.counters.received += 1;
  }

  /** An edit or deletion of someone else's message: handed on as such (the gateway maps it to what it relayed). */
  private async changed(stream: string, messageId: number, kind: 'edit' | 'delete', content?: string): Promise<void> {
    if (this.ownMessages.has(String(messageId))) return;
    if (kind === 'delete') {
      for (const side of this.sidesOf(stream, this.topics.get(String(messageId)))) {
        await this.receive(side, { kind: 'delete', text: '', nativeId: String(messageId), speaker: { platform: 'zulip', id: '', name: '' } });
      }
      return;
    }
    // The event names the editor, not the writer: the message says who wrote it and in which topic it stands now.
    let message: ZulipMessage;
    try {
      message = (await this.client.get<{ message: ZulipMessage }>(`/messages/${messageId}`, { apply_markdown: false })).message;
    } catch (error) {
      if (this.stopper.signal.aborted) throw error;
      this.env.log.warn({ stream, message: messageId, ...failureFields(error) }, 'could not read an edited Zulip message; its edit is not relayed');
      return;
    }
    if (message.sender_id === this.selfId) return;
    this.topics.set(String(messageId), message.subject);
    const { text } = plainFromZulip(uploadLinks(content ?? message.content, this.options.server_url).text);
    if (text === '') return;
    const speaker = { platform: 'zulip', id: String(message.sender_id), name: message.sender_full_name };
    for (const side of this.sidesOf(stream, message.subject)) {
      await this.receive(side, { kind: 'edit', text, nativeId: String(messageId), revision: String(Date.now()), speaker, chatText: this.render(speaker.name, text) });
    }
  }

  /** Every line of the text carries the speaker (attributedLines); the name is one line, its bidi closed. */
  private render(name: string, text: string): string {
    const shown = oneLineName(name);
    return attributedLines(text, (line) => this.options.incoming.replaceAll('{name}', () => shown).replace('{text}', () => line));
  }

  private async receive(side: string, line: IncomingMessage): Promise<void> {
    await receiveUntilTaken(this.env.gateway, side, line, {
      stopping: this.stopper.signal, retryMs: RETRY_MS, onRetry: () => (this.counters.receive_retries += 1),
    });
  }

  /** A gateway line for one of the relay's sides: rendered and queued durably, never waiting on Zulip. */
  private send(channel: string, message: OutgoingMessage): void {
    if (this.state === 'failed') return;
    const item = itemOf(channel, message, this.options.format);
    if (item) this.outbound.push(item);
  }

  private connected(): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    if (this.state !== 'connected') this.env.log.info({ streams: this.intakes.size }, 'Zulip connected');
    this.state = 'connected';
    this.detail = undefined;
  }

  private trouble(detail: string): void {
    if (this.state === 'failed' || this.state === 'stopped') return;
    this.state = 'connecting';
    this.detail = detail;
  }

  private fail(error: unknown): void {
    if (this.state === 'failed') return;
    this.state = 'failed';
    this.detail = isRefusal(error) ? `Zulip refused the bot's email and API key (${error.message}): check them under Personal settings → Bots`
      : error instanceof Error ? error.message : String(error);
    this.env.log.error({ ...failureFields(error) }, 'Zulip relay stopped: the bot\'s key was refused; the rest of the bot goes on');
    this.stopper.abort();
    // Every call now ends at once (the stop aborts it): the queue waits, kept, for a key that works.
    void this.outbound.stop();
  }

  private async stop(): Promise<void> {
    this.stopper.abort();
    if (this.state !== 'failed') this.state = 'stopped';
    await this.outbound.stop();
    await this.running;
    if (this.state !== 'failed') await this.deleteQueues();
  }

  /**
   * A clean stop deletes the streams' event queues (DELETE /events): Zulip would otherwise keep each one,
   * fed every message of its stream, until it expires about 10 minutes later. Nothing relies on them
   * after a stop: the next start registers anew and reads what was said meanwhile from the history, and
   * an attempt's retry asks the history when the echoes it knew are gone. After a kill -9 the queues
   * expire on Zulip's side. Bounded (a stop takes seconds): a queue not deleted in time is left to expire.
   */
  private async deleteQueues(): Promise<void> {
    await Promise.all([...this.intakes.values()].map(async (intake) => {
      const queueId = intake.queueId;
      if (queueId === undefined) return;
      intake.queueId = undefined;
      try {
        await this.client.call('DELETE', '/events', { queue_id: queueId }, { atStop: { timeoutMs: Math.min(QUEUE_DELETE_MS, this.options.request_timeout_ms) } });
      } catch (error) {
        this.env.log.info({ stream: intake.streamName, ...failureFields(error) }, 'could not delete the Zulip event queue at stop; Zulip drops it in about 10 minutes');
      }
    }));
  }

  private status(): PluginStatus {
    return {
      connection: { state: this.state, ...(this.detail ? { detail: this.detail } : {}) },
      queues: { to_zulip: this.outbound.size },
      backlogs: { to_zulip: { ...this.outbound.backlog, limit: 'Zulip\'s rate limits (429 RATE_LIMIT_HIT, retry-after)' } },
    };
  }
}
