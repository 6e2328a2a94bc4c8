import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { failureFields, QueueDrain, type Attachment, type DrainOutcome, type DurableQueue, type MediaFiles, type QueueBacklog, type RefusedFile } from '../../src/index.js';
import { markdownFileLines, uploadFiles, type FileSettings } from './files-out.js';
import { escapeForMattermost } from './render.js';
import { RELAYED_PROP, type MattermostPost, type PostList } from './inbound.js';
import { isRefusal, MattermostError, type MattermostRest } from './session.js';

/** A line as said, kept in the queue and rendered when it is sent (the server's settings, read at start, decide how). */
export interface LineParts {
  speaker: { name: string; id: string; platform: string };
  text: string;
  action: boolean;
  /** Stands above the line when it cannot answer its parent's thread. */
  quote?: { name: string; text: string };
}

/** What a line is posted as: its message, and the speaker's name (and icon) when posts carry them. */
export interface Rendered {
  message: string;
  as?: { username: string; icon_url?: string };
}

/** A gateway line waiting for Mattermost. */
export interface OutboundItem {
  key: string;
  /** The channel as the gateway names it (an id or `team/channel`, as written). */
  channel: string;
  kind: 'post' | 'edit' | 'delete';
  line?: LineParts;
  /** post: the Mattermost post it answers (its thread is answered); edit/delete: the post changed. */
  target?: string;
  /** A reply whose parent was not posted yet when queued (OutgoingMessage.replyToKey): asked for right before sending. */
  parentKey?: string;
  /** post: files to upload and attach (files-out.ts), and those the gateway refused (a line each). */
  files?: Attachment[];
  refused?: RefusedFile[];
}

export interface OutboundCounters {
  posted: number;
  edited: number;
  deleted: number;
  dropped: number;
  retries: number;
  rate_limited: number;
  found_after_retry: number;
  files_sent: number;
  files_linked: number;
}

/** An attempt noted before it is made: a retry first looks for the post in the channel's history from `since` (ms, the server's clock). */
interface AttemptNote {
  key: string;
  since: number;
  /** The line's files uploaded so far: media id → Mattermost file id (uploaded once across retries). */
  files?: Record<string, string>;
}

/** How far before the newest post it knows the relay looks for an attempt's post (clocks and ms ties). */
const LOOK_BACK_MS = 60_000;

/** The nonce of a line: its `pending_post_id` (with the bot's user id) and the prop a history look-up finds it by. */
export function nonceOf(key: string): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 26);
}

/**
 * Lines to Mattermost, oldest first, one at a time: a line leaves the durable queue only once the
 * server took it (or refused it for good). A post carries a `pending_post_id` made from the line's key
 * (the server answers a create it has just made with the same post, for a short while) and the same
 * nonce in its props; and the attempt is noted durably before it is made, so a retry after a lost answer
 * or a crash first looks for the post in the channel's history and takes it when it is there. 429s wait
 * what Retry-After says; a network failure or a 5xx is tried again with a growing pause.
 */
export class MattermostOutbound {
  private readonly drain: QueueDrain<OutboundItem>;
  /** Post id → its thread's root (a reply must name the root: Mattermost threads are one level). */
  private readonly roots = new Map<string, string>();

  constructor(
    private readonly queue: DurableQueue<OutboundItem>,
    private readonly options: {
      rest: () => MattermostRest;
      /** The channel id of a channel as written; undefined when its `team/channel` did not resolve. */
      idOf: (channel: string) => string | undefined;
      self: () => string;
      log: Logger;
      counters: OutboundCounters;
      durable: () => Promise<void>;
      posted: (item: OutboundItem, post: MattermostPost) => void;
      /** The newest `create_at` the relay knows in a channel (what an attempt's post will come after). */
      newest: (channelId: string) => number | undefined;
      nativeOf: (key: string, channel: string) => string | undefined;
      /** The line as posted; `quoted`: with its quote (a reply outside its parent's thread). */
      render: (line: LineParts, quoted: boolean) => Rendered;
      /** The token was refused: the relay stops. */
      fatal: (error: unknown) => void;
      media: MediaFiles;
      /** What the server lets the relay upload (read at start). */
      files: () => FileSettings;
      /** How long one upload may take. */
      fileTimeoutMs: number;
    },
  ) {
    this.drain = new QueueDrain(queue, {
      send: (item, signal) => this.send(item, signal),
      onRetry: () => {
        options.counters.retries += 1;
      },
      retryAfter: 'exactly',
      // The attempt's note goes with its item, in the same write.
      shiftNote: () => (this.queue.note ? null : undefined),
    });
  }

  get size(): number {
    return this.drain.size;
  }

  /** The queue as a side of the bot's backlogs (docs/operations.md "Backlogs"). */
  get backlog(): QueueBacklog {
    return this.drain.backlog;
  }

  push(item: OutboundItem): void {
    this.drain.push(item);
  }

  start(): void {
    this.drain.start();
  }

  async stop(): Promise<void> {
    await this.drain.stop();
  }

  /** A post the relay made or saw answers this thread root. */
  noteRoot(postId: string, rootId: string): void {
    this.roots.set(postId, rootId);
    if (this.roots.size > 10_000) this.roots.delete(this.roots.keys().next().value!);
  }

  private async send(item: OutboundItem, signal: AbortSignal): Promise<DrainOutcome> {
    const { log, counters } = this.options;
    try {
      // A worker whose unit moved elsewhere sends nothing (docs/scale-out.md).
      await this.options.durable();
    } catch (error) {
      log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: sending nothing more to Mattermost');
      return 'stop';
    }
    const channelId = this.options.idOf(item.channel);
    if (channelId === undefined) {
      counters.dropped += 1;
      log.error({ channel: item.channel, kind: item.kind }, 'a line for a Mattermost channel that did not resolve is dropped');
      return 'done';
    }
    const rest = this.options.rest();
    try {
      if (item.kind === 'post') {
        const post = await this.create(rest, item, channelId, signal);
        counters.posted += 1;
        this.noteRoot(post.id, post.root_id || post.id);
        this.options.posted(item, post);
      } else if (item.kind === 'edit') {
        await rest.call('put', `${rest.client.getPostRoute(item.target!)}/patch`, { message: this.options.render(item.line!, false).message }, signal);
        counters.edited += 1;
      } else {
        await rest.call('delete', rest.client.getPostRoute(item.target!), undefined, signal);
        counters.deleted += 1;
      }
      return 'done';
    } catch (error) {
      if (signal.aborted) return 'stop';
      if (isRefusal(error)) {
        this.options.fatal(error);
        return 'stop';
      }
      if (error instanceof MattermostError && error.status === 429) {
        counters.rate_limited += 1;
        log.info({ channel: item.channel, wait_ms: error.retryAfterMs }, 'Mattermost limits the relay\'s rate: waiting');
        return error.retryAfterMs ?? 1_000;
      }
      if (error instanceof MattermostError && error.status === 404 && item.kind === 'delete') {
        // Gone already (deleted on Mattermost too): what the line asked for is so.
        return 'done';
      }
      if (error instanceof MattermostError && error.status >= 400 && error.status < 500) {
        // No permission to post there, a post that no longer exists, a message the server will never take: trying again changes nothing.
        counters.dropped += 1;
        log.error({ channel: item.channel, kind: item.kind, status: error.status, error_id: error.errorId, reason: error.message }, 'Mattermost refused a line for good; it is dropped');
        return 'done';
      }
      log.warn({ channel: item.channel, ...failureFields(error) }, 'Mattermost did not take a line; trying again');
      return 'retry';
    }
  }

  /** Makes the post, or finds the one an earlier attempt made (its answer lost, or the relay killed before it came). */
  private async create(rest: MattermostRest, item: OutboundItem, channelId: string, signal: AbortSignal): Promise<MattermostPost> {
    const nonce = nonceOf(item.key);
    const note = this.queue.note as AttemptNote | null | undefined;
    if (note?.key === item.key) {
      const page = await rest.get<PostList>(`${rest.client.getChannelRoute(channelId)}/posts?since=${note.since}&skipFetchThreads=true`, signal);
      const made = Object.values(page.posts ?? {}).find((post) => post.user_id === this.options.self() && post.props?.[RELAYED_PROP] === nonce && !post.delete_at);
      if (made) {
        this.options.counters.found_after_retry += 1;
        return made;
      }
    } else {
      const newest = this.options.newest(channelId);
      this.queue.setNote({ key: item.key, since: (newest ?? Date.now()) - LOOK_BACK_MS } satisfies AttemptNote);
      await this.options.durable();
    }
    const attempt = this.queue.note as AttemptNote;
    const { fileIds, links } = await uploadFiles(
      { rest, media: this.options.media, settings: this.options.files(), log: this.options.log, timeoutMs: this.options.fileTimeoutMs, counters: this.options.counters },
      channelId, item.files ?? [], attempt.files ?? {},
      async (files) => {
        this.queue.setNote({ ...attempt, files } satisfies AttemptNote);
        await this.options.durable();
      },
      signal,
    );
    const parent = item.target ?? (item.parentKey !== undefined ? this.options.nativeOf(item.parentKey, item.channel) : undefined);
    const root = parent !== undefined ? await this.rootOf(rest, parent, signal) : undefined;
    // Files that are not attached, and refused ones, are lines of the text (with their links, as markdown: the slot's text is a word the escape leaves alone).
    const linkLines = markdownFileLines(links, item.refused, escapeForMattermost);
    const slot = `groupwirefiles${nonce.replace(/[^a-zA-Z0-9]/g, '')}`;
    const line = linkLines.length === 0 ? item.line! : { ...item.line!, text: [item.line!.text, slot].filter((part) => part.trim() !== '').join('\n') };
    // In its parent's thread the line stands alone; elsewhere its quote (if any) says what it answers.
    const rendered = this.options.render(line, root === undefined);
    const { as } = rendered;
    // A line cut at the post's length lost its slot: the links go at its end.
    const message = linkLines.length === 0 ? rendered.message
      : rendered.message.includes(slot) ? rendered.message.replace(slot, () => linkLines.join('\n')) : `${rendered.message}\n${linkLines.join('\n')}`;
    const post = await rest.call<MattermostPost>('post', rest.client.getPostsRoute(), {
      channel_id: channelId,
      message,
      ...(fileIds.length > 0 ? { file_ids: fileIds } : {}),
      ...(root ? { root_id: root } : {}),
      pending_post_id: `${this.options.self()}:${nonce}`,
      props: {
        [RELAYED_PROP]: nonce,
        ...(as ? { override_username: as.username, ...(as.icon_url ? { override_icon_url: as.icon_url } : {}) } : {}),
      },
    }, signal);
    this.options.counters.files_linked += links.length;
    return post;
  }

  /** The root of the thread a post is in (itself when it is a root); undefined when the post is gone (the line goes out on its own). */
  private async rootOf(rest: MattermostRest, postId: string, signal: AbortSignal): Promise<string | undefined> {
    const known = this.roots.get(postId);
    if (known) return known;
    try {
      const post = await rest.get<MattermostPost>(rest.client.getPostRoute(postId), signal);
      const root = post.root_id || post.id;
      this.noteRoot(postId, root);
      return root;
    } catch (error) {
      if (error instanceof MattermostError && (error.status === 404 || error.status === 403)) return undefined;
      throw error;
    }
  }
}
