import type { Logger } from 'pino';
import { attributedLines, closeBidi, failureFields, PostFailedError, type DurableQueue, type GatewayPort, type IncomingFile, type IncomingMessage } from '../../src/index.js';
import type { ChannelMap } from './channels.js';
import type { Counters } from './counters.js';
import { LookupError, type SlackDirectory } from './directory.js';
import type { SlackFailure } from './errors.js';
import type { SlackFile } from './files-in.js';
import type { InboundItem } from './intake.js';
import { slackToPlain } from './markup.js';
import { chatName, renderForChat } from './render.js';
import { QueueWorker } from './queue-worker.js';
import { backoff, sleep } from './timing.js';

export interface InboundOptions {
  queue: DurableQueue<InboundItem>;
  /** The channels of the relay's gateways (known once the relay started). */
  channels(): ChannelMap;
  directory: SlackDirectory;
  gateway: GatewayPort;
  /** The `incoming` template. */
  template: string;
  /** A file said in Slack as the gateway reads it (through Slack's file API with the bot token). */
  file(file: SlackFile): IncomingFile;
  log: Logger;
  counters: Counters;
  onFatal(failure: SlackFailure): void;
}

/** After this many failed tries of one item, names that cannot be looked up are shown as ids. */
const LENIENT_AFTER = 3;
/** An item the gateways would not take this often is given up (loudly). */
const MAX_TRIES = 10;

/**
 * Slack → gateways: takes the durable queue's items oldest first, turns Slack markup into text (names
 * looked up and cached) and hands each to the gateways of its channel (env.gateway.receive), which
 * post it into their chats durably. A rejection (a chat would not take it now: closed, not joined yet)
 * is tried again with backoff; the core does not post twice what a chat already took, so trying the
 * whole item again is safe. The item stays queued across a restart until the gateways took it.
 */
export class Inbound extends QueueWorker<InboundItem> {
  private attempt = 0;

  constructor(private readonly options: InboundOptions) {
    super(options.queue);
  }

  protected async work(item: InboundItem, signal: AbortSignal): Promise<boolean> {
    const { log, counters } = this.options;
    try {
      await this.deliver(item, this.attempt >= LENIENT_AFTER);
      if (!signal.aborted) this.done();
      return true;
    } catch (error) {
      if (signal.aborted) return true;
      const failure = error instanceof LookupError ? error.failure : undefined;
      if (failure?.kind === 'fatal') {
        this.options.onFatal(failure);
        return false;
      }
      this.attempt += 1;
      const where = { channel: item.channel, ts: item.ts, kind: item.kind ?? 'message', attempt: this.attempt };
      if (this.attempt < MAX_TRIES || failure) {
        counters.retries += 1;
        if (failure?.kind === 'rate_limited') {
          counters.rate_limited += 1;
          log.warn({ ...where, retryAfterMs: failure.retryAfterMs }, 'Slack rate limit on a lookup: waiting');
          await sleep(failure.retryAfterMs, signal);
          return true;
        }
        if (failure || error instanceof PostFailedError) {
          log.warn({ ...where, reason: failure?.code ?? (error as Error).message }, 'relaying a Slack message failed; trying again');
        } else {
          // Not a refusal the contract names: a mistake somewhere; said loudly, and tried again all the same.
          log.error({ ...where, err: error }, 'a Slack message could not be handed to the gateways; trying again');
        }
        await sleep(backoff(this.attempt, 500, 30_000), signal);
        return true;
      }
      log.error({ ...where, ...failureFields(error, PostFailedError) }, 'the chats do not take a Slack message; it is not relayed');
      counters.failed += 1;
      this.done();
      return true;
    }
  }

  /** The item is dealt with: off the queue, and the next one starts afresh. */
  private done(): void {
    this.queue.shift();
    this.attempt = 0;
  }

  private async deliver(item: InboundItem, lenient: boolean): Promise<void> {
    const { directory, counters, gateway } = this.options;
    const channels = this.options.channels();
    const refs = channels.needsName(item.channel)
      ? channels.refsFor(item.channel, await directory.channelName(item.channel, lenient))
      : channels.refsFor(item.channel);
    if (refs.length === 0) {
      counters.ignored += 1;
      return;
    }
    const message = await this.incoming(item, lenient);
    if (!message) {
      counters.ignored += 1;
      return;
    }
    for (const ref of refs) await gateway.receive(ref, message);
    counters.relayed_in += 1;
  }

  /** The item as the gateways take it; undefined when there is nothing to say (an empty message). */
  private async incoming(item: InboundItem, lenient: boolean): Promise<IncomingMessage | undefined> {
    const { directory } = this.options;
    const kind = item.kind ?? 'message';
    const name = chatName((await directory.userName(item.user, lenient)) ?? item.user);
    const text = await slackToPlain(item.text, {
      user: (id) => directory.userName(id, lenient),
      channel: (id) => directory.channelName(id, lenient),
    });
    const files = kind === 'message' || kind === 'action' ? (item.files ?? []).map((file) => this.options.file(file)) : [];
    if (kind !== 'delete' && text.trim() === '' && files.length === 0) return undefined;
    const message: IncomingMessage = {
      kind, text, speaker: { platform: 'slack', id: item.user, name }, nativeId: item.ts,
    };
    const time = slackTime(item.revision ?? item.ts);
    if (time) message.time = time;
    if (item.revision) message.revision = item.revision;
    if (item.thread_ts) message.replyTo = item.thread_ts;
    // The gateway reads the files into its media store and shows their links after the text.
    if (files.length > 0) message.files = files;
    // The relay's own template shows messages and edits (the core marks those `(edit)`); actions and
    // deletions show as the core shows them (`* name text`, `* name deleted a message`). A message of
    // files alone has no text line: the gateway's file lines carry the speaker.
    if ((kind === 'message' || kind === 'edit') && text.trim() !== '') {
      const channel = this.options.template.includes('{channel}') ? `#${(await directory.channelName(item.channel, true)) ?? item.channel}` : '';
      // Every line carries the speaker: a line of the text cannot pass for someone else's.
      message.chatText = attributedLines(text, (line) => renderForChat(this.options.template, closeBidi(name), line, channel));
    }
    return message;
  }
}

/** A Slack ts (seconds.micros since the epoch) as ISO 8601; undefined when it is not one. */
export function slackTime(ts: string): string | undefined {
  const seconds = Number(ts);
  return Number.isFinite(seconds) && seconds > 0 ? new Date(Math.floor(seconds * 1000)).toISOString() : undefined;
}
