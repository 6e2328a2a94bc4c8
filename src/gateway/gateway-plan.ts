import type { LoadedConfig } from '../config/bots-config.js';
import type { LoadedPlugin } from '../config/plugin-loader.js';
import type { Direction } from './message.js';

/** A chat of a bot, as bots.yaml names it (subject or id; resolved to the chat's id once joined). */
export interface PlannedChat {
  kind: 'chat';
  bot: string;
  chat: string;
  direction: Direction;
}

/** A channel of one relay instance of a bot. */
export interface PlannedChannel {
  kind: 'relay';
  bot: string;
  /** The relay instance (`relay-irc`, `relay-irc-2`: as the bot's plugins name it). */
  instance: string;
  platform: string;
  /** The channel as written (sent this way). */
  channel: string;
  /** The channel in the form that compares equal (IRC folds case). */
  channelKey: string;
  direction: Direction;
}

export type PlannedEndpoint = PlannedChat | PlannedChannel;

export interface PlannedGateway {
  name: string;
  endpoints: PlannedEndpoint[];
  /** Made from a relay's own `channels:` mapping rather than bots.yaml's `gateways:`. */
  implied: boolean;
  /** Lines between relays go through the chat's chain first (`through_chat: true`), not straight from the intake. */
  throughChat: boolean;
}

export const takesIn = (endpoint: { direction: Direction }): boolean => endpoint.direction !== 'out';
export const takesOut = (endpoint: { direction: Direction }): boolean => endpoint.direction !== 'in';

/** An endpoint in words, for logs and `groupwire check`: `chat general (bot)`, `irc #general (bot/relay-irc), out`. */
export function describeEndpoint(endpoint: PlannedEndpoint): string {
  const where = endpoint.kind === 'chat' ? `chat ${endpoint.chat} (${endpoint.bot})` : `${endpoint.platform} ${endpoint.channel} (${endpoint.bot}/${endpoint.instance})`;
  return endpoint.direction === 'inout' ? where : `${where}, ${endpoint.direction}`;
}

/** A relay instance of a bot: its name in the bot's chain, and its platform. */
interface RelayInstance {
  instance: string;
  platform: string;
  channelKey: (channel: string) => string;
  /** Why lines may not be sent into this channel (the relay's options keep it read-only), if they may not. */
  refusesOut: (channel: string) => string | undefined;
}

/** The instance names a bot's plugins get: name, name-2, name-3, ... (as BotPlugins names them). */
export function instanceNames(plugins: readonly LoadedPlugin[]): string[] {
  const uses = new Map<string, number>();
  return plugins.map((plugin) => {
    const count = (uses.get(plugin.name) ?? 0) + 1;
    uses.set(plugin.name, count);
    return count === 1 ? plugin.name : `${plugin.name}-${count}`;
  });
}

/**
 * Every gateway of a bots.yaml: those it names, and one per chat that relays' own `channels:` map
 * (several relays of a bot mapping one chat make one gateway: IRC ⇄ chat ⇄ Slack). Returns the
 * problems found, each at its place in the file, instead of gateways when there are any.
 */
export function planGateways(loaded: LoadedConfig, plugins: readonly LoadedPlugin[][]): { gateways: PlannedGateway[]; problems: string[] } {
  const { config, source } = loaded;
  const problems: string[] = [];
  const relays = new Map<string, RelayInstance[]>();
  config.bots.forEach((bot, index) => {
    const loadedPlugins = plugins[index] ?? [];
    const names = instanceNames(loadedPlugins);
    relays.set(bot.name, loadedPlugins.flatMap((plugin, at) => {
      const platform = plugin.definition.platform;
      return platform ? [{
        instance: names[at]!, platform: platform.name, channelKey: platform.channelKey ?? ((c: string) => c),
        refusesOut: (channel: string) => platform.refusesOut?.(plugin.options, channel),
      }] : [];
    }));
  });

  /** Relays a named gateway names (even where that endpoint was refused): not "unused". */
  const named = new Set<string>();
  const explicit: PlannedGateway[] = config.gateways.map((gateway, gatewayIndex) => {
    const endpoints: PlannedEndpoint[] = [];
    gateway.endpoints.forEach((entry, endpointIndex) => {
      const path = ['gateways', gatewayIndex, 'endpoints', endpointIndex];
      const where = (key?: string) => source.where(key ? [...path, key] : path);
      const side = Object.keys(entry).find((key) => !['bot', 'plugin', 'direction'].includes(key))!;
      const value = String((entry as Record<string, unknown>)[side]);
      const botName = entry.bot ?? (config.bots.length === 1 ? config.bots[0]!.name : undefined);
      const bot = config.bots.find((b) => b.name === botName);
      if (!bot) {
        problems.push(entry.bot
          ? `${where('bot')}: no bot named ${entry.bot} (bots: ${config.bots.map((b) => b.name).join(', ')})`
          : `${where()}: say which bot's ${side} this is (bot: <name>); bots.yaml has ${config.bots.length} bots`);
        return;
      }
      if (side === 'chat') {
        if (!bot.chats.some((chat) => chat.chat === value)) {
          problems.push(`${where('chat')}: bot ${bot.name} has no chat ${value} in its chats (write it as its chats entry does: ${bot.chats.map((c) => c.chat).join(', ')})`);
          return;
        }
        endpoints.push({ kind: 'chat', bot: bot.name, chat: value, direction: entry.direction });
        return;
      }
      const ofPlatform = (relays.get(bot.name) ?? []).filter((relay) => relay.platform === side);
      const relay = entry.plugin ? ofPlatform.find((r) => r.instance === entry.plugin) : ofPlatform[0];
      if (!relay) {
        const known = [...new Set((relays.get(bot.name) ?? []).map((r) => r.platform))];
        problems.push(entry.plugin
          ? `${where('plugin')}: bot ${bot.name} has no ${side} relay named ${entry.plugin} (its ${side} relays: ${ofPlatform.map((r) => r.instance).join(', ') || 'none'})`
          : `${where(side)}: bot ${bot.name} has no relay for ${side} in its plugins${known.length > 0 ? ` (its relays: ${known.join(', ')})` : ' (add one, e.g. use: relay-irc)'}; an endpoint is chat: or a relay's platform`);
        return;
      }
      if (!entry.plugin && ofPlatform.length > 1) {
        problems.push(`${where(side)}: bot ${bot.name} has ${ofPlatform.length} ${side} relays; say which with plugin: (${ofPlatform.map((r) => r.instance).join(', ')})`);
        return;
      }
      named.add(`${bot.name}\u0000${relay.instance}`);
      const readOnly = takesOut(entry) ? relay.refusesOut(value) : undefined;
      if (readOnly) {
        problems.push(`${where('direction')}: ${side}: ${value} takes lines (direction: ${entry.direction}), but ${readOnly}; write direction: in`);
        return;
      }
      endpoints.push({
        kind: 'relay', bot: bot.name, instance: relay.instance, platform: relay.platform,
        channel: value, channelKey: relay.channelKey(value), direction: entry.direction,
      });
    });
    return { name: gateway.name, endpoints, implied: false, throughChat: gateway.through_chat };
  });

  const implied = impliedGateways(loaded, plugins, explicit);
  const gateways = [...explicit, ...implied];
  problems.push(...busProblems(gateways, loaded), ...unusedRelayProblems(gateways, loaded, plugins, named));
  return { gateways: problems.length > 0 ? [] : gateways, problems };
}

/**
 * One gateway per (bot, chat) that relays' own options map, joining the chat and every channel mapped
 * to it; named after the chat (`<bot>/<chat>` when bots.yaml has several bots). A pairing that a named
 * gateway already joins (the same chat and channel) is left to it.
 */
function impliedGateways(loaded: LoadedConfig, plugins: readonly LoadedPlugin[][], explicit: PlannedGateway[]): PlannedGateway[] {
  const { config } = loaded;
  const byChat = new Map<string, PlannedGateway>();
  const named = (bot: string, chat: string, endpoint: PlannedChannel) => explicit.some((gateway) =>
    gateway.endpoints.some((e) => e.kind === 'chat' && e.bot === bot && e.chat === chat) &&
    gateway.endpoints.some((e) => e.kind === 'relay' && e.bot === bot && e.instance === endpoint.instance && e.channelKey === endpoint.channelKey));
  config.bots.forEach((bot, index) => {
    const loadedPlugins = plugins[index] ?? [];
    const names = instanceNames(loadedPlugins);
    loadedPlugins.forEach((plugin, at) => {
      const platform = plugin.definition.platform;
      if (!platform) return;
      for (const pair of platform.channels(plugin.options)) {
        const endpoint: PlannedChannel = {
          kind: 'relay', bot: bot.name, instance: names[at]!, platform: platform.name,
          channel: pair.channel, channelKey: (platform.channelKey ?? ((c: string) => c))(pair.channel), direction: pair.direction,
        };
        if (named(bot.name, pair.chat, endpoint)) continue;
        const key = `${bot.name}\u0000${pair.chat}`;
        let gateway = byChat.get(key);
        if (!gateway) {
          gateway = { name: config.bots.length > 1 ? `${bot.name}/${pair.chat}` : pair.chat, implied: true, throughChat: false, endpoints: [{ kind: 'chat', bot: bot.name, chat: pair.chat, direction: 'inout' }] };
          byChat.set(key, gateway);
        }
        gateway.endpoints.push(endpoint);
      }
    });
  });
  return [...byChat.values()];
}

/**
 * A line from another bot's side (its relay or chat), or from a relay of the same bot in a gateway
 * with `through_chat`, reaches a bot's relay through a chat of that bot in the gateway that takes
 * `out` (the line is posted there, and sent on when it comes back). A gateway where that cannot happen
 * would drop lines silently, so it is refused. Lines between relays of one bot need no chat otherwise:
 * the intake hands them on.
 */
function busProblems(gateways: PlannedGateway[], loaded: LoadedConfig): string[] {
  const problems: string[] = [];
  for (const gateway of gateways) {
    for (const target of gateway.endpoints) {
      if (target.kind !== 'relay' || !takesOut(target)) continue;
      // A chat of the same bot reaches the relay straight from its chain, a relay of it from the intake; anything else goes through the bus.
      const needsBus = gateway.endpoints.some((e) => e !== target && takesIn(e) && (e.bot !== target.bot || (e.kind === 'relay' && gateway.throughChat)));
      const bus = gateway.endpoints.some((e) => e.kind === 'chat' && e.bot === target.bot && takesOut(e));
      if (!needsBus || bus) continue;
      const where = gateway.implied ? loaded.source.file : loaded.source.where(['gateways', loaded.config.gateways.findIndex((g) => g.name === gateway.name), 'name']);
      problems.push(`${where}: gateway ${gateway.name}: lines for ${target.platform} ${target.channel} (bot ${target.bot}) travel through a chat of bot ${target.bot} that takes out${gateway.throughChat ? ' (through_chat: true)' : ''}, and the gateway has none; add one of its chats to the gateway (lines from elsewhere are posted there and sent on)`);
    }
  }
  return problems;
}

/** A relay that no gateway uses would join nothing and relay nothing: almost surely a mistake in bots.yaml. */
function unusedRelayProblems(gateways: PlannedGateway[], loaded: LoadedConfig, plugins: readonly LoadedPlugin[][], named: Set<string>): string[] {
  const problems: string[] = [];
  loaded.config.bots.forEach((bot, botIndex) => {
    const loadedPlugins = plugins[botIndex] ?? [];
    const names = instanceNames(loadedPlugins);
    loadedPlugins.forEach((plugin, at) => {
      if (!plugin.definition.platform) return;
      const used = named.has(`${bot.name}\u0000${names[at]}`) ||
        gateways.some((g) => g.endpoints.some((e) => e.kind === 'relay' && e.bot === bot.name && e.instance === names[at]));
      if (!used) {
        problems.push(`${loaded.source.where(['bots', botIndex, 'plugins', at, 'use'])}: ${names[at]} relays nothing: map a chat to a channel in its channels:, or name its channels in a gateway (gateways:)`);
      }
    });
  });
  return problems;
}
