import type { Logger } from 'pino';
import type { ChatMessage } from '../api/types.js';
import { sleep } from '../chat/backoff.js';
import type { ChatInfo, GatewayPort, PlatformEndpoint, PluginContext } from '../pipeline/plugin.js';
import type { MapRecord, MessageMap } from '../store/message-map.js';
import { PostFailedError } from '../supervisor/chat-outbox.js';
import { takesIn, takesOut, type PlannedChannel, type PlannedChat, type PlannedGateway } from './gateway-plan.js';
import { chatNativeId, nativeIn, recordKeyOf } from './map-keys.js';
import { chatEndpointId, relayEndpointId, type IncomingMessage, type OutgoingMessage, type OwnPost, type Speaker } from './message.js';
import { outgoingFor } from './outgoing-line.js';
import { chatLineOf, continuationOf, splitForChat } from './render.js';

/** What the bot's outbox keeps with a relayed post, to tell the map once the service stored it. */
export interface RelayTag {
  /** The line's record key in the message map. */
  key: string;
  bus: boolean;
  first: boolean;
  /** For a line too long for one post: which part this is (1, 2, ...; the first part has none). */
  part?: number;
}

/** One bot, as the gateways reach it. */
export interface GatewayBot {
  name: string;
  speaker(): Speaker;
  /** The bot's chat that a bots.yaml entry names (subject or id), once joined. */
  chat(key: string): ChatInfo | undefined;
  /** Whether the bot is still logging in and joining its chats (a line for a chat not joined yet waits). */
  starting(): boolean;
  /** Queues a relayed post (written to the outbox before it returns); throws PostFailedError when the chat refuses it now. */
  postRelayed(chat: ChatInfo, text: string, tag: RelayTag): Promise<ChatMessage>;
  endpoint(instance: string): PlatformEndpoint | undefined;
  log: Logger;
}

/** How long a line from a relay waits for its chat to be joined while the bot starts. */
const JOIN_WAIT_MS = 60_000;

/**
 * The gateways at run time: which sides a line goes to, the message map, and the bots' outboxes.
 * The chat is the bus: a line from a relay is posted into the gateway's chats; the bot's own post of
 * it comes back through its chain, marked (`ctx.own.relayed`), and the last step of the chain
 * (`forward`) sends it on to the bot's relays. A chat message (a member's, or the bot's own voice)
 * goes from that same step to the relays and is posted into the gateway's other chats. A line never
 * goes back to its origin, and only ever travels within the gateways of its origin: a relayed post is
 * sent on only from its bus chat, never posted into chats again.
 */
export class GatewayRouter {
  private readonly bots = new Map<string, GatewayBot>();
  /** Per bot and chat id: the gateways that chat is in (the chain asks for every message). */
  private readonly chatGateways = new Map<string, Array<{ gateway: PlannedGateway; endpoint: PlannedChat }>>();
  readonly counters = { from_chats: 0, from_relays: 0, posted_to_chats: 0, sent_to_relays: 0, send_failed: 0, already_taken: 0, unrouted: 0 };

  constructor(
    readonly gateways: readonly PlannedGateway[],
    private readonly map: MessageMap,
    private readonly log: Logger,
  ) {}

  attach(bot: GatewayBot): void {
    this.bots.set(bot.name, bot);
  }

  /** Whether any gateway has a side of this bot (else its chain needs no gateway step). */
  involves(bot: string): boolean {
    return this.gateways.some((gateway) => gateway.endpoints.some((endpoint) => endpoint.bot === bot));
  }

  /** The port a relay instance of a bot gets as `env.gateway`. */
  port(bot: string, instance: string, channelKey: (channel: string) => string = (c) => c): GatewayPort {
    const channels = this.gateways.flatMap((gateway) => gateway.endpoints)
      .filter((e): e is PlannedChannel => e.kind === 'relay' && e.bot === bot && e.instance === instance);
    return {
      channels: () => [...new Map(channels.map((c) => [c.channelKey, c.channel])).values()],
      receive: (channel, message) => this.receive(bot, instance, channelKey(channel), message),
      posted: (key, channel, nativeId) => this.posted(bot, instance, channelKey(channel), key, nativeId),
      nativeOf: (key, channel) => this.nativeOf(bot, instance, channelKey(channel), key),
    };
  }

  /** The bot's own post as the chain sees it: a relayed line (from the map) or the bot's own voice. */
  ownPost(bot: string, chat: ChatInfo, message: ChatMessage): OwnPost {
    const endpoint = chatEndpointId(bot, chat.id);
    const record = this.map.find(endpoint, chatNativeId(message));
    if (!record || record.origin === endpoint) return {};
    const copy = Object.entries(record.copies).find(([where, c]) => c.id === chatNativeId(message) && (where === endpoint || where.startsWith(`${endpoint}#`)))?.[1];
    return {
      relayed: {
        gateway: record.gateway, endpoint: record.origin, platform: record.platform, nativeId: record.nativeId,
        kind: record.kind as OutgoingMessage['kind'], speaker: record.speaker, text: record.text,
        ...(record.replyTo !== undefined ? { replyTo: record.replyTo } : {}),
        bus: copy?.bus === true, first: copy?.first === true,
      },
    };
  }

  /** The service stored a relayed post: the map learns its chat message id. */
  confirmed(bot: string, chat: ChatInfo, tag: RelayTag, message: ChatMessage): void {
    const endpoint = chatEndpointId(bot, chat.id);
    const where = tag.part ? `${endpoint}#${tag.part}` : endpoint;
    this.map.addCopy(tag.key, where, tag.part ? { id: chatNativeId(message) } : { id: chatNativeId(message), bus: tag.bus, first: tag.first });
  }

  /**
   * The chain's last step for a chat message: to the bot's relays in the chat's gateways, and (for a
   * message said in this chat, not a relayed one) posted into the gateways' other chats.
   */
  forward(bot: string, ctx: PluginContext): void {
    const side = this.bots.get(bot);
    if (!side) return;
    const chatEndpoint = chatEndpointId(bot, ctx.chat.id);
    const relayed = ctx.own?.relayed;
    if (relayed && !relayed.bus) return;
    if (ctx.message.type !== 'chat_msg_type_normal') return;
    const memberships = this.gatewaysOfChat(bot, ctx.chat);
    if (memberships.length === 0) return;
    let record: MapRecord | undefined;
    if (relayed) {
      record = this.map.find(chatEndpoint, chatNativeId(ctx.message));
      if (!record) return;
    } else {
      this.counters.from_chats += 1;
      record = this.map.begin({
        key: `${chatEndpoint} ${chatNativeId(ctx.message)}`, gateway: memberships[0]!.gateway.name, origin: chatEndpoint, platform: 'chat',
        nativeId: chatNativeId(ctx.message), kind: 'message', speaker: ctx.sender, text: ctx.text,
      });
    }
    const sentTo = new Set<string>();
    const postedTo = new Set<string>();
    const firstFor = new Set<string>();
    for (const { gateway, endpoint } of memberships) {
      // A relayed line goes on only in the gateways of its origin; a chat message only where the chat takes in.
      if (relayed ? !this.contains(gateway, relayed.endpoint) : !takesIn(endpoint)) continue;
      for (const target of gateway.endpoints) {
        if (target === endpoint || !takesOut(target)) continue;
        if (target.kind === 'relay') {
          if (target.bot !== bot) continue; // its own bot sends it, from that bot's bus chat
          const targetId = relayEndpointId(target.platform, target.channelKey, bot, target.instance);
          if (targetId === record.origin || sentTo.has(targetId)) continue;
          sentTo.add(targetId);
          this.sendToRelay(side, target, targetId, record, gateway.name, ctx);
        } else if (!relayed) {
          const targetBot = this.bots.get(target.bot);
          const chat = targetBot?.chat(target.chat);
          if (!targetBot || !chat || chat.id === ctx.chat.id && target.bot === bot) continue;
          const targetId = chatEndpointId(target.bot, chat.id);
          if (postedTo.has(targetId)) continue;
          postedTo.add(targetId);
          // Another bot's first chat of this gateway is its bus (its relays send the line on from there).
          const other = target.bot !== bot;
          const bus = other && this.busOf(gateway, target.bot) === target;
          const first = other && !firstFor.has(target.bot);
          firstFor.add(target.bot);
          try {
            this.postCopy(targetBot, chat, record, chatLineOf(record, undefined), { key: record.key, bus, first });
          } catch (error) {
            this.counters.send_failed += 1;
            side.log.error({ err: error, chat: chat.subject, bot: target.bot }, 'a chat message could not be posted into another chat of its gateway');
          }
        }
      }
    }
  }

  /** Answers only where a relayed line came from (`ctx.reply(text, { only: 'origin' })`). */
  async answerAtOrigin(bot: string, ctx: Pick<PluginContext, 'message' | 'chat' | 'own'>, text: string): Promise<boolean> {
    const relayed = ctx.own?.relayed;
    const side = this.bots.get(bot);
    if (!relayed || !side) return false;
    const origin = this.gateways.flatMap((g) => g.endpoints).find((e): e is PlannedChannel =>
      e.kind === 'relay' && e.bot === bot && relayEndpointId(e.platform, e.channelKey, bot, e.instance) === relayed.endpoint);
    const endpoint = origin && side.endpoint(origin.instance);
    if (!origin || !endpoint) return false;
    endpoint.send(origin.channel, {
      key: JSON.stringify(['answer', chatEndpointId(bot, ctx.chat.id), chatNativeId(ctx.message), text]), gateway: relayed.gateway, kind: 'message', text,
      speaker: side.speaker(), origin: { endpoint: chatEndpointId(bot, ctx.chat.id), platform: 'chat', nativeId: chatNativeId(ctx.message) },
      time: new Date().toISOString(), source: { chat: ctx.chat, message: ctx.message },
    });
    return true;
  }

  /** A line said in a relay's channel: posted into the chats of every gateway the channel takes part in. */
  async receive(bot: string, instance: string, channelKey: string, message: IncomingMessage): Promise<void> {
    const origin = this.gateways.flatMap((g) => g.endpoints.map((endpoint) => ({ gateway: g, endpoint })))
      .filter(({ endpoint: e }) => e.kind === 'relay' && e.bot === bot && e.instance === instance && e.channelKey === channelKey);
    const entering = origin.filter(({ endpoint }) => takesIn(endpoint));
    if (entering.length === 0) {
      this.counters.unrouted += 1;
      return;
    }
    const first = origin[0]!.endpoint as PlannedChannel;
    const originId = relayEndpointId(first.platform, channelKey, bot, instance);
    const suffix = message.kind === 'edit' ? `~edit~${message.revision ?? message.time ?? Date.now()}` : message.kind === 'delete' ? '~delete' : '';
    const record = this.map.begin({
      key: `${originId} ${message.nativeId}${suffix}`, gateway: entering[0]!.gateway.name, origin: originId, platform: first.platform,
      nativeId: message.nativeId, kind: message.kind, speaker: message.speaker, text: message.text,
      ...(message.replyTo !== undefined ? { replyTo: message.replyTo } : {}),
      ...(message.namesParent ? { namesParent: true as const } : {}),
    });
    this.counters.from_relays += 1;
    const quoted = message.replyTo !== undefined ? this.map.find(originId, message.replyTo) : undefined;
    // A deletion quotes what was last said: the newest edit, else the message as first said.
    const changed = message.kind === 'delete' ? this.map.latestEdit(originId, message.nativeId) ?? this.map.find(originId, message.nativeId)
      : message.kind === 'edit' ? this.map.find(originId, message.nativeId) : undefined;
    const line = chatLineOf(record, message.chatText, record.namesParent ? undefined : quoted, changed);
    const targets: Array<{ bot: GatewayBot; chat: ChatInfo; id: string; bus: boolean }> = [];
    for (const { gateway } of entering) {
      for (const target of gateway.endpoints) {
        if (target.kind !== 'chat' || !takesOut(target)) continue;
        const targetBot = this.bots.get(target.bot);
        if (!targetBot) continue;
        const chat = await this.joined(targetBot, target.chat);
        const id = chatEndpointId(target.bot, chat.id);
        const known = targets.find((t) => t.id === id);
        const bus = this.busOf(gateway, target.bot) === target;
        if (known) known.bus ||= bus;
        else targets.push({ bot: targetBot, chat, id, bus });
      }
    }
    const firstOf = new Set<string>();
    for (const target of targets) {
      const isFirst = !firstOf.has(target.bot.name);
      firstOf.add(target.bot.name);
      this.postCopy(target.bot, target.chat, record, line, { key: record.key, bus: target.bus, first: isFirst });
    }
  }

  private posted(bot: string, instance: string, channelKey: string, key: string, nativeId: string): void {
    const recordKey = recordKeyOf(key);
    const endpoint = recordKey === undefined ? undefined : this.relayEndpoint(bot, instance, channelKey);
    if (recordKey !== undefined && endpoint) this.map.addCopy(recordKey, endpoint, { id: nativeId });
  }

  private nativeOf(bot: string, instance: string, channelKey: string, key: string): string | undefined {
    const recordKey = recordKeyOf(key);
    const record = recordKey === undefined ? undefined : this.map.get(recordKey);
    const endpoint = this.relayEndpoint(bot, instance, channelKey);
    return record && endpoint ? nativeIn(record, endpoint) : undefined;
  }

  private relayEndpoint(bot: string, instance: string, channelKey: string): string | undefined {
    const platform = this.gateways.flatMap((g) => g.endpoints).find((e): e is PlannedChannel => e.kind === 'relay' && e.bot === bot && e.instance === instance)?.platform;
    return platform ? relayEndpointId(platform, channelKey, bot, instance) : undefined;
  }

  /** Posts a line into a chat once: parts the map or the outbox already has are not posted again. */
  private postCopy(bot: GatewayBot, chat: ChatInfo, record: MapRecord, line: string, tag: RelayTag): void {
    const endpoint = chatEndpointId(bot.name, chat.id);
    splitForChat(line, continuationOf(record)).forEach((part, index) => {
      const where = index === 0 ? endpoint : `${endpoint}#${index}`;
      if (record.copies[where]) {
        this.counters.already_taken += 1;
        return;
      }
      const partTag = index === 0 ? tag : { key: tag.key, bus: false, first: false, part: index };
      bot.postRelayed(chat, part, partTag).then(() => {
        this.counters.posted_to_chats += 1;
      }, (error: unknown) => {
        this.counters.send_failed += 1;
        bot.log.error({ err: error, chat: chat.subject, line: record.key }, 'a relayed line was taken but could not be posted into the chat');
      });
    });
  }

  private sendToRelay(side: GatewayBot, target: PlannedChannel, targetId: string, record: MapRecord, gateway: string, ctx: PluginContext): void {
    const endpoint = side.endpoint(target.instance);
    if (!endpoint) return;
    const out = outgoingFor(record, targetId, gateway, ctx, {
      quoted: record.replyTo !== undefined ? this.map.find(record.origin, record.replyTo) : undefined,
      changed: record.kind === 'edit' || record.kind === 'delete' ? this.map.find(record.origin, record.nativeId) : undefined,
    });
    try {
      endpoint.send(target.channel, out);
      this.counters.sent_to_relays += 1;
    } catch (error) {
      this.counters.send_failed += 1;
      side.log.error({ err: error, channel: target.channel, plugin: target.instance, line: record.key }, 'a line could not be queued for a relay');
    }
  }

  private gatewaysOfChat(bot: string, chat: ChatInfo): Array<{ gateway: PlannedGateway; endpoint: PlannedChat }> {
    const cacheKey = `${bot}\u0000${chat.id}`;
    const known = this.chatGateways.get(cacheKey);
    if (known) return known;
    const side = this.bots.get(bot);
    const found = this.gateways.flatMap((gateway) => gateway.endpoints
      .filter((e): e is PlannedChat => e.kind === 'chat' && e.bot === bot && side?.chat(e.chat)?.id === chat.id)
      .map((endpoint) => ({ gateway, endpoint })));
    this.chatGateways.set(cacheKey, found);
    return found;
  }

  private contains(gateway: PlannedGateway, endpointId: string): boolean {
    return gateway.endpoints.some((e) => e.kind === 'relay'
      ? relayEndpointId(e.platform, e.channelKey, e.bot, e.instance) === endpointId
      : this.bots.get(e.bot)?.chat(e.chat) !== undefined && chatEndpointId(e.bot, this.bots.get(e.bot)!.chat(e.chat)!.id) === endpointId);
  }

  /** A bot's bus in a gateway: its first chat there that takes out. */
  private busOf(gateway: PlannedGateway, bot: string): PlannedChat | undefined {
    return gateway.endpoints.find((e): e is PlannedChat => e.kind === 'chat' && e.bot === bot && takesOut(e));
  }

  /** The bot's chat for a bots.yaml entry; while the bot starts, waits for it to be joined. */
  private async joined(bot: GatewayBot, key: string): Promise<ChatInfo> {
    const until = Date.now() + JOIN_WAIT_MS;
    for (;;) {
      const chat = bot.chat(key);
      if (chat) return chat;
      if (!bot.starting() || Date.now() > until) throw new PostFailedError(`bot ${bot.name} is not in a chat ${key}`);
      await sleep(250);
    }
  }
}
