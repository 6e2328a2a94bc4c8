import { join } from 'node:path';
import { WebClient } from '@slack/web-api';
import { DurableQueue, failureFields, MsgNumMarks, QueueFullError, type PluginContext, type PluginEnv, type PluginInstance } from '../../src/index.js';
import { ChannelMap } from './channels.js';
import { counters } from './counters.js';
import { SlackDirectory } from './directory.js';
import { classify, describe, failureReason, type SlackFailure } from './errors.js';
import { admit, type InboundItem, type SlackSelf } from './intake.js';
import { Inbound } from './inbound.js';
import type { RelaySlackOptions } from './options.js';
import { Outbound, type OutboundItem } from './outbound.js';
import { renderForSlack } from './render.js';
import { SeenEvents } from './seen.js';
import { slackLogger } from './slack-logger.js';
import { SocketModeLink, type Envelope } from './socket.js';
import { backoff, sleep } from './timing.js';

/**
 * The Slack relay: wires the two directions to the plugin API and owns the lifecycle.
 * - start(): returns at once; in the background auth.test (who the relay is), then the outbound
 *   worker, the Socket Mode link and the inbound worker.
 * - handle(): queues a mapped chat's message for Slack (durably) and returns; never waits on Slack.
 * - A refused token (either one) stops the relay only: logged once as an error, the rest of the bot
 *   goes on, handle() then only counts what it passes by (`skipped`).
 */
export class SlackRelay {
  private readonly counters = counters();
  private readonly web: WebClient;
  private readonly channels: ChannelMap;
  private readonly directory: SlackDirectory;
  private readonly outbound: Outbound;
  private readonly inbound: Inbound;
  private readonly socket: SocketModeLink;
  private readonly seen: SeenEvents;
  private readonly marks: MsgNumMarks;
  private readonly self: SlackSelf = {};
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
    this.channels = new ChannelMap(options.channels);
    this.directory = new SlackDirectory(this.web, log);
    this.seen = new SeenEvents(env.store);
    this.marks = MsgNumMarks.open(join(env.dataDir, 'queued-marks.json'));
    const onFatal = (failure: SlackFailure) => this.fail(failure);
    this.outbound = new Outbound({
      queue: DurableQueue.open<OutboundItem>(join(env.dataDir, 'to-slack.json'), {
        maxItems: options.queue_max,
        onHighWater: (size, max) => log.warn({ size, max }, 'the queue to Slack is filling up'),
      }),
      web: this.web, unfurl: options.unfurl, log, counters: this.counters, onFatal,
      onChannelId: (name, id) => this.directory.learnChannel(id, name),
      // Marked again once posted: a crash between queueing an item and marking it must not let the
      // message, handed on again after the restart, be queued a second time once this copy is gone.
      onPosted: (item) => this.marks.markKey(item.key, item.epoch ?? 0),
    });
    this.inbound = new Inbound({
      queue: DurableQueue.open<InboundItem>(join(env.dataDir, 'from-slack.json'), { maxItems: options.queue_max }),
      channels: this.channels, directory: this.directory, env, template: options.display.incoming, log, counters: this.counters, onFatal,
    });
    this.socket = new SocketModeLink({
      appToken: options.app_token, apiUrl: options.api_url, timeoutMs: options.request_timeout_ms, log,
      onEnvelope: (envelope) => this.take(envelope),
      onFatal: (failure) => this.fail(failure, 'app_token'),
      onReconnect: () => { this.counters.reconnects += 1; },
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
      handle: async (ctx, next) => {
        try {
          this.relay(ctx);
        } catch (error) {
          this.counters.failed += 1;
          ctx.log.error({ ...failureFields(error, QueueFullError), msgNum: ctx.message.msg_num }, 'a message could not be queued for Slack; it is not relayed');
        }
        await next();
      },
      // The chat's msg_nums start again: the marks of its old history must not hide the new messages.
      chatReset: (reset) => this.marks.reset(reset.chat.id),
      stop: () => this.stop(),
      stats: () => this.stats(),
    };
  }

  stats(): Record<string, number> {
    return { ...this.counters, queued: this.outbound.size, disabled: this.failure ? 1 : 0 };
  }

  /** Chat → Slack: queue a mapped chat's ordinary message, once (a message handed on again after a crash is known). */
  private relay(ctx: PluginContext): void {
    const { message, chat } = ctx;
    const channel = this.channels.slackChannelFor(chat);
    if (!channel || message.type !== 'chat_msg_type_normal') return;
    if (this.failure) {
      this.counters.skipped += 1;
      return;
    }
    const key = `${chat.id}:${message.msg_num}`;
    // An item queued before a reset of the chat's history (an older epoch) is another message with the same key.
    const epoch = this.marks.epoch(chat.id);
    if (this.marks.has(chat.id, message.msg_num) || this.outbound.holds(key, epoch)) return;
    const item: OutboundItem = { key, chat: chat.subject, channel, queuedAt: Date.now(), ...renderForSlack(message, chat, this.options.display) };
    if (epoch > 0) item.epoch = epoch;
    try {
      this.outbound.push(item);
    } catch (error) {
      if (!(error instanceof QueueFullError)) throw error;
      this.counters.failed += 1;
      ctx.log.error({ chat: chat.subject, msgNum: message.msg_num, queued: this.outbound.size }, 'the queue to Slack is full; this message is not relayed');
      return;
    }
    this.marks.mark(chat.id, message.msg_num);
  }

  /**
   * Slack → chat: every envelope is acknowledged once, after a message to relay was queued durably.
   * Never throws (the SDK calls this from a promise nobody handles): anything unexpected is logged and
   * the envelope left unacknowledged, for Slack to send again.
   */
  private take(envelope: Envelope): void {
    try {
      if (!this.admit(envelope)) return;
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
    }
    return true;
  }

  private async boot(): Promise<void> {
    const log = this.env.log;
    const signal = this.stopper.signal;
    for (let attempt = 0; !signal.aborted; attempt += 1) {
      try {
        const who = await this.web.auth.test();
        this.self.userId = who.user_id;
        this.self.botId = who.bot_id;
        log.info({ team: who.team, user: who.user, channels: Object.keys(this.options.channels).length }, 'relay-slack connected to Slack');
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
    this.outbound.start();
    this.inbound.start();
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
