import type { Logger } from 'pino';
import { sleep } from '../chat/backoff.js';
import type { Attachment, RefusedFile } from '../media/attachment.js';
import type { ChatInfo } from '../pipeline/plugin.js';
import type { MapRecord, MessageMap } from '../store/message-map.js';
import { joined, postCopy, type GatewayBot, type PostCounters } from './gateway-bot.js';
import { takesIn, takesOut, type PlannedChannel, type PlannedChat, type PlannedEndpoint, type PlannedGateway } from './gateway-plan.js';
import type { FileIntake } from './file-intake.js';
import { chatEndpointId, relayEndpointId, type IncomingMessage } from './message.js';
import { outgoingFor } from './outgoing-line.js';
import { chatLineOf } from './render.js';

export interface IntakeCounters extends PostCounters {
  from_relays: number;
  sent_to_relays: number;
  unrouted: number;
}

/** How long a line handed on while the bot's plugins start waits for the relays after it to start. */
const START_WAIT_MS = 30_000;

/** A relay channel of the same bot that takes a line at intake, and the gateway it is reached in. */
interface RelayTarget {
  gateway: PlannedGateway;
  endpoint: PlannedChannel;
  id: string;
}

/** Where a channel's lines go: the gateways it takes in from, and the same bot's relays they reach. */
interface Route {
  entering: PlannedGateway[];
  relays: RelayTarget[];
  /** Some gateway the line enters keeps today's path (`through_chat`): the relays get it from the chat. */
  throughChat: boolean;
}

/**
 * The gateway's intake: a line said in a relay's channel (`env.gateway.receive`). It is begun in the
 * message map, handed at once to the same bot's other relays in the channel's gateways (their durable
 * queues), and posted into the gateways' chats, all before the first await, so lines of one origin
 * keep their order. The chat is one side among the others: the bot's post of the line is marked as no
 * bus for its own bot (its relays had the line), so the chain's last step does not send it on again;
 * another bot's chat stays that bot's bus (its relays may run in another worker: docs/scale-out.md).
 * A gateway with `through_chat` keeps the older path: relays get the line from the bot's post once
 * the chain saw it (a filter in the chain can then keep it from them).
 */
export class GatewayIntake {
  private readonly routes = new Map<string, Route>();
  /** Copies that relays told of (`posted`) while being handed a line, before the map noted the line; noted right after. */
  private readonly early = new Map<string, Array<{ endpoint: string; id: string }>>();
  /**
   * Per origin channel, while a line's files are read: the turn of the last line queued behind them
   * (it resolves once that line was taken up, in order). Empty in the common case (no files).
   */
  private readonly reading = new Map<string, Promise<void>>();

  constructor(
    private readonly gateways: readonly PlannedGateway[],
    private readonly map: MessageMap,
    private readonly bots: ReadonlyMap<string, GatewayBot>,
    private readonly counters: IntakeCounters,
    private readonly log: Logger,
    private readonly files?: FileIntake,
  ) {}

  /**
   * A line from a relay's channel. A line with files has them read into the media store first
   * (FileIntake: bounded by the stall timeout), and the channel's lines after it wait their turn behind
   * it, so they keep their order; a line without files and none being read goes on at once, as before.
   */
  receive(bot: string, instance: string, channelKey: string, message: IncomingMessage): Promise<void> {
    const origin = `${bot}\u0000${instance}\u0000${channelKey}`;
    const ahead = this.reading.get(origin);
    if (ahead === undefined && !message.files?.length) return this.take(bot, instance, channelKey, message, undefined);
    let taken: Promise<void> | undefined;
    const turn = (ahead ?? Promise.resolve()).then(async () => {
      const read = message.files?.length ? await this.readFiles(bot, instance, channelKey, message) : undefined;
      taken = this.take(bot, instance, channelKey, message, read);
    });
    this.reading.set(origin, turn);
    const done = () => {
      if (this.reading.get(origin) === turn) this.reading.delete(origin);
    };
    turn.then(done, done);
    return turn.then(() => taken);
  }

  /** A line's files into the store; none read again for a line the map knows (a relay handing it again keeps what was read then). */
  private async readFiles(bot: string, instance: string, channelKey: string, message: IncomingMessage): Promise<{ files: Attachment[]; refused: RefusedFile[] } | undefined> {
    const here = (e: PlannedEndpoint): e is PlannedChannel => e.kind === 'relay' && e.bot === bot && e.instance === instance && e.channelKey === channelKey;
    const first = this.gateways.flatMap((g) => g.endpoints).find(here);
    // A line no gateway takes in from is not relayed: its files are not read either.
    if (!first || this.route(bot, instance, channelKey, here, first.platform).entering.length === 0) return undefined;
    if (this.map.get(this.keyOf(relayEndpointId(first.platform, channelKey, bot, instance), message))) return undefined;
    if (!this.files) return { files: [], refused: message.files!.map((file) => ({ name: file.name || 'file', reason: 'files are not kept here' })) };
    return this.files.read(message.files!);
  }

  private keyOf(originId: string, message: IncomingMessage): string {
    const suffix = message.kind === 'edit' ? `~edit~${message.revision ?? message.time ?? Date.now()}` : message.kind === 'delete' ? '~delete' : '';
    return `${originId} ${message.nativeId}${suffix}`;
  }

  private async take(bot: string, instance: string, channelKey: string, message: IncomingMessage, read: { files: Attachment[]; refused: RefusedFile[] } | undefined): Promise<void> {
    const here = (e: PlannedEndpoint): e is PlannedChannel => e.kind === 'relay' && e.bot === bot && e.instance === instance && e.channelKey === channelKey;
    const first = this.gateways.flatMap((g) => g.endpoints).find(here);
    const route = first && this.route(bot, instance, channelKey, here, first.platform);
    if (!first || !route || route.entering.length === 0) {
      this.counters.unrouted += 1;
      return;
    }
    const originId = relayEndpointId(first.platform, channelKey, bot, instance);
    const fields = {
      key: this.keyOf(originId, message), gateway: route.entering[0]!.name, origin: originId, platform: first.platform,
      nativeId: message.nativeId, kind: message.kind, speaker: message.speaker, text: message.text,
      ...(message.replyTo !== undefined ? { replyTo: message.replyTo } : {}),
      ...(message.namesParent ? { namesParent: true as const } : {}),
      ...(read?.files.length ? { files: read.files } : {}),
      ...(read?.refused.length ? { refusedFiles: read.refused } : {}),
    };
    this.counters.from_relays += 1;
    const quoted = message.replyTo !== undefined ? this.map.find(originId, message.replyTo) : undefined;
    // A deletion quotes what was last said: the newest edit, else the message as first said.
    const changed = message.kind === 'delete' ? this.map.latestEdit(originId, message.nativeId) ?? this.map.find(originId, message.nativeId)
      : message.kind === 'edit' ? this.map.find(originId, message.nativeId) : undefined;
    const side = this.bots.get(bot);
    // A relay that hands on lines while the bot's plugins still start (the HTTP API's intake, a
    // catch-up) would find the relays after it in bots.yaml without a queue yet: the line waits until
    // they have started, so it goes the same way as the lines after it (one way for all keeps them in
    // order). Bounded, for a plugin whose start() itself waits on the gateway.
    const relaysUp = () => side !== undefined && route.relays.every((t) => side.endpoint(t.endpoint.instance) !== undefined);
    if (side && !route.throughChat && !relaysUp()) {
      const waited = new AbortController();
      await Promise.race([side.pluginsStarted(), sleep(START_WAIT_MS, waited.signal)]);
      waited.abort(); // the timer goes with it
    }
    // A relay still not running (one that could not start) has no queue to take the line: the line goes
    // the older way, from the bot's post in the chat, to the relays that run when the chain sees it.
    const direct = side !== undefined && !route.throughChat && relaysUp();
    // A line the map knows was taken before (a relay handing it again: a retry, a redelivery after a
    // crash, a resync): the relays had it then, before the map noted it, or (taken by a version before
    // the intake) get it from the chat. Only a new line is handed on, and before the map notes it, so
    // a kill between the two can only hand it on again (under the same keys), never lose it.
    const handOn = direct && !this.map.get(fields.key);
    if (handOn) {
      this.early.set(fields.key, []);
      this.sendToRelays(side, route, { ...fields, at: Date.now(), copies: {} }, message, quoted);
    }
    let record: MapRecord;
    try {
      // Known to the map at once (a line handed again meanwhile is not handed on twice); for a line the
      // relays took, its journal line waits until their senders wrote it out (below).
      record = handOn && route.relays.length > 0 ? this.map.beginLater(fields) : this.map.begin(fields);
      for (const copy of this.early.get(fields.key) ?? []) this.map.addCopy(record.key, copy.endpoint, { id: copy.id });
    } finally {
      this.early.delete(fields.key);
    }
    // The relays' queues took the line (relay-irc wrote it out already, within its send); the senders
    // that wait on their queue's wake-up take their first step in the microtasks queued so far, then the
    // map's note and the chat's post follow, in one microtask: not a turn later, behind every other
    // relay's client library (with seven relays on one event loop that was 4-5 ms before the chat had
    // the line, #32 part 1). Lines of one origin still reach the chats in order (microtasks run in the
    // order they were queued). The note is written before the post (the bot's outbox names the line's record).
    if (handOn && route.relays.length > 0) {
      await Promise.resolve();
      this.map.flush();
    }
    const line = chatLineOf(record, message.chatText, record.namesParent ? undefined : quoted, changed);
    const targets: Array<{ bot: GatewayBot; chat: ChatInfo; id: string; bus: boolean }> = [];
    for (const gateway of route.entering) {
      for (const target of gateway.endpoints) {
        if (target.kind !== 'chat' || !takesOut(target)) continue;
        const targetBot = this.bots.get(target.bot);
        if (!targetBot) continue;
        const chat = targetBot.chat(target.chat) ?? await joined(targetBot, target.chat);
        const id = chatEndpointId(target.bot, chat.id);
        const known = targets.find((t) => t.id === id);
        // The origin's own bot sent the line to its relays already (unless the gateway keeps it through the chat).
        const isBus = busOf(gateway, target.bot) === target && (target.bot !== bot || !direct);
        if (known) known.bus ||= isBus;
        else targets.push({ bot: targetBot, chat, id, bus: isBus });
      }
    }
    const firstOf = new Set<string>();
    for (const target of targets) {
      const isFirst = !firstOf.has(target.bot.name);
      firstOf.add(target.bot.name);
      postCopy(target.bot, target.chat, record, line, { key: record.key, bus: target.bus, first: isFirst }, this.counters);
    }
  }

  /** A relay posted line `key` at once, while the intake was handing it on: kept for the map, which notes the line next (false: not such a line). */
  earlyCopy(key: string, endpoint: string, id: string): boolean {
    const copies = this.early.get(key);
    copies?.push({ endpoint, id });
    return copies !== undefined;
  }

  /**
   * The line to each of the bot's other relays in its gateways, once each, never to its origin: with
   * the key the chain's last step gives it (so a line handed on the old way before an upgrade is not
   * sent again), its native ids there of what it answers or changes, and the bot's bus chat of the
   * gateway as its source. An edit or a deletion changes each relay's copy of the message as first said.
   */
  private sendToRelays(side: GatewayBot, route: Route, record: MapRecord, message: IncomingMessage, quoted: MapRecord | undefined): void {
    const changed = record.kind === 'edit' || record.kind === 'delete' ? this.map.find(record.origin, record.nativeId) : undefined;
    const time = message.time ?? new Date().toISOString();
    for (const target of route.relays) {
      const endpoint = side.endpoint(target.endpoint.instance)!; // receive() checked every one
      const bus = busOf(target.gateway, side.name);
      const chat = bus && side.chat(bus.chat);
      try {
        endpoint.send(target.endpoint.channel, outgoingFor(record, target.id, target.gateway.name, { time, source: chat ? { chat } : {} }, { quoted, changed }));
        this.counters.sent_to_relays += 1;
      } catch (error) {
        this.counters.send_failed += 1;
        this.log.error({ err: error, channel: target.endpoint.channel, plugin: target.endpoint.instance, line: record.key }, 'a line could not be queued for a relay');
      }
    }
  }

  /** The gateways a channel's lines enter and the same bot's relays they reach (the plan does not change while running). */
  private route(bot: string, instance: string, channelKey: string, here: (e: PlannedEndpoint) => e is PlannedChannel, platform: string): Route {
    const cacheKey = `${bot}\u0000${instance}\u0000${channelKey}`;
    const known = this.routes.get(cacheKey);
    if (known) return known;
    const originId = relayEndpointId(platform, channelKey, bot, instance);
    const entering = this.gateways.filter((g) => g.endpoints.some((e) => here(e) && takesIn(e)));
    const relays: RelayTarget[] = [];
    for (const gateway of entering) {
      for (const target of gateway.endpoints) {
        if (target.kind !== 'relay' || target.bot !== bot || !takesOut(target)) continue;
        const id = relayEndpointId(target.platform, target.channelKey, bot, target.instance);
        if (id === originId || relays.some((r) => r.id === id)) continue;
        relays.push({ gateway, endpoint: target, id });
      }
    }
    const route = { entering, relays, throughChat: entering.some((g) => g.throughChat) };
    this.routes.set(cacheKey, route);
    return route;
  }
}

/** A bot's bus in a gateway: its first chat there that takes out. */
export function busOf(gateway: PlannedGateway, bot: string): PlannedChat | undefined {
  return gateway.endpoints.find((e): e is PlannedChat => e.kind === 'chat' && e.bot === bot && takesOut(e));
}
