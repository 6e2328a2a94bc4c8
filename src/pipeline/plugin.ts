import type { MediaFiles } from '../media/attachment.js';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { GroupsClient } from '../api/client.js';
import type { ChatMessage, Id } from '../api/types.js';
import type { KeyValueStore } from '../store/kv-store.js';
import type { Storage } from '../store/storage.js';
import type { Direction, IncomingMessage, OutgoingMessage, OwnPost, Speaker } from '../gateway/message.js';

import type { ChatInfo } from '../chat/chat-info.js';

export type { ChatInfo };

/**
 * A chat's history was reset: the service's newest msg_num went below the bot's cursor (`behind`), the
 * chat id now names a chat made after the cursor was written (`recreated`), or the bots.yaml entry that
 * named a chat by subject names another chat now, the old one gone (`replaced`). msg_nums start again
 * at 1, so whatever a plugin keeps per msg_num for this chat (marks, "last seen", the end of a file)
 * describes a history that is gone. See docs/bots.md "When a chat's history is reset".
 */
export interface ChatReset {
  chat: ChatInfo;
  reason: 'behind' | 'recreated' | 'replaced';
  /** The last msg_num handed on before the reset (for `replaced`, the old chat's). */
  previousCursor: number | undefined;
  /** `replaced`: the chat id the bots.yaml entry named before (that chat is gone; this one took its subject). */
  previousChatId?: Id;
  /** The newest msg_num the service has, where known (`behind`; 0 for an empty chat). */
  newest: number | undefined;
  /** When the supervisor noticed it (ISO 8601). */
  at: string;
}

/** The bot running the chain. */
export interface BotInfo {
  name: string;
  userId: Id;
}

/** A chat a plugin may send to: one of the bot's chats, by subject or id. */
export type ChatTarget = string | ChatInfo;

/** What a plugin gets with each message. */
export interface PluginContext {
  readonly message: ChatMessage;
  /** The text as its speaker said it: the message's, or for a line relayed from elsewhere the line without its `<name>` prefix. */
  readonly text: string;
  /** Who said it: a chat member, a person on another side of a gateway (IRC, Slack, ...), or the bot itself. */
  readonly sender: Speaker;
  /**
   * Set when the bot's own user posted the message: a line it relayed from another side of a gateway
   * (`own.relayed`, with its origin), or its own voice (a plugin's reply or send). A plugin that must
   * not see the bot's posts says `ownPosts: false` in its definition.
   */
  readonly own: OwnPost | undefined;
  /**
   * Whether a person other than the bot said this and the bot hears it here first: a member's message,
   * or the first chat a line from IRC or Slack was relayed into. Commands answer only these, so a line
   * relayed into several chats is answered once, and the bot never answers itself.
   */
  readonly answerable: boolean;
  /**
   * True when the message reached the bot through history after a reconnect or a restart rather than
   * live. It is still new to the bot and must be handled; `ageMs` says how old it was on arrival.
   */
  readonly backfilled: boolean;
  readonly ageMs: number;
  /**
   * The message as the service sent it on the chat socket: its JSON text, ids as the service wrote
   * them (numbers, perhaps above 2^53), for a plugin that stores or forwards the message whole and need
   * not serialise it again. Undefined for a message read from history.
   */
  readonly wire?: string;
  readonly chat: ChatInfo;
  readonly bot: BotInfo;
  readonly log: Logger;
  readonly client: GroupsClient;
  /** This plugin's own durable key-value store (per bot). */
  readonly store: KeyValueStore;
  /** Aborted when the plugin's time for this message is up, or the supervisor stops. */
  readonly signal: AbortSignal;
  /**
   * Posts into the message's chat; resolves with the stored chat_message once the service has it. The
   * gateways carry it to every other side. With `{ only: 'origin' }`, an answer to a line relayed from
   * another side (IRC, Slack) goes to that side alone and resolves with undefined (for a member's message
   * it is a plain reply). Answering the bot's own voice is refused (a bot must not answer itself).
   */
  reply(text: string): Promise<ChatMessage>;
  /** As reply(text), with where the answer goes: undefined when it went to the origin side only. */
  reply(text: string, options: ReplyOptions): Promise<ChatMessage | undefined>;
  /** Posts into another of the bot's chats. */
  send(chat: ChatTarget, text: string): Promise<ChatMessage>;
}

/** Where {@link PluginContext.reply} sends an answer. */
export interface ReplyOptions {
  /** `origin`: only to the side the line came from; `everywhere` (default): into the chat, and so to every side. */
  only?: 'origin' | 'everywhere';
}

/** Hands the message on to the plugins after this one; resolves when they are done with it. Not calling it stops the message here. */
export type Next = () => Promise<void>;

/** What a plugin's factory gets once, at start. */
export interface PluginEnv {
  readonly bot: BotInfo;
  readonly log: Logger;
  readonly client: GroupsClient;
  readonly store: KeyValueStore;
  /** The directory of the bots.yaml, for options that name files. */
  readonly configDir: string;
  /** A directory of this plugin's own under the bot's state directory (for queues and the like). */
  readonly dataDir: string;
  /**
   * Where the plugin's durable stores write: open them with it (`DurableQueue.open(path, { storage })`,
   * `MsgNumMarks.open(path, storage)`), and `await storage.durable()` right before an effect outside
   * groupwire (sending to a platform). Files by default; Redis when workers share the bots, where
   * durable() rejects (LeaseLostError) once the bot's unit belongs to another worker: then send nothing.
   */
  readonly storage: Storage;
  /** Aborted when the bot begins to stop: a plugin that takes work from elsewhere stops taking it. */
  readonly stopping: AbortSignal;
  /** Posts into one of the bot's chats (for plugins that speak on their own, like relays). */
  send(chat: ChatTarget, text: string): Promise<ChatMessage>;
  /** The bot's chats, once joined. */
  chats(): ChatInfo[];
  /** For platform relays: the gateways their channels are in (docs/bots.md "Writing a relay for a new platform"). */
  readonly gateway: GatewayPort;
  /**
   * What the chain would give as `ctx.own` for a message read elsewhere (the chat's history, for a
   * plugin that fills gaps from it): undefined when the bot did not post it, else where it was relayed
   * from, if it was (the gateways' message map).
   */
  ownPost(chat: ChatInfo, message: ChatMessage): OwnPost | undefined;
  /** The media store's files, for relays that upload files natively (docs/gateways.md "Files"). */
  readonly media: MediaFiles;
}

/** What a platform relay gets to take part in gateways. */
export interface GatewayPort {
  /** This plugin's channels that gateways join (those its own options map, and those bots.yaml's `gateways` name). */
  channels(): string[];
  /**
   * Something said in one of the channels: handed to the gateway's other relays of the bot (their
   * durable queues, before the first await) and posted into the gateway's chats (durably, in the bot's
   * outbox), docs/gateways.md. Resolves once every chat took it; rejects with PostFailedError when a
   * chat would not take it now (closed, not joined): try again later, and what was already taken is
   * not handed on or posted twice (the same channel and nativeId, kind and revision).
   */
  receive(channel: string, message: IncomingMessage): Promise<void>;
  /** The relay posted the line `key` in `channel` under the platform's id `nativeId` (for threads, edits and deletions). */
  posted(key: string, channel: string, nativeId: string): void;
  /**
   * The platform's id in `channel` of the line sent with `key`, once the relay told it (posted); for a
   * line's `replyToKey`: a relay sending in order asks right before sending, when the parent has gone out.
   */
  nativeOf(key: string, channel: string): string | undefined;
}

/** A platform relay's side of a gateway: how lines are sent into its channels. */
export interface PlatformEndpoint {
  /** Queues the line for the channel durably and returns (never waits on the platform); the same key twice goes out once. */
  send(channel: string, message: OutgoingMessage): void;
}

/** Declares a plugin as a platform relay: its name and the chat ⇄ channel pairs its options map. */
export interface PlatformSpec<Options = unknown> {
  /** `irc`, `slack`, ...: the prefix of its endpoints and of its people in access rules (`irc:nick!user@host`). */
  name: string;
  /** The pairs its own options map (relay-irc's `channels:`): each chat and its channels make a gateway. */
  channels(options: Options): Array<{ chat: string; channel: string; direction: Direction }>;
  /** The form of a channel name that compares equal (IRC folds case); default: as written. */
  channelKey?(channel: string): string;
  /**
   * Why lines may not be sent into this channel, when the relay's options keep it read-only (the group
   * archive unless `post_to_group`): `check` then refuses a gateway endpoint that takes `out` there.
   */
  refusesOut?(options: Options, channel: string): string | undefined;
}

/** A running plugin. Every member is optional. */
export interface PluginInstance {
  /** Middleware: handle the message, and call `next()` to let the plugins after this one see it. */
  handle?(ctx: PluginContext, next: Next): Promise<void> | void;
  /** Called once before the first message: connect to a platform, open files. The bot waits for it. */
  start?(): Promise<void> | void;
  /** Called once at shutdown or when a reload removes the plugin: close connections, flush what is kept. */
  stop?(): Promise<void> | void;
  /**
   * The chat's history was reset: forget what is kept per msg_num for this chat (resynchronise).
   * Called before any message of the new history is handed on, in chain order, awaited. It may be called
   * again for the same reset after a crash, so it must do no harm twice.
   */
  chatReset?(reset: ChatReset): Promise<void> | void;
  /** A platform relay (`platform` in the definition): sends gateway lines into its channels. */
  endpoint?: PlatformEndpoint;
  /** Counters for the supervisor's stats (messages relayed, queue length, write errors, ...); exported as metrics under the plugin's name. */
  stats?(): Record<string, number>;
  /** How the plugin is doing, for `/status`, `/readyz` and the queue-depth metrics (relays: their connection and queues). */
  status?(): PluginStatus;
}

/** A plugin's health as the operations endpoint shows it (docs/operations.md). */
export interface PluginStatus {
  /** A relay's connection to its platform: `connected`, `connecting`, `disconnected`, ... and a line about it. */
  connection?: { state: string; detail?: string };
  /** Lines waiting, by queue (`to_irc`, `to_chat`, a channel's name, ...). */
  queues?: Record<string, number>;
  /**
   * The backlog of each side the relay sends to (say a channel's queue, keyed `#chan`), read in O(1)
   * (DurableQueue's backlog): `/status`, `/metrics` and the warning of a side falling behind show them
   * (docs/operations.md "Backlogs"). `limit` names the setting that paces the side (`rate: 10/s`).
   */
  backlogs?: Record<string, SideBacklog>;
}

/** One side's backlog: lines waiting, when the oldest was queued, lines queued and taken so far, what paces it. */
export interface SideBacklog {
  depth: number;
  /** ms since the epoch; undefined when nothing waits. */
  oldestAt: number | undefined;
  /** Lines queued and lines taken (sent and confirmed, or given up) since the relay started: their change is the rate. */
  pushed: number;
  taken: number;
  limit?: string;
}

/**
 * What a plugin module exports (through {@link definePlugin}): its name, the schema of its bots.yaml
 * options, and the factory that makes an instance per bot. See docs/bots.md "Writing a plugin".
 */
export interface PluginDefinition<S extends z.ZodType = z.ZodType> {
  /** The name logs and metrics use. */
  name: string;
  /** The schema of the plugin's `with:` options in bots.yaml. */
  options: S;
  /** How long one message may take in this plugin before it is abandoned (default 10 s). */
  timeoutMs?: number;
  /** false: the bot's own posts (its replies, the lines it relayed) never reach this plugin's handle(). Default true. */
  ownPosts?: boolean;
  /** Set for a platform relay (IRC, Slack, ...): see PlatformSpec. */
  platform?: PlatformSpec<z.output<S>>;
  /**
   * true: the plugin keeps nothing across chats and opens no outside connection, so a bot's chats may be
   * split over several workers, each running its own instance (bots.yaml `shards:`, docs/scale-out.md).
   */
  shardable?: boolean;
  /**
   * Valid options that are still risky (an API served over plain HTTP to other machines, ...): `groupwire
   * check` prints each as a warning, at the place in bots.yaml that `path` (under `with:`) names.
   */
  warnings?(options: z.output<S>): PluginWarning[];
  /** Makes the bot's instance from its validated options, once at start (and again after a reload that changed them). */
  create(options: z.output<S>, env: PluginEnv): PluginInstance | Promise<PluginInstance>;
}

/** A warning about a plugin's valid options: what to say, and where under its `with:` (keys and indexes). */
export interface PluginWarning {
  path: Array<string | number>;
  message: string;
}

/** Declares a plugin. Third-party plugins export this as their default export. */
export function definePlugin<S extends z.ZodType>(definition: PluginDefinition<S>): PluginDefinition<S> {
  return definition;
}

export function isPluginDefinition(value: unknown): value is PluginDefinition {
  const candidate = value as Partial<PluginDefinition> | null;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.name === 'string' &&
    typeof candidate.create === 'function' && typeof candidate.options === 'object';
}
