import type { Logger } from 'pino';
import type { ChatMessage } from '../api/types.js';
import type { ChatInfo, GatewayPort, PluginContext } from '../pipeline/plugin.js';
import type { MapRecord, MessageMap } from '../store/message-map.js';
import { postCopy, type GatewayBot } from './gateway-bot.js';
import type { FileIntake } from './file-intake.js';
import { busOf, GatewayIntake } from './gateway-intake.js';
import { takesIn, takesOut, type PlannedChannel, type PlannedChat, type PlannedGateway } from './gateway-plan.js';
import { chatNativeId, nativeIn, recordKeyOf } from './map-keys.js';
import { chatEndpointId, relayEndpointId, type OutgoingMessage, type OwnPost } from './message.js';
import { outgoingFor } from './outgoing-line.js';
import { chatLineOf } from './render.js';
import type { RelayTag } from './gateway-bot.js';

export type { GatewayBot, RelayTag } from './gateway-bot.js';

/**
 * The gateways at run time: which sides a line goes to, the message map, and the bots' outboxes.
 * A line from a relay is taken by the intake (GatewayIntake): handed at once to the same bot's other
 * relays, and posted into the gateway's chats. The bot's own post of it comes back through its chain,
 * marked (`ctx.own.relayed`); where the chat is the line's bus (another bot's relay said it, or the
 * gateway keeps `through_chat`), the last step of the chain (`forward`) sends it on to the bot's
 * relays. A chat message (a member's, or the bot's own voice) goes from that same step to the relays
 * and is posted into the gateway's other chats. A line never goes back to its origin, and only ever
 * travels within the gateways of its origin: a relayed post is sent on only from its bus chat, never
 * posted into chats again.
 */
export class GatewayRouter {
  private readonly bots = new Map<string, GatewayBot>();
  /** Per bot and chat id: the gateways that chat is in (the chain asks for every message). */
  private readonly chatGateways = new Map<string, Array<{ gateway: PlannedGateway; endpoint: PlannedChat }>>();
  readonly counters = { from_chats: 0, from_relays: 0, posted_to_chats: 0, sent_to_relays: 0, send_failed: 0, already_taken: 0, unrouted: 0 };

  private readonly intake: GatewayIntake;

  constructor(
    readonly gateways: readonly PlannedGateway[],
    private readonly map: MessageMap,
    log: Logger,
    /** Reads the files said with a line into the media store (none: files are refused, "not kept here"). */
    files?: FileIntake,
  ) {
    this.intake = new GatewayIntake(gateways, map, this.bots, this.counters, log, files);
  }

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
      receive: (channel, message) => this.intake.receive(bot, instance, channelKey(channel), message),
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
        ...(record.files ? { files: record.files } : {}),
        ...(record.refusedFiles ? { refusedFiles: record.refusedFiles } : {}),
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
          const bus = other && busOf(gateway, target.bot) === target;
          const first = other && !firstFor.has(target.bot);
          firstFor.add(target.bot);
          try {
            postCopy(targetBot, chat, record, chatLineOf(record, undefined), { key: record.key, bus, first }, this.counters);
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

  private posted(bot: string, instance: string, channelKey: string, key: string, nativeId: string): void {
    const recordKey = recordKeyOf(key);
    const endpoint = recordKey === undefined ? undefined : this.relayEndpoint(bot, instance, channelKey);
    if (recordKey !== undefined && endpoint && !this.intake.earlyCopy(recordKey, endpoint, nativeId)) this.map.addCopy(recordKey, endpoint, { id: nativeId });
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

  private sendToRelay(side: GatewayBot, target: PlannedChannel, targetId: string, record: MapRecord, gateway: string, ctx: PluginContext): void {
    const endpoint = side.endpoint(target.instance);
    // A relay that posted the line has its copy in the map (a line the intake handed on, then taken round the chat too).
    if (!endpoint || record.copies[targetId]) return;
    const out = outgoingFor(record, targetId, gateway, { time: ctx.message.created, source: { chat: ctx.chat, message: ctx.message } }, {
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
}
