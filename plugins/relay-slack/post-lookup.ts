import { createHash } from 'node:crypto';
import type { MessageMetadata, WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { ChannelIds } from './channel-ids.js';
import type { Counters } from './counters.js';
import { classify, failureReason } from './errors.js';

/**
 * Slack's chat.postMessage has no idempotency key. So every post carries its queue item's key in
 * message metadata (not shown in the channel), and a post whose answer never came (the bot killed
 * during the call, a timeout, a dropped connection) is looked for in the channel before it is sent
 * again: conversations.history from a little before the first try (conversations.replies for a
 * thread reply), `include_all_metadata`, page by page until it is found or the pages end. A file
 * share (files.completeUploadExternal takes no metadata) is found by the ids of the files it shared.
 */

/** The metadata event type of the relay's posts. */
export const POST_EVENT_TYPE = 'groupwire_line';

/** How long before the first try the search starts: room for our clock running ahead of Slack's. */
const CLOCK_MARGIN_MS = 60_000;
const PAGE_SIZE = 100;
/** A post is found in the first page or two; past this the channel was too busy to read it all. */
const MAX_PAGES = 20;

/** What identifies one queue item's post: its key and when it was queued (the same line queued in another history of its chat is another item). */
export interface PostedItem {
  key: string;
  queuedAt: number;
  thread_ts?: string;
  channel: string;
  chat: string;
}

/**
 * The key a post carries in its metadata: a digest of the item's key and queue time, of a fixed
 * length whatever the key (keys of answers hold their text) and saying nothing of the line.
 */
export function postKey(item: Pick<PostedItem, 'key' | 'queuedAt'>): string {
  return createHash('sha256').update(`${item.key}\n${item.queuedAt}`).digest('base64url').slice(0, 32);
}

export function postMetadata(item: Pick<PostedItem, 'key' | 'queuedAt'>): MessageMetadata {
  return { event_type: POST_EVENT_TYPE, event_payload: { key: postKey(item) } };
}

interface ListedMessage {
  ts?: string;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
  files?: Array<{ id?: string }>;
}

interface Listing {
  messages?: ListedMessage[];
  has_more?: boolean;
  response_metadata?: { next_cursor?: string };
}

/** Finds the relay's post of a queue item in its channel. */
export class PostLookup {
  /** Why lookups failed, each said once as a warning (then at debug level). */
  private readonly warned = new Set<string>();

  constructor(
    private readonly web: WebClient,
    private readonly ids: ChannelIds,
    private readonly log: Logger,
    private readonly counters: Counters,
  ) {}

  /**
   * The ts of the post of `item` made since `attemptedAt` (ms) (a share of one of `files`), or undefined
   * when Slack has none or could not be asked: the caller then posts (a post at least once rather than
   * never). Never throws. `quiet`: a look for a share just made, not for a lost answer.
   */
  async find(item: PostedItem, attemptedAt: number, files: readonly string[] = [], quiet = false): Promise<string | undefined> {
    const channel = this.ids.idOf(item.channel);
    const where = { chat: item.chat, key: item.key, channel: item.channel };
    if (!channel) {
      this.warnOnce('no_channel_id', where, 'a post whose answer was lost cannot be looked for (the id of the channel, given by name, is not known yet): posting it again; it may show twice');
      return undefined;
    }
    const key = postKey(item);
    const oldest = slackTs(attemptedAt - CLOCK_MARGIN_MS);
    let cursor: string | undefined;
    try {
      for (let page = 0; page < MAX_PAGES; page += 1) {
        const common = { channel, oldest, inclusive: true, include_all_metadata: true, limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) };
        const listing = (item.thread_ts
          ? await this.web.conversations.replies({ ...common, ts: item.thread_ts })
          : await this.web.conversations.history(common)) as Listing;
        const found = listing.messages?.find((m) => (m.metadata?.event_type === POST_EVENT_TYPE && m.metadata.event_payload?.key === key)
          || (files.length > 0 && m.files?.some((file) => file.id !== undefined && files.includes(file.id))));
        if (found?.ts && quiet) return found.ts;
        if (found?.ts) {
          this.log.info({ ...where, ts: found.ts, pages: page + 1 }, 'a post whose answer was lost is in Slack already: taken as posted, not posted again');
          return found.ts;
        }
        cursor = listing.response_metadata?.next_cursor || undefined;
        if (!listing.has_more || !cursor) {
          this.log.debug({ ...where, pages: page + 1 }, 'a post whose answer was lost is not in Slack: posting it');
          return undefined;
        }
      }
      this.warnOnce('too_many_pages', where, `a post whose answer was lost was not found in ${MAX_PAGES} pages of the channel's history: posting it again; it may show twice`);
      return undefined;
    } catch (error) {
      const failure = classify(error);
      if (failure.kind === 'rate_limited') this.counters.rate_limited += 1;
      const method = item.thread_ts ? 'conversations.replies' : 'conversations.history';
      const scope = failure.code === 'missing_scope'
        ? ` (the token lacks ${failure.kind === 'fatal' && failure.needed ? failure.needed : 'channels:history'}; add channels:history, and groups:history for private channels, to the app's scopes)`
        : '';
      this.warnOnce(failure.code, { ...where, method, code: failure.code, reason: failureReason(error) },
        `Slack's history could not be read to see whether a post whose answer was lost is there${scope}: posting it again; it may show twice`);
      return undefined;
    }
  }

  private warnOnce(reason: string, fields: Record<string, unknown>, message: string): void {
    if (this.warned.has(reason)) {
      this.log.debug(fields, message);
      return;
    }
    this.warned.add(reason);
    this.log.warn(fields, message);
  }
}

/** Milliseconds since the epoch as a Slack ts (`seconds.micros`). */
function slackTs(ms: number): string {
  const whole = Math.max(0, Math.floor(ms));
  return `${Math.floor(whole / 1000)}.${String((whole % 1000) * 1000).padStart(6, '0')}`;
}
