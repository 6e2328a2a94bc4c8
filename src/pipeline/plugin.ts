import type { Logger } from 'pino';
import type { z } from 'zod';
import type { GroupsClient } from '../api/client.js';
import type { ChatMessage, Id } from '../api/types.js';
import type { KeyValueStore } from '../store/kv-store.js';

/** The chat a message belongs to, as the bot knows it. */
export interface ChatInfo {
  id: Id;
  subject: string;
  groupId: Id;
  groupName: string;
  chatsubId: Id;
}

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
  /**
   * True when the message reached the bot through history after a reconnect or a restart rather than
   * live. It is still new to the bot and must be handled; `ageMs` says how old it was on arrival.
   */
  readonly backfilled: boolean;
  readonly ageMs: number;
  readonly chat: ChatInfo;
  readonly bot: BotInfo;
  readonly log: Logger;
  readonly client: GroupsClient;
  /** This plugin's own durable key-value store (per bot). */
  readonly store: KeyValueStore;
  /** Aborted when the plugin's time for this message is up, or the supervisor stops. */
  readonly signal: AbortSignal;
  /** Posts into the message's chat. Resolves with the stored chat_message once the service has it. */
  reply(text: string): Promise<ChatMessage>;
  /** Posts into another of the bot's chats. */
  send(chat: ChatTarget, text: string): Promise<ChatMessage>;
}

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
  /** Aborted when the bot begins to stop: a plugin that takes work from elsewhere stops taking it. */
  readonly stopping: AbortSignal;
  /** Posts into one of the bot's chats (for plugins that speak on their own, like relays). */
  send(chat: ChatTarget, text: string): Promise<ChatMessage>;
  /** The bot's chats, once joined. */
  chats(): ChatInfo[];
}

/** A running plugin. Every member is optional. */
export interface PluginInstance {
  /** Middleware: handle the message, and call `next()` to let the plugins after this one see it. */
  handle?(ctx: PluginContext, next: Next): Promise<void> | void;
  start?(): Promise<void> | void;
  stop?(): Promise<void> | void;
  /**
   * The bot's own message, as the service stored it, in its place in msg_num order with the messages
   * handed to `handle` (once; never to `handle`, which would let a bot answer itself). For plugins that
   * record the chat, like the logger. It cannot reply.
   */
  ownMessage?(message: ChatMessage, chat: ChatInfo): void;
  /**
   * The chat's history was reset: forget what is kept per msg_num for this chat (resynchronise).
   * Called before any message of the new history is handed on, in chain order, awaited. It may be called
   * again for the same reset after a crash, so it must do no harm twice.
   */
  chatReset?(reset: ChatReset): Promise<void> | void;
  /** Counters for the supervisor's stats (messages relayed, queue length, write errors, ...). */
  stats?(): Record<string, number>;
}

export interface PluginDefinition<S extends z.ZodType = z.ZodType> {
  /** The name logs and metrics use. */
  name: string;
  /** The schema of the plugin's `with:` options in bots.yaml. */
  options: S;
  /** How long one message may take in this plugin before it is abandoned (default 10 s). */
  timeoutMs?: number;
  create(options: z.output<S>, env: PluginEnv): PluginInstance | Promise<PluginInstance>;
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
