import type { Logger } from 'pino';
import type { GroupsClient } from '../api/client.js';
import type { ChatMessage } from '../api/types.js';
import type { KeyValueStore } from '../store/kv-store.js';
import type { OwnPost, Speaker } from '../gateway/message.js';
import type { BaseContext, SignalSource } from './chain.js';
import type { BotInfo, ChatInfo, ChatTarget, PluginContext } from './plugin.js';

/**
 * One plugin's view of one message. A class rather than an object literal: a literal with a getter
 * (for the lazily made signal) is built on V8's slow path, about 1 µs each, three times a message in
 * the throughput bench; a class instance costs next to nothing. `signal` lives on the prototype, so
 * a plugin reads it as `ctx.signal` (a spread copy of ctx has no signal).
 */
export class LinkContext implements PluginContext {
  readonly message: ChatMessage;
  readonly text: string;
  readonly sender: Speaker;
  readonly own: OwnPost | undefined;
  readonly answerable: boolean;
  readonly chat: ChatInfo;
  readonly bot: BotInfo;
  readonly client: GroupsClient;
  readonly backfilled: boolean;
  readonly ageMs: number;
  readonly wire: string | undefined;
  readonly reply: PluginContext['reply'];
  readonly send: (chat: ChatTarget, text: string) => Promise<ChatMessage>;

  constructor(
    base: BaseContext,
    readonly log: Logger,
    readonly store: KeyValueStore,
    private readonly signals: SignalSource,
  ) {
    this.message = base.message;
    this.text = base.text;
    this.sender = base.sender;
    this.own = base.own;
    this.answerable = base.answerable;
    this.chat = base.chat;
    this.bot = base.bot;
    this.client = base.client;
    this.backfilled = base.backfilled;
    this.ageMs = base.ageMs;
    this.wire = base.wire;
    this.reply = base.reply;
    this.send = base.send;
  }

  get signal(): AbortSignal {
    return this.signals.signal;
  }
}
