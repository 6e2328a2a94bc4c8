import { join } from 'node:path';
import type { Logger } from 'pino';
import type { GroupsClient } from '../api/client.js';
import type { ChatMessage } from '../api/types.js';
import type { LoadedPlugin } from '../config/plugin-loader.js';
import { PluginChain, type BaseContext, type ChainLink, type LinkStats } from '../pipeline/chain.js';
import type { LatencyHistogram } from '../pipeline/latency-histogram.js';
import { LinkContext } from '../pipeline/link-context.js';
import { instanceNames } from '../gateway/gateway-plan.js';
import type { GatewayRouter } from '../gateway/gateway-router.js';
import type {
  BotInfo, ChatInfo, ChatReset, ChatTarget, GatewayPort, PlatformEndpoint, PluginContext, PluginEnv, PluginStatus,
} from '../pipeline/plugin.js';
import { KeyValueStore } from '../store/kv-store.js';

/** The gateway step keeps nothing of its own. */
const NO_STORE = KeyValueStore.memory();

export interface BotPluginsOptions {
  plugins: LoadedPlugin[];
  /** The bot's state dir: each instance's store and data dir live under it. */
  dir: string;
  configDir: string;
  client: GroupsClient;
  log: Logger;
  /** Aborted first thing when the bot stops (plugins' env.stopping). */
  stopping: AbortSignal;
  /** Aborted once the bot's chats are down: runs still going are ended. */
  stopped: AbortSignal;
  send(chat: ChatTarget, text: string): Promise<ChatMessage>;
  chats(): ChatInfo[];
  /** The gateways of the process: relays get their port, and the chain ends with the gateway step. */
  gateways?: GatewayRouter;
}

/** The port of a relay no gateway uses (or of a plugin that is not a relay): it joins nothing. */
const NO_GATEWAY: GatewayPort = {
  channels: () => [],
  receive: () => Promise.resolve(),
  posted: () => undefined,
};

/**
 * One bot's plugin instances: made and started once, in bots.yaml's order, each with its own store,
 * data dir and child logger; the chain that hands them each message; their hooks for the bot's own
 * messages and for a chat's history reset; their stop, in reverse order. A plugin that fails (to start,
 * in a hook, to stop) is logged and does not take the others down.
 */
export class BotPlugins {
  private links: ChainLink[] = [];
  private chain: PluginChain | undefined;
  private readonly stores: KeyValueStore[] = [];
  /** Each instance's plugin (definition) name: `relay-irc-2` is a `relay-irc`. */
  private readonly definitionOf = new Map<string, string>();

  constructor(private readonly options: BotPluginsOptions) {}

  get started(): boolean {
    return this.chain !== undefined;
  }

  async start(bot: BotInfo): Promise<void> {
    const { options } = this;
    const links: ChainLink[] = [];
    // A second instance of the same plugin gets its own files: name, name-2, name-3, ... (as the gateways name them).
    const names = instanceNames(options.plugins);
    for (const [index, plugin] of options.plugins.entries()) {
      const instanceName = names[index]!;
      const log = options.log.child({ plugin: instanceName });
      const store = await KeyValueStore.open(join(options.dir, 'kv', `${instanceName}.json`));
      this.stores.push(store);
      this.definitionOf.set(instanceName, plugin.definition.name);
      const platform = plugin.definition.platform;
      const env: PluginEnv = {
        bot, log, client: options.client, store, configDir: options.configDir, dataDir: join(options.dir, 'plugins', instanceName),
        stopping: options.stopping,
        send: (chat, text) => options.send(chat, text),
        chats: () => options.chats(),
        gateway: platform && options.gateways ? options.gateways.port(bot.name, instanceName, platform.channelKey) : NO_GATEWAY,
        ownPost: (chat, message) => String(message.user_id) !== String(bot.userId) ? undefined : (options.gateways?.ownPost(bot.name, chat, message) ?? {}),
      };
      try {
        const instance = await plugin.definition.create(plugin.options, env);
        await instance.start?.();
        links.push({
          name: instanceName, instance, timeoutMs: plugin.timeoutMs, log, ownPosts: plugin.definition.ownPosts !== false,
          context: (base, signal) => new LinkContext(base, log, store, signal),
        });
      } catch (error) {
        // A plugin that cannot start is left out; the rest of the chain still runs.
        log.error({ err: error }, 'plugin could not start; it is left out of the chain');
      }
    }
    const gateways = options.gateways;
    if (gateways?.involves(bot.name)) links.push(gatewayStep(gateways, bot.name, options.log.child({ plugin: 'gateway' })));
    this.links = links;
    this.chain = new PluginChain(links, options.stopped);
  }

  /** Hands a member's message through the chain (start() must have run). */
  run(base: BaseContext): Promise<void> {
    return this.chain!.run(base);
  }

  /** A relay instance's side of the gateways (`PluginInstance.endpoint`), by its name in the chain. */
  endpoint(instance: string): PlatformEndpoint | undefined {
    return this.links.find((link) => link.name === instance)?.instance.endpoint;
  }

  /** A chat's history was reset: every plugin's chatReset hook, in chain order, each awaited. */
  async reset(reset: ChatReset): Promise<void> {
    for (const link of this.links) {
      if (!link.instance.chatReset) continue;
      try {
        await link.instance.chatReset(reset);
      } catch (error) {
        link.log.error({ err: error, chat: reset.chat.subject }, 'plugin failed to reset for the chat\'s new history');
      }
    }
  }

  /** Stops the plugins in reverse order, then saves their stores. */
  async stop(): Promise<void> {
    for (const link of this.links.toReversed()) {
      try {
        await link.instance.stop?.();
      } catch (error) {
        link.log.error({ err: error }, 'plugin failed to stop');
      }
    }
    await Promise.all(this.stores.map((store) => store.flush()));
  }

  /** Per instance, for the operations endpoint: its plugin, the chain's counters and latency, its own stats() and status(). */
  reports(): PluginReport[] {
    const chain = this.chain;
    if (!chain) return [];
    return this.links.map((link) => {
      const plugin = this.definitionOf.get(link.name) ?? link.name;
      return {
        instance: link.name, plugin, chain: chain.stats.get(link.name)!, latency: chain.latency.get(link.name)!,
        stats: safely(() => link.instance.stats?.(), link.log) ?? {}, status: safely(() => link.instance.status?.(), link.log) ?? {},
      };
    });
  }

  /** Per instance: the chain's counters and the plugin's own stats(). */
  stats(): Record<string, Record<string, number>> {
    return Object.fromEntries([...(this.chain?.stats ?? [])].map(([name, chain]) => {
      const own = this.links.find((link) => link.name === name)?.instance.stats?.();
      return [name, { ...chain, ...own }];
    }));
  }
}

/** One plugin instance as the operations endpoint reports it. */
export interface PluginReport {
  instance: string;
  /** The plugin's definition name (`relay-irc`), the metric names' prefix. */
  plugin: string;
  chain: LinkStats;
  latency: LatencyHistogram;
  stats: Record<string, number>;
  status: PluginStatus;
}

/** A plugin's stats() or status() that throws is logged and reported as empty: a scrape never fails for it. */
function safely<T>(read: () => T, log: Logger): T | undefined {
  try {
    return read();
  } catch (error) {
    log.warn({ err: error }, 'plugin stats() or status() failed');
    return undefined;
  }
}

/**
 * The chain's last step when the bot takes part in gateways: each message that got this far (no plugin
 * before it ended the chain: a filter keeps a message from every side) goes on to the gateway's other sides.
 */
function gatewayStep(gateways: GatewayRouter, bot: string, log: Logger): ChainLink {
  const instance = {
    handle(ctx: PluginContext, next: () => Promise<void>) {
      gateways.forward(bot, ctx);
      return next();
    },
    stats: () => ({ ...gateways.counters }),
  };
  return { name: 'gateway', instance, timeoutMs: 5_000, log, ownPosts: true, context: (base, signal) => new LinkContext(base, log, NO_STORE, signal) };
}
