import { join } from 'node:path';
import { WebClient } from '@slack/web-api';
import { DurableQueue, failureFields, MsgNumMarks, QueueFullError, type ChatReset, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus } from '../../src/index.js';
import { SlackCatchUp, type HistoryMessage } from './catch-up.js';
import { ChannelIds } from './channel-ids.js';
import { ChannelMap, channelKey } from './channels.js';
import { counters } from './counters.js';
import { SlackDirectory } from './directory.js';
import { classify, describe, failureReason, type SlackFailure } from './errors.js';
import { slackFilesOrigin, slackIncomingFile } from './files-in.js';
import { admit, type InboundItem, type SlackSelf } from './intake.js';
import { Inbound } from './inbound.js';
import type { RelaySlackOptions } from './options.js';
import { Outbound, type OutboundItem } from './outbound.js';
import { planFor } from './outgoing.js';
import { PostAttempts, type PostAttempt } from './post-attempts.js';
import { PostLookup } from './post-lookup.js';
import { SeenEvents } from './seen.js';
import { SlackUploads } from './upload.js';
import { slackLogger } from './slack-logger.js';
import { SocketModeLink, type Envelope } from './socket.js';
import { backoff, sleep } from './timing.js';

/**
 * The Slack relay, a gateway endpoint: wires the two directions to the plugin API and owns the lifecycle.
 * - start(): returns at once; in the background auth.test (who the relay is), then the outbound
 *   worker, the Socket Mode link and the inbound worker.
 * - endpoint.send(): the core hands a gateway line for one of the relay's channels; it is queued for
 *   Slack (durably) and send returns; it never waits on Slack.
 * - Slack events go through the inbound queue to env.gateway.receive().
 * - A refused token (either one) stops the relay only: logged once as an error, the rest of the bot
 *   goes on, send() then only counts what it passes by (`skipped`).
 */
export class SlackRelay {
  private readonly counters = counters();
  private readonly web: WebClient;
  /** The channels of the relay's gateways: known at boot (env.gateway.channels()). */
  private channels = new ChannelMap([]);
  private readonly directory: SlackDirectory;
  private readonly outbound: Outbound;
  private readonly inbound: Inbound;
  private readonly socket: SocketModeLink;
  private readonly seen: SeenEvents;
  private readonly marks: MsgNumMarks;
  private readonly self: SlackSelf = {};
  private readonly catchUp: SlackCatchUp;
  private readonly stopper = new AbortController();
  private failure: SlackFailure | undefined;
  private booting: Promise<void> | undefined;

  constructor(
    private readonly options: RelaySlackOptions,
    private readonly env: PluginEnv,
  ) {
    const log = env.log;
    this.web = new WebClient(options.token, {
      slackApiUrl: options.api_url,
      logger: slackLogger(log),
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: options.request_timeout_ms,
    });
    const ids = new ChannelIds(env.store);
    this.directory = new SlackDirectory(this.web, log, ids);
    this.seen = SeenEvents.open(join(env.dataDir, 'seen-events.json'), env.store, env.storage);
    this.marks = MsgNumMarks.open(join(env.dataDir, 'queued-marks.json'), env.storage);
    const onFatal = (failure: SlackFailure) => this.fail(failure);
    this.outbound = new Outbound({
      queue: DurableQueue.open<OutboundItem>(join(env.dataDir, 'to-slack.json'), {
        storage: env.storage,
        keyOf: (item) => Outbound.keyOf(item.key, item.epoch),
        maxItems: options.queue_max,
        onHighWater: (size, max) => log.warn({ size, max }, 'the queue to Slack is filling up'),
      }),
      web: this.web, ids, unfurl: options.unfurl, log, counters: this.counters, onFatal, durable: () => env.storage.durable(),
      attempts: new PostAttempts(DurableQueue.open<PostAttempt>(join(env.dataDir, 'post-attempts.json'), { storage: env.storage })),
      lookup: new PostLookup(this.web, ids, log, this.counters),
      uploads: new SlackUploads(this.web, env.media),
      onChannelId: (name, id) => this.directory.learnChannel(id, name),
      onPosted: (item, ts) => this.posted(item, ts),
      nativeOf: (key, channel) => env.gateway.nativeOf(key, channel),
    });
    const filesOrigin = slackFilesOrigin(options.api_url);
    this.inbound = new Inbound({
      file: (file) => slackIncomingFile(file, options.token, filesOrigin),
      queue: DurableQueue.open<InboundItem>(join(env.dataDir, 'from-slack.json'), { maxItems: options.queue_max, storage: env.storage }),
      channels: () => this.channels, directory: this.directory, gateway: env.gateway, template: options.display.incoming, log, counters: this.counters, onFatal,
    });
    this.catchUp = new SlackCatchUp({
      web: this.web, store: env.store, log, settings: options.catch_up, counters: this.counters, signal: this.stopper.signal,
      channels: () => [...new Set(this.env.gateway.channels().flatMap((ref) => ids.idOf(ref) ?? []))],
      take: (channel, message) => this.caughtUp(channel, message),
      takeHeld: (envelope) => this.admit(envelope),
    });
    this.socket = new SocketModeLink({
      appToken: options.app_token, apiUrl: options.api_url, timeoutMs: options.request_timeout_ms, log,
      onEnvelope: (envelope) => this.take(envelope),
      onFatal: (failure) => this.fail(failure, 'app_token'),
      onReconnect: (downMs) => {
        this.counters.reconnects += 1;
        this.catchUp.reconnected(downMs);
      },
      onRateLimited: () => { this.counters.rate_limited += 1; },
    });
  }

  instance(): PluginInstance {
    return {
      start: () => {
        this.booting = this.boot().catch((error: unknown) => {
          this.env.log.error({ err: error }, 'relay-slack could not start');
        });
      },
      endpoint: { send: (channel, out) => this.send(channel, out) },
      // The chat's msg_nums start again: the marks of its old history must not hide the new messages.
      chatReset: (reset) => this.chatReset(reset),
      stop: () => this.stop(),
      stats: () => this.stats(),
      status: () => this.status(),
    };
  }

  /** The Socket Mode connection (Slack → chat) and the queues both ways, for the operations endpoint. */
  status(): PluginStatus {
    const state = this.failure ? 'failed' : this.socket.state === 'open' ? 'connected' : this.socket.state === 'idle' ? 'connecting' : this.socket.state;
    return {
      connection: { state, detail: this.failure ? describe(this.failure) : 'Socket Mode' },
      queues: { to_slack: this.outbound.size, from_slack: this.inbound.size },
      backlogs: { to_slack: { ...this.outbound.backlog, limit: 'Slack\'s rate limits (Retry-After)' } },
    };
  }

  stats(): Record<string, number> {
    return { ...this.counters, queued: this.outbound.size, disabled: this.failure ? 1 : 0 };
  }

  /**
   * Gateway → Slack: queue the line for the channel, once. The core hands a chat message's line again
   * after a crash: the last msg_num queued per channel and chat (`queued-marks.json`) and the queue's
   * own keys say it is there already. A line from another relay (no chat message) is known by its key.
   */
  private send(channel: string, out: OutgoingMessage): void {
    const log = this.env.log;
    if (this.failure) {
      this.counters.skipped += 1;
      return;
    }
    const { chat, message } = out.source;
    try {
      const plan = planFor(channel, out, this.options.display, Date.now(), this.options.max_file_size);
      if ('dropped' in plan) {
        this.counters.dropped += 1;
        log.debug({ channel, key: out.key, kind: out.kind, reason: plan.dropped }, 'a gateway line is not sent to Slack');
        return;
      }
      const item = plan.item;
      if (!chat || !message) {
        // A line from another relay of the bot, handed on at the gateway's intake: no chat message to
        // mark. The intake hands a line on once (only while the map does not know it yet); should the
        // bot die between the two, the same key finds it queued here, or Slack's history has it (its key
        // is in the post's metadata: post-lookup.ts) once a try was marked.
        if (!this.outbound.holds(item.key)) this.outbound.push(item);
        return;
      }
      const marked = markChat(channel, chat.id);
      // An item queued before a reset of the chat's history (an older epoch) is another message with the same msg_num.
      const epoch = this.marks.epoch(marked);
      if (this.marks.has(marked, message.msg_num) || this.outbound.holds(item.key, epoch)) return;
      item.mark = `${marked}:${message.msg_num}`;
      if (epoch > 0) item.epoch = epoch;
      this.outbound.push(item);
      this.marks.mark(marked, message.msg_num);
    } catch (error) {
      this.counters.failed += 1;
      const full = error instanceof QueueFullError;
      log.error(
        { ...failureFields(error, QueueFullError), chat: chat?.subject, channel, msgNum: message?.msg_num, key: out.key, queued: this.outbound.size },
        full ? 'the queue to Slack is full; this line is not relayed' : 'a line could not be queued for Slack; it is not relayed',
      );
    }
  }

  /**
   * Slack took an item. Marked again: a crash between queueing an item and marking it must not let the
   * message, handed on again after the restart, be queued a second time once this copy is gone. A new
   * post's ts goes to the core's message map (threads, edits and deletions find it there).
   */
  private posted(item: OutboundItem, ts: string | undefined): void {
    if (item.mark) this.marks.markKey(item.mark, item.epoch ?? 0);
    if (ts && item.line) this.env.gateway.posted(item.line, item.channel, ts);
  }

  /** The chat's msg_nums start again: the marks of its old history, in every channel, must not hide the new messages. */
  private chatReset(reset: ChatReset): void {
    const channels = new Set([...this.env.gateway.channels(), ...Object.values(this.options.channels)].map(channelKey));
    for (const channel of channels) this.marks.reset(markChat(channel, reset.chat.id));
  }

  /**
   * Slack → gateways: every envelope is acknowledged once, after what it carries was queued durably.
   * Never throws (the SDK calls this from a promise nobody handles): anything unexpected is logged and
   * the envelope left unacknowledged, for Slack to send again.
   */
  private take(envelope: Envelope): void {
    try {
      if (!this.catchUp.hold(envelope) && !this.admit(envelope)) return;
    } catch (error) {
      this.counters.failed += 1;
      this.env.log.error({ err: error, envelope: envelope.envelope_id }, 'a Slack envelope could not be handled; it is not acknowledged');
      return;
    }
    if (envelope.envelope_id) {
      envelope.ack().catch((error: unknown) => this.env.log.debug({ err: error }, 'an acknowledgement could not be sent (Slack retries the event)'));
    }
  }

  /** Queues what is to be relayed; false when the envelope must not be acknowledged (it could not be queued). */
  private admit(envelope: Envelope): boolean {
    const admission = admit(envelope, this.self, this.channels);
    if ('ignored' in admission) {
      this.counters.ignored += 1;
      this.env.log.debug({ reason: admission.ignored, envelope: envelope.envelope_id }, 'Slack event not relayed');
    } else if (this.seen.has(...admission.keys)) {
      this.counters.ignored += 1;
      this.env.log.debug({ keys: admission.keys, retry: envelope.retry_num }, 'Slack event already taken (a retry or a duplicate)');
    } else if (!this.failure) {
      try {
        this.inbound.push(admission.item);
      } catch (error) {
        this.counters.failed += 1;
        this.env.log.error({ ...failureFields(error, QueueFullError), channel: admission.item.channel, ts: admission.item.ts }, 'a Slack message could not be queued; it is not acknowledged (Slack will retry)');
        return false;
      }
      this.seen.add(...admission.keys);
      const item = admission.item;
      if (item.kind === 'message' || item.kind === 'action') this.catchUp.taken(item.channel, item.ts, item.thread_ts);
    }
    return true;
  }

  /** A message read from a channel's history: the intake of a live event, without an event id (its channel+ts is the dedupe key). */
  private caughtUp(channel: string, message: HistoryMessage): void {
    const envelope: Envelope = { type: 'events_api', body: { event: { ...message, type: 'message', channel } }, ack: () => Promise.resolve() };
    if (!this.admit(envelope)) throw new Error('a message read from Slack\'s history could not be queued');
  }

  private async boot(): Promise<void> {
    const log = this.env.log;
    const signal = this.stopper.signal;
    for (let attempt = 0; !signal.aborted; attempt += 1) {
      try {
        const who = await this.web.auth.test();
        this.self.userId = who.user_id;
        this.self.botId = who.bot_id;
        log.info({ team: who.team, user: who.user }, 'relay-slack connected to Slack');
        break;
      } catch (error) {
        const failure = classify(error);
        if (failure.kind === 'fatal') return this.fail(failure);
        // request_error alone does not say whether Slack is unreachable, unknown or untrusted: the network error does.
        log.warn({ code: failure.code, reason: failureReason(error) }, 'Slack auth.test failed; trying again');
        await sleep(failure.kind === 'rate_limited' ? failure.retryAfterMs : backoff(attempt, 1_000, 60_000), signal);
      }
    }
    if (signal.aborted || this.failure) return;
    this.channels = new ChannelMap(this.env.gateway.channels());
    if (this.channels.size === 0) log.warn('relay-slack is in no gateway: no channels: in its options, and bots.yaml\'s gateways: name none of its channels');
    else log.info({ channels: this.env.gateway.channels() }, 'relay-slack channels');
    this.outbound.start();
    this.inbound.start();
    // Channels being read hold their live messages back from here on: the socket may open first.
    void this.catchUp.start();
    this.socket.start();
    void this.checkChannels();
  }

  /** Warns early about mapped channels the app cannot see or is not in (non-fatal; posts would fail). */
  private async checkChannels(): Promise<void> {
    for (const id of this.channels.ids()) {
      try {
        const answer = await this.web.conversations.info({ channel: id });
        if (answer.channel?.name) this.directory.learnChannel(id, answer.channel.name);
        if (answer.channel && answer.channel.is_member === false) {
          this.env.log.warn({ channel: id, name: answer.channel.name }, 'the app is not in this Slack channel: invite it (/invite @app)');
        }
      } catch (error) {
        const failure = classify(error);
        if (failure.kind === 'fatal' && failure.code !== 'missing_scope') return this.fail(failure);
        this.env.log.warn({ channel: id, code: failure.code, reason: failureReason(error) }, 'a mapped Slack channel could not be checked');
      }
    }
  }

  /** A refused token: log once, stop this plugin's parts; the supervisor and the rest of the chain go on. */
  private fail(failure: SlackFailure, which: 'token' | 'app_token' = 'token'): void {
    if (this.failure) return;
    this.failure = failure;
    const option = which === 'token' ? 'token (the bot token, xoxb-)' : 'app_token (the app-level token, xapp-, with connections:write)';
    this.env.log.error(
      { code: failure.code, queued: this.outbound.size },
      `relay-slack stopped: ${describe(failure)}; check ${option}. Queued messages are kept for the next start; the bot's other plugins go on`,
    );
    void this.halt();
  }

  private async halt(): Promise<void> {
    this.stopper.abort();
    await Promise.all([this.socket.stop(), this.outbound.stop(), this.inbound.stop()]);
  }

  private async stop(): Promise<void> {
    this.stopper.abort();
    await this.booting;
    await this.halt();
  }
}

/** The MsgNumMarks "chat" of a channel and chat: marks are kept per pair (one chat may go to two channels). */
function markChat(channel: string, chatId: string): string {
  return `${channelKey(channel)} ${chatId}`;
}
