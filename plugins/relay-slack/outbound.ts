import type { ChatPostMessageArguments, WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { fileLines, type Attachment, type DurableQueue } from '../../src/index.js';
import type { Counters } from './counters.js';
import { ErrorCode } from '@slack/web-api';
import { classify, describe, type SlackFailure } from './errors.js';
import type { ChannelIds } from './channel-ids.js';
import { postTarget } from './channels.js';
import { withLinks, type SlackPost } from './render.js';
import type { PostAttempts } from './post-attempts.js';
import { postKey, postMetadata, type PostLookup } from './post-lookup.js';
import { QueueWorker } from './queue-worker.js';
import { FileGone, shareTs, type SlackUploads } from './upload.js';
import { backoff, sleep } from './timing.js';

/**
 * One gateway line waiting for Slack, as it will be sent: a new post, or a change (chat.update,
 * chat.delete) of a post the relay made. Items queued by versions before gateways have only the post
 * fields, `key` `<chat id>:<msg_num>` and `channel`: they are posts.
 */
export interface OutboundItem extends SlackPost {
  /** `<channel> <line key>`: what `holds` compares (one chat message may go to two channels). */
  key: string;
  /** Absent: `post`. */
  op?: 'post' | 'update' | 'delete';
  /** The gateway's key of the line (OutgoingMessage.key), told back with the post's ts (env.gateway.posted). */
  line?: string;
  /** The channel as the gateway names it (an id, or a name). */
  channel: string;
  /** A thread reply: the parent's ts. */
  thread_ts?: string;
  /** The parent's line key when its ts was not known at queueing (OutgoingMessage.replyToKey): asked for right before posting. */
  parent_key?: string;
  /** The text to post when the parent's ts is found then: without the quote that stands in for the thread. */
  thread_text?: string;
  /** Files uploaded into Slack with the post (a file share); `text` is then the post should they not go up (with their links). */
  files?: Attachment[];
  /** A file share's comment (initial_comment): the text with the speaker's name in it. */
  comment?: string;
  /** The comment when the parent's ts is found (as thread_text). */
  thread_comment?: string;
  /** update, delete: the ts of the post changed. */
  ts?: string;
  /** The MsgNumMarks key (`<channel> <chat id>:<msg_num>`) marked once Slack took the item. */
  mark?: string;
  /** The chat's reset count when queued (MsgNumMarks.epoch), when above 0: the mark's msg_num belongs to that history. */
  epoch?: number;
  /** The chat's subject, for logs. */
  chat: string;
  queuedAt: number;
}

export interface OutboundOptions {
  queue: DurableQueue<OutboundItem>;
  web: WebClient;
  ids: ChannelIds;
  unfurl: boolean;
  log: Logger;
  counters: Counters;
  /** Posts tried: one marked before its chat.postMessage goes out (post-attempts.json). */
  attempts: PostAttempts;
  /** The storage's barrier (env.storage.durable): rejects once the bot's unit is another worker's. */
  durable?: () => Promise<void>;
  /** Finds a post whose answer never came, before it is sent again. */
  lookup: PostLookup;
  /** Uploads files for a share (the bytes from the media store). */
  uploads: SlackUploads;
  /** A token or scope failure: the relay stops (the item stays queued for the next start). */
  onFatal(failure: SlackFailure): void;
  /** chat.postMessage answered the id of a channel posted to by name. */
  onChannelId(name: string, id: string): void;
  /** Slack took the item (called before it leaves the queue); `ts` of a new post. */
  onPosted(item: OutboundItem, ts: string | undefined): void;
  /** The ts in a channel of the line with this key, once posted (env.gateway.nativeOf). */
  nativeOf(key: string, channel: string): string | undefined;
}

/** Unknown error codes are tried this often before the message is given up (loudly). */
const UNKNOWN_TRIES = 5;

/**
 * Gateway → Slack: sends the durable queue's items one at a time, oldest first (chat.postMessage,
 * chat.update, chat.delete).
 * A rate limit waits Slack's Retry-After and posts the same item again (the SDK is told to reject
 * rate-limited calls and not to retry, so this queue does all the waiting, in order); a failure of
 * Slack or the network backs off and tries again, forever; a refusal of this one message (no such
 * channel, not in it) is logged as an error and counted, and the queue goes on; a refused token stops.
 * A post is marked as tried (durably) before it goes out; one tried before whose answer never came (the
 * bot died during the call, a timeout, a dropped connection) is first looked for in the channel
 * (PostLookup), and when Slack has it, its ts is the answer and it is not posted again.
 */
export class Outbound extends QueueWorker<OutboundItem> {
  private attempt = 0;
  private unknown = 0;
  /** The post (postKey) whose last try Slack answered with an error: it is not in Slack, no need to look. */
  private refused: string | undefined;
  /** The token's missing files:write was said (once). */
  private warnedFileScope = false;

  constructor(private readonly options: OutboundOptions) {
    super(options.queue);
  }

  /** True when the queue holds this key of this epoch of its chat (not posted yet). */
  holds(key: string, epoch = 0): boolean {
    // A look-up in the queue's key counts (its keyOf is Outbound.keyOf), not a pass over what waits.
    return this.queue.hasKey(Outbound.keyOf(key, epoch));
  }

  /** The queue's key of an item (DurableQueue's keyOf): its line key and its chat's epoch. */
  static keyOf(key: string, epoch: number | undefined): string {
    return `${epoch ?? 0} ${key}`;
  }

  protected async work(item: OutboundItem, signal: AbortSignal): Promise<boolean> {
    const { log, counters } = this.options;
    const queue = this.queue;
    try {
      const ts = await this.send(item);
      this.options.onPosted(item, ts);
      this.settle();
      this.attempt = 0;
      this.unknown = 0;
      return true;
    } catch (error) {
      if (error instanceof UnknownChannelId) {
        log.error({ chat: item.chat, key: item.key, channel: item.channel, op: item.op }, 'a change of a Slack post is not sent: the id of the channel, given by name, is not known (chat.update and chat.delete take only ids)');
        this.settle();
        counters.failed += 1;
        return true;
      }
      const failure = classify(error);
      // Slack answered (an error, a rate limit): nothing was posted. No answer at all: it may have been.
      const answered = (error as { code?: string } | null)?.code === ErrorCode.PlatformError || failure.kind === 'rate_limited';
      this.refused = answered && isPost(item) ? postKey(item) : undefined;
      const where = { chat: item.chat, key: item.key, channel: item.channel, op: item.op ?? 'post', code: failure.code };
      if (failure.kind === 'fatal') {
        this.options.onFatal(failure);
        return false;
      }
      if (failure.kind === 'permanent' || (failure.kind === 'unknown' && ++this.unknown >= UNKNOWN_TRIES)) {
        log.error(where, `Slack refused a message (${describe(failure)}); it is not relayed${hint(failure.code)}`);
        this.settle();
        counters.failed += 1;
        this.unknown = 0;
        return true;
      }
      counters.retries += 1;
      if (failure.kind === 'rate_limited') {
        counters.rate_limited += 1;
        log.warn({ ...where, retryAfterMs: failure.retryAfterMs, queued: queue.size }, 'Slack rate limit: waiting before posting again');
        await sleep(failure.retryAfterMs, signal);
      } else {
        const delay = backoff(this.attempt++, 1_000, 60_000);
        log.warn({ ...where, delayMs: Math.round(delay), queued: queue.size }, 'posting to Slack failed; trying again');
        await sleep(delay, signal);
      }
      return true;
    }
  }

  /** Sends the item; answers the ts of a new post. */
  private async send(item: OutboundItem): Promise<string | undefined> {
    const { web, counters, ids } = this.options;
    if (item.op === 'update' || item.op === 'delete') {
      const channel = ids.idOf(item.channel);
      if (!channel) throw new UnknownChannelId();
      await this.options.durable?.();
      if (item.op === 'update') {
        await web.chat.update({ channel, ts: item.ts!, text: item.text, parse: 'none', link_names: false });
        counters.edited_out += 1;
      } else {
        await web.chat.delete({ channel, ts: item.ts! });
        counters.deleted_out += 1;
      }
      return undefined;
    }
    this.findThread(item);
    const id = postKey(item);
    const tried = this.options.attempts.at(id);
    if (tried !== undefined && this.refused !== id) {
      const found = await this.options.lookup.find(item, tried, this.options.attempts.filesOf(id));
      if (found) {
        counters.relayed_out += 1;
        counters.recovered += 1;
        return found;
      }
    }
    if (item.files?.length) {
      const shared = await this.share(item, id);
      if (shared) return shared.ts;
    }
    this.options.attempts.mark(id);
    // The mark (and everything before it) durable under the unit's lease, or nothing is posted (docs/scale-out.md).
    await this.options.durable?.();
    // A post of files that could not go up shows their links.
    const text = item.files?.length ? withLinks(item.text, fileLines(item.files)) : item.text;
    const answer = await web.chat.postMessage(this.arguments(item, text));
    counters.relayed_out += 1;
    const target = postTarget(item.channel);
    if (answer.channel && target.startsWith('#')) this.options.onChannelId(target.slice(1), answer.channel);
    return answer.ts;
  }

  /**
   * A post with files: uploaded (upload.ts), then shared in the channel with the comment by
   * files.completeUploadExternal. The try is marked with the uploaded files' ids (durably) before the
   * share, so after a lost answer or a crash the share is found by them (PostLookup) and not made twice.
   * Undefined when the files cannot go up (the store lost one; a channel given by name whose id is not
   * known yet, which completeUploadExternal needs): the caller posts the text with their links.
   */
  private async share(item: OutboundItem, id: string): Promise<{ ts: string | undefined } | undefined> {
    const { web, counters, log, lookup, attempts } = this.options;
    const channel = this.options.ids.idOf(item.channel);
    const where = { chat: item.chat, key: item.key, channel: item.channel };
    if (!channel) {
      log.info(where, 'files go to this Slack channel as links until its id is known (given by name; it is learned from the first post)');
      return undefined;
    }
    let uploaded;
    let answer;
    const started = Date.now();
    try {
      uploaded = await this.options.uploads.upload(item.files!);
      const ids = uploaded.map((file) => file.id);
      attempts.markShare(id, ids, started);
      await this.options.durable?.();
      answer = await web.files.completeUploadExternal({
        files: uploaded as [{ id: string; title: string }], channel_id: channel,
        ...(item.comment ? { initial_comment: item.comment } : {}), ...(item.thread_ts === undefined ? {} : { thread_ts: item.thread_ts }),
      });
    } catch (error) {
      if (error instanceof FileGone) {
        log.warn({ ...where, file: error.file.name }, 'a file is no longer in the media store (retention): the line goes to Slack with its link');
        return undefined;
      }
      // An app installed before files were relayed lacks files:write: its files go as links, the relay goes on.
      const failure = classify(error);
      if (failure.code !== 'missing_scope') throw error;
      if (!this.warnedFileScope) log.warn({ ...where, needed: failure.kind === 'fatal' ? failure.needed : undefined }, 'the bot token lacks files:write: files go to Slack as links; add files:write to the app\'s scopes and reinstall it');
      this.warnedFileScope = true;
      return undefined;
    }
    const ids = uploaded.map((file) => file.id);
    counters.relayed_out += 1;
    counters.files_out += uploaded.length;
    // Slack shares asynchronously: the answer may not name the message yet; the channel then does.
    return { ts: shareTs(answer, channel) ?? await lookup.find(item, started, ids, true) };
  }

  /**
   * A reply whose parent was still queued when it was handed on: the parent went out first (the queue
   * is in order, and each post's ts is told to the gateway before the next is sent), so its ts is known
   * now and the reply goes into its thread instead of quoting it.
   */
  private findThread(item: OutboundItem): void {
    if (item.parent_key === undefined || item.thread_ts !== undefined) return;
    const ts = this.options.nativeOf(item.parent_key, item.channel);
    if (ts === undefined) return;
    item.thread_ts = ts;
    if (item.thread_text !== undefined) item.text = item.thread_text;
    if (item.thread_comment !== undefined) item.comment = item.thread_comment;
  }

  private arguments(item: OutboundItem, text: string): ChatPostMessageArguments {
    const unfurl = this.options.unfurl;
    const common = {
      channel: postTarget(item.channel), text, parse: 'none' as const, link_names: false, unfurl_links: unfurl, unfurl_media: unfurl,
      ...(item.username === undefined ? {} : { username: item.username }),
      ...(item.thread_ts === undefined ? {} : { thread_ts: item.thread_ts }),
      metadata: postMetadata(item),
    };
    if (item.icon_emoji) return { ...common, icon_emoji: item.icon_emoji };
    if (item.icon_url) return { ...common, icon_url: item.icon_url };
    return common;
  }

  /** The head item is done with: off the queue, and its try no longer needed. */
  private settle(): void {
    this.queue.shift();
    this.options.attempts.settled();
    this.refused = undefined;
  }
}

function isPost(item: OutboundItem): boolean {
  return item.op !== 'update' && item.op !== 'delete';
}

/** chat.update / chat.delete of a channel given by name whose id was never learned. */
class UnknownChannelId extends Error {
  override name = 'UnknownChannelId';
}

function hint(code: string): string {
  if (code === 'not_in_channel') return ' (invite the app into the channel: /invite @app)';
  if (code === 'channel_not_found') return ' (check the channel in channels: or gateways:, and that the app may see it)';
  if (code === 'cant_update_message' || code === 'cant_delete_message') return ' (Slack lets an app change only its own posts)';
  if (code === 'edit_window_closed') return ' (the workspace does not allow edits this late)';
  return '';
}
