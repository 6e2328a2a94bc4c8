import type { Logger } from 'pino';
import { attributedLines, failureFields, oneLineName, receiveUntilTaken, RecentIds, sleep, type GatewayPort, type IncomingMessage, type KeyValueStore } from '../../src/index.js';
import { incomingFiles } from './files-in.js';
import { plainFromMattermost } from './render.js';
import { isRefusal, type MattermostRest } from './session.js';

/** A post as the websocket (JSON inside `data.post`) and REST give it: the fields the relay reads. */
export interface MattermostPost {
  id: string;
  channel_id: string;
  user_id: string;
  root_id?: string;
  message: string;
  type?: string;
  create_at: number;
  update_at?: number;
  edit_at?: number;
  delete_at?: number;
  props?: Record<string, unknown>;
  /** The files said with the post (read through GET /files/{id}: files-in.ts). */
  file_ids?: string[];
  /** What the server adds: `files` (each one's name, type and size) is read; embeds, images and links are not. */
  metadata?: { files?: unknown };
}

/** A page of posts: `order` newest first, the posts by id. */
export interface PostList {
  order: string[];
  posts: Record<string, MattermostPost>;
}

interface UserProfile {
  id: string;
  username: string;
  nickname?: string;
  first_name?: string;
  last_name?: string;
}

export interface InboundCounters {
  received: number;
  caught_up: number;
  receive_retries: number;
}

/**
 * Where each channel's intake stands, in the plugin's store: the newest `create_at` handed on and the
 * ids of the posts made in that millisecond (Mattermost's clock ticks in ms; two posts may share one).
 */
interface Mark {
  at: number;
  ids: string[];
}
const MARK_KEY = (channelId: string) => `mark:${channelId}`;
/** The prop the relay's own posts carry (its line's nonce): another groupwire relay's copy is not relayed either. */
export const RELAYED_PROP = 'groupwire_line';
const RETRY_MS = 2_000;
/** Posts a REST read of `since` answers at most (the server's limit): a full page is read on from its newest change. */
const SINCE_PAGE = 1_000;
/** Post types relayed: a person's post and `/me`; join/leave and other system posts are not. */
const RELAYED_TYPES = new Set(['', 'me']);

/** A page's posts, oldest first: by `create_at`, and posts of one millisecond as the server ordered them (`order` is newest first). */
export function oldestFirst(page: PostList): MattermostPost[] {
  const order = page.order ?? [];
  const rank = new Map(order.map((id, index) => [id, order.length - index]));
  return Object.values(page.posts ?? {}).toSorted((a, b) => a.create_at - b.create_at || (rank.get(a.id) ?? 0) - (rank.get(b.id) ?? 0));
}

/**
 * Mattermost posts to the gateways, once each and in order per channel. The server keeps every post,
 * so the relay keeps only a mark per channel (the newest post handed on); after each websocket `hello`
 * (a start, a reconnect) it reads what changed since with GET /channels/{id}/posts?since=, so nothing
 * said while the relay was away is lost: new posts in the order they were made, edits and deletions
 * of older ones as such. Live events and the catch-up go through one serial chain per channel; a post
 * seen both ways goes once (and the gateway dedupes by id besides).
 */
export class MattermostInbound {
  private readonly chains = new Map<string, Promise<void>>();
  private readonly handedOn = new RecentIds(10_000);
  private readonly users = new Map<string, UserProfile>();

  constructor(
    private readonly options: {
      gateway: GatewayPort;
      store: KeyValueStore;
      log: Logger;
      counters: InboundCounters;
      incoming: string;
      rest: () => MattermostRest;
      self: () => string;
      /** The gateway's channels (as written in bots.yaml) of a channel id. */
      channelsOf: (channelId: string) => readonly string[];
      showName: 'username' | 'nickname' | 'full_name';
      ignoreBots: boolean;
      /** The token was refused (401): the relay stops. */
      refused: (error: unknown) => void;
      stopping: AbortSignal;
    },
  ) {}

  /** A `posted` event of one of the relay's channels. */
  live(post: MattermostPost): void {
    this.inOrder(post.channel_id, async () => {
      await this.take(post, false);
    });
  }

  /** A `post_edited` or `post_deleted` event. */
  changed(post: MattermostPost, kind: 'edit' | 'delete'): void {
    this.inOrder(post.channel_id, () => this.change(post, kind));
  }

  /** A new websocket session: each channel reads what it said since its mark. */
  catchUp(channelIds: readonly string[]): void {
    for (const channelId of channelIds) this.inOrder(channelId, () => this.catchUpChannel(channelId));
  }

  async idle(): Promise<void> {
    await Promise.all(this.chains.values());
  }

  private inOrder(channelId: string, work: () => Promise<void>): void {
    const next = (this.chains.get(channelId) ?? Promise.resolve()).then(work).catch((error: unknown) => {
      if (!this.options.stopping.aborted) this.options.log.error({ channel: channelId, ...failureFields(error) }, 'a Mattermost post could not be handed on');
    });
    this.chains.set(channelId, next);
  }

  private async catchUpChannel(channelId: string): Promise<void> {
    const { store, stopping, log } = this.options;
    for (;;) {
      if (stopping.aborted) return;
      try {
        const mark = store.get<Mark>(MARK_KEY(channelId));
        if (mark === undefined) return;
        let since = mark.at - 1;
        for (;;) {
          const page = await this.options.rest().get<PostList>(`${this.options.rest().client.getChannelRoute(channelId)}/posts?since=${since}&skipFetchThreads=true`);
          const posts = oldestFirst(page);
          for (const post of posts) await this.caughtUp(post, mark);
          if (posts.length < SINCE_PAGE) return;
          since = Math.max(...posts.map((post) => post.update_at ?? post.create_at));
        }
      } catch (error) {
        if (stopping.aborted) return;
        if (isRefusal(error)) return this.options.refused(error);
        log.warn({ channel: channelId, ...failureFields(error) }, 'could not read what the Mattermost channel said meanwhile; trying again');
        await sleep(RETRY_MS, stopping);
      }
    }
  }

  /**
   * A channel the relay never read hands on what is said from now on, not its past: its newest post
   * is the mark. Done before the websocket connects, so a post made in between is caught up, not lost.
   * Throws when the server cannot be read (the caller tries again).
   */
  async firstMark(channelId: string): Promise<void> {
    if (this.options.store.get<Mark>(MARK_KEY(channelId)) !== undefined) return;
    const page = await this.options.rest().get<PostList>(`${this.options.rest().client.getChannelRoute(channelId)}/posts?page=0&per_page=1`);
    const newest = page.order?.[0] ? page.posts[page.order[0]] : undefined;
    this.options.store.set(MARK_KEY(channelId), newest ? { at: newest.create_at, ids: [newest.id] } : { at: 0, ids: [] });
    this.options.log.info({ channel: channelId }, 'first start: relaying what the Mattermost channel says from now on');
  }

  /** A post of a catch-up read: new since the mark (handed on), or an older one edited or deleted meanwhile. */
  private async caughtUp(post: MattermostPost, mark: Mark): Promise<void> {
    const isNew = post.create_at > mark.at || (post.create_at === mark.at && !mark.ids.includes(post.id));
    if (isNew) {
      // Said and deleted while the relay was away: nothing to hand on, but the mark moves past it.
      if ((post.delete_at ?? 0) > 0) return this.advance(post);
      if (await this.take(post, true)) this.options.counters.caught_up += 1;
      return;
    }
    if ((post.delete_at ?? 0) > 0) await this.change(post, 'delete');
    else if ((post.edit_at ?? 0) > 0) await this.change(post, 'edit');
  }

  /** A new post: handed on unless it is the relay's own or not something said. Answers whether it was handed on. */
  private async take(post: MattermostPost, caughtUp: boolean): Promise<boolean> {
    const mark = this.options.store.get<Mark>(MARK_KEY(post.channel_id));
    if (this.handedOn.has(post.id) || mark?.ids.includes(post.id) || (caughtUp && mark && post.create_at < mark.at)) return false;
    let handed = false;
    if (this.relayable(post)) {
      const speaker = await this.speaker(post);
      const action = post.type === 'me';
      const text = plainFromMattermost(post.message, action);
      const files = await incomingFiles(post, this.options.rest, this.options.stopping);
      // A file alone is still a line (the gateway shows its link with the speaker).
      if (text !== '' || files.length > 0) {
        const line: IncomingMessage = {
          kind: action ? 'action' : 'message', text, nativeId: post.id, time: new Date(post.create_at).toISOString(), speaker,
          ...(post.root_id ? { replyTo: post.root_id } : {}),
          ...(files.length > 0 ? { files } : {}),
          ...(action || text === '' ? {} : { chatText: this.render(speaker.name, text) }),
        };
        await this.receive(post.channel_id, line);
        this.options.counters.received += 1;
        handed = true;
      }
    }
    this.handedOn.add(post.id);
    this.advance(post);
    return handed;
  }

  /** An edit or deletion of a post someone else made: handed on as such (the gateway maps it to what it relayed). */
  private async change(post: MattermostPost, kind: 'edit' | 'delete'): Promise<void> {
    if (!this.relayable(post)) return;
    const speaker = await this.speaker(post);
    if (kind === 'delete') {
      await this.receive(post.channel_id, { kind: 'delete', text: '', nativeId: post.id, speaker });
      return;
    }
    // A post changed otherwise than by its writer (pinned, a reaction, a link preview) has no edit_at: nothing to hand on.
    if (!((post.edit_at ?? 0) > 0)) return;
    const text = plainFromMattermost(post.message, post.type === 'me');
    if (text === '') return;
    await this.receive(post.channel_id, {
      kind: 'edit', text, nativeId: post.id, revision: String(post.edit_at), speaker, chatText: this.render(speaker.name, text),
    });
  }

  /** Someone's post (not the relay's, not another groupwire relay's copy, not a system post; another bot's unless ignored). */
  private relayable(post: MattermostPost): boolean {
    const props = post.props ?? {};
    if (post.user_id === this.options.self() || props[RELAYED_PROP] !== undefined) return false;
    if (this.options.ignoreBots && (props.from_bot === 'true' || props.from_bot === true)) return false;
    return RELAYED_TYPES.has(post.type ?? '');
  }

  private advance(post: MattermostPost): void {
    const key = MARK_KEY(post.channel_id);
    const mark = this.options.store.get<Mark>(key);
    if (mark && post.create_at < mark.at) return;
    const ids = mark && mark.at === post.create_at ? [...mark.ids.filter((id) => id !== post.id), post.id] : [post.id];
    this.options.store.set(key, { at: post.create_at, ids });
  }

  /** Who said it: a webhook's post by the name it gave, else the user by the name `show_name` picks (looked up once). */
  private async speaker(post: MattermostPost): Promise<IncomingMessage['speaker']> {
    const override = post.props?.override_username;
    if ((post.props?.from_webhook === 'true' || post.props?.from_bot === 'true') && typeof override === 'string' && override.trim() !== '') {
      return { platform: 'mattermost', id: post.user_id, name: override };
    }
    let user = this.users.get(post.user_id);
    if (!user) {
      try {
        user = await this.options.rest().get<UserProfile>(this.options.rest().client.getUserRoute(post.user_id));
        this.users.set(post.user_id, user);
      } catch (error) {
        if (this.options.stopping.aborted) throw error;
        this.options.log.debug({ user: post.user_id, ...failureFields(error) }, 'could not look the Mattermost user up; shown by id');
        return { platform: 'mattermost', id: post.user_id, name: post.user_id };
      }
    }
    const full = [user.first_name, user.last_name].filter(Boolean).join(' ').trim();
    const name = this.options.showName === 'nickname' ? user.nickname || user.username
      : this.options.showName === 'full_name' ? full || user.username : user.username;
    return { platform: 'mattermost', id: post.user_id, name };
  }

  /** Every line of the text carries the speaker (attributedLines); the name is one line, its bidi closed. */
  private render(name: string, text: string): string {
    const shown = oneLineName(name);
    return attributedLines(text, (line) => this.options.incoming.replaceAll('{name}', () => shown).replace('{text}', () => line));
  }

  /** Hands one line to each gateway channel of the post's channel; a chat that will not take it now is tried again until it does. */
  private async receive(channelId: string, line: IncomingMessage): Promise<void> {
    for (const channel of this.options.channelsOf(channelId)) {
      await receiveUntilTaken(this.options.gateway, channel, line, {
        stopping: this.options.stopping, retryMs: RETRY_MS, onRetry: () => (this.options.counters.receive_retries += 1),
      });
    }
  }
}
