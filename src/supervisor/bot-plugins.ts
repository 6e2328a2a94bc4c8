import type { MediaFiles } from '../media/attachment.js';
import { MediaStore } from '../media/media-store.js';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { GroupsClient } from '../api/client.js';
import type { ChatMessage } from '../api/types.js';
import type { LoadedPlugin } from '../config/plugin-loader.js';
import { DONE, PluginChain, type BaseContext, type ChainLink, type LinkStats } from '../pipeline/chain.js';
import type { LatencyHistogram } from '../pipeline/latency-histogram.js';
import { LinkContext } from '../pipeline/link-context.js';
import { instanceNames } from '../gateway/gateway-plan.js';
import type { GatewayRouter } from '../gateway/gateway-router.js';
import type {
  BotInfo, ChatInfo, ChatReset, ChatTarget, GatewayPort, PlatformEndpoint, PluginContext, PluginEnv, PluginInstance, PluginStatus,
} from '../pipeline/plugin.js';
import { KeyValueStore } from '../store/kv-store.js';
import type { Storage } from '../store/storage.js';
import { gatewayStep, isGatewayStep } from './gateway-step.js';
import { relaySideKey, type SideTraffic } from './side-traffic.js';
import { carryOver, restartReasons, stopLink } from './reload-chain.js';


export interface BotPluginsOptions {
  plugins: LoadedPlugin[];
  /** The bot's state dir: each instance's store and data dir live under it. */
  dir: string;
  /** Where the stores write (files, or Redis for a worker's unit). */
  storage: Storage;
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
  /** Counts the lines each side hands to the gateways (the status page's "in"). */
  linesIn?: SideTraffic;
  /** The process's media store (files across the gateway); default: `media` under the bot's state dir. */
  media?: MediaFiles;
}

/** The port of a relay no gateway uses (or of a plugin that is not a relay): it joins nothing. */
const NO_GATEWAY: GatewayPort = {
  channels: () => [],
  receive: () => Promise.resolve(),
  posted: () => undefined,
  nativeOf: () => undefined,
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
  /** Each instance's store, by instance name: a plugin restarted by a reload keeps its store. */
  private readonly stores = new Map<string, KeyValueStore>();
  /** Each instance's plugin (definition) name: `relay-irc-2` is a `relay-irc`. */
  private readonly definitionOf = new Map<string, string>();
  /** The plugins of bots.yaml now (a reload replaces them), and the gateways of the process. */
  private plugins: LoadedPlugin[];
  private gateways: GatewayRouter | undefined;
  private bot: BotInfo | undefined;
  /** While a reload swaps the chain: new messages wait for it (see reload()). */
  private held: Promise<void> | undefined;
  /** Messages in the chain now (one per chat at most: each chat's sequencer awaits its delivery). */
  private inFlight = 0;
  private drained: (() => void) | undefined;
  /** Resolves once start() has started every plugin (relays that hand lines on while others start wait for it). */
  private readonly allStarted: Promise<void>;
  private markStarted: () => void = () => {};

  constructor(private readonly options: BotPluginsOptions) {
    this.plugins = options.plugins;
    this.gateways = options.gateways;
    this.allStarted = new Promise((resolve) => {
      this.markStarted = resolve;
    });
  }

  /** Resolves once every plugin of the first start has started (at once after that). */
  whenStarted(): Promise<void> {
    return this.allStarted;
  }

  get started(): boolean {
    return this.chain !== undefined;
  }

  async start(bot: BotInfo): Promise<void> {
    this.bot = bot;
    const links: ChainLink[] = [];
    // A second instance of the same plugin gets its own files: name, name-2, name-3, ... (as the gateways name them).
    const names = instanceNames(this.plugins);
    for (const [index, plugin] of this.plugins.entries()) {
      const link = await this.startInstance(plugin, names[index]!);
      if (link) links.push(link);
    }
    this.links = this.withGatewayStep(links);
    this.chain = new PluginChain(this.links, this.options.stopped);
    this.markStarted();
  }

  /** Makes and starts one instance; undefined (logged) when it cannot start: the rest of the chain still runs. */
  private async startInstance(plugin: LoadedPlugin, instanceName: string): Promise<ChainLink | undefined> {
    const { options } = this;
    const bot = this.bot!;
    const log = options.log.child({ plugin: instanceName });
    let store = this.stores.get(instanceName);
    if (!store) this.stores.set(instanceName, (store = await KeyValueStore.open(join(options.dir, 'kv', `${instanceName}.json`), options.storage)));
    this.definitionOf.set(instanceName, plugin.definition.name);
    const platform = plugin.definition.platform;
    const env: PluginEnv = {
      bot, log, client: options.client, store, configDir: options.configDir, dataDir: join(options.dir, 'plugins', instanceName), storage: options.storage,
      stopping: options.stopping,
      send: (chat, text) => options.send(chat, text),
      chats: () => options.chats(),
      gateway: platform ? this.portOf(bot.name, instanceName, platform.channelKey) : NO_GATEWAY,
      media: options.media ?? new MediaStore(join(options.dir, 'media')),
      ownPost: (chat, message) => String(message.user_id) !== String(bot.userId) ? undefined : (this.gateways?.ownPost(bot.name, chat, message) ?? {}),
    };
    try {
      const instance = await plugin.definition.create(plugin.options, env);
      await instance.start?.();
      const ownPosts = plugin.definition.ownPosts !== false;
      return { name: instanceName, instance, timeoutMs: plugin.timeoutMs, log, ownPosts, context: (base, signal) => new LinkContext(base, log, store, signal) };
    } catch (error) {
      log.error({ err: error }, 'plugin could not start; it is left out of the chain');
      return undefined;
    }
  }

  /**
   * A relay's port into the gateways of the moment: a reload that replaces the gateways' plan leaves
   * the relays whose channels did not change running, and they reach the new plan through this.
   */
  private portOf(bot: string, instance: string, channelKey?: (channel: string) => string): GatewayPort {
    // Made once per plan, not per line (a port lists the plan's channels of the relay when it is made).
    let made: { router: GatewayRouter | undefined; port: GatewayPort } | undefined;
    const current = () => {
      if (!made || made.router !== this.gateways) made = { router: this.gateways, port: this.gateways?.port(bot, instance, channelKey) ?? NO_GATEWAY };
      return made.port;
    };
    const key = channelKey ?? ((channel: string) => channel);
    return {
      channels: () => current().channels(),
      receive: (channel, message) => {
        this.options.linesIn?.note(relaySideKey(instance, key(channel)));
        return current().receive(channel, message);
      },
      posted: (key, channel, nativeId) => current().posted(key, channel, nativeId),
      nativeOf: (key, channel) => current().nativeOf(key, channel),
    };
  }

  /** The chain ends with the gateway step when the bot takes part in a gateway. */
  private withGatewayStep(links: ChainLink[]): ChainLink[] {
    const bot = this.bot!.name;
    const gateways = this.gateways;
    return gateways?.involves(bot) ? [...links, gatewayStep(gateways, bot, this.options.log.child({ plugin: 'gateway' }), this.options.linesIn)] : links;
  }

  /** Hands a member's message through the chain (start() must have run); while a reload swaps the chain, it waits. */
  run(base: BaseContext): Promise<void> {
    if (this.held) return this.held.then(() => this.run(base));
    this.inFlight += 1;
    const ran = this.chain!.run(base);
    // Every plugin was done before returning (the usual pass-throughs): done now, with no promise of its own.
    if (ran === DONE) {
      this.oneDone();
      return DONE;
    }
    return ran.then(this.oneDone);
  }

  private readonly oneDone = (): void => {
    this.inFlight -= 1;
    if (this.inFlight === 0) this.drained?.();
  };

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
    for (const link of this.links.toReversed()) await stopLink(link);
    await Promise.all([...this.stores.values()].map((store) => store.flush()));
  }

  /**
   * Applies a reload to the running chain: the instances named in `restart` (and relays whose gateway
   * channels changed) are stopped and made again with their new options, same store and data dir;
   * added ones start; removed ones stop. The chain is swapped between messages: new messages wait
   * while the ones in the chain finish, then go through the new chain. Counters and latency carry over
   * for every instance name that goes on. Answers what it did, in words.
   */
  async reload(plugins: LoadedPlugin[], restart: ReadonlySet<string>, gateways: GatewayRouter | undefined): Promise<string[]> {
    const oldGateways = this.gateways;
    this.gateways = gateways;
    const oldNames = instanceNames(this.plugins);
    this.plugins = plugins;
    if (!this.chain || !this.bot) return [];
    const bot = this.bot.name;
    const names = instanceNames(plugins);
    const changes: string[] = [];
    const release = await this.hold();
    try {
      const plain = this.links.filter((link) => !isGatewayStep(link));
      const current = new Map(plain.map((link) => [link.name, link]));
      const why = restartReasons({ bot, names, plugins, running: current, restart, before: oldGateways, after: gateways });
      // Old instances go first (a relay's nick or a file a plugin holds is free for the new one).
      for (const link of plain.toReversed()) {
        if (names.includes(link.name) && !why.has(link.name)) continue;
        await stopLink(link);
        if (!names.includes(link.name)) {
          changes.push(`plugin ${link.name} removed`);
          await this.stores.get(link.name)?.flush();
          this.stores.delete(link.name);
          this.definitionOf.delete(link.name);
        }
      }
      const links: ChainLink[] = [];
      for (const [index, name] of names.entries()) {
        const kept = current.get(name);
        if (kept && !why.has(name)) {
          links.push(kept);
          continue;
        }
        // An instance that could not start at first and did not change is not tried again here.
        if (!kept && oldNames.includes(name) && !restart.has(name)) continue;
        const link = await this.startInstance(plugins[index]!, name);
        if (link) links.push(link);
        changes.push(link
          ? (kept ? `plugin ${name} restarted (${why.get(name)})` : `plugin ${name} added`)
          : `plugin ${name} could not start; it is left out of the chain (see the log)`);
      }
      const chainLinks = this.withGatewayStep(links);
      const chain = new PluginChain(chainLinks, this.options.stopped);
      carryOver(this.chain, chain);
      if (changes.length === 0 && !isDeepStrictEqual(plain.map((link) => link.name), links.map((link) => link.name))) changes.push('plugins reordered');
      this.links = chainLinks;
      this.chain = chain;
    } finally {
      release();
    }
    return changes;
  }

  /** Holds new messages and waits for those in the chain: answers the release. */
  private async hold(): Promise<() => void> {
    let release!: () => void;
    this.held = new Promise<void>((resolve) => {
      release = resolve;
    });
    if (this.inFlight > 0) await new Promise<void>((resolve) => {
      this.drained = resolve;
    });
    this.drained = undefined;
    return () => {
      this.held = undefined;
      release();
    };
  }

  /** Per instance, for the operations endpoint: its plugin, the chain's counters and latency, its own stats() and status(). */
  /** An instance by its name in the chain (tests check that a reload left it alone). */
  instance(name: string): PluginInstance | undefined {
    return this.links.find((link) => link.name === name)?.instance;
  }

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
