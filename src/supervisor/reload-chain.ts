import { isDeepStrictEqual } from 'node:util';
import type { LoadedPlugin } from '../config/plugin-loader.js';
import type { GatewayRouter } from '../gateway/gateway-router.js';
import type { ChainLink, PluginChain } from '../pipeline/chain.js';

/** The pieces of a plugin chain's reload (BotPlugins.reload) that need none of its state. */

/**
 * Why each running instance that goes on must be made again, by instance name: its entry changed (the
 * plan's `restart`), or it is a relay whose channels in the gateways' plan changed (a relay joins its
 * channels when it starts). An instance not named here keeps running.
 */
export function restartReasons(options: {
  bot: string;
  names: string[];
  plugins: LoadedPlugin[];
  running: ReadonlyMap<string, ChainLink>;
  restart: ReadonlySet<string>;
  before: GatewayRouter | undefined;
  after: GatewayRouter | undefined;
}): Map<string, string> {
  const { bot, names, plugins, running, before, after } = options;
  const why = new Map<string, string>();
  for (const name of options.restart) why.set(name, 'options changed');
  names.forEach((name, index) => {
    if (!running.has(name) || why.has(name) || !plugins[index]!.definition.platform) return;
    const channelsOf = (router: GatewayRouter | undefined) => (router?.port(bot, name).channels() ?? []).toSorted();
    if (!isDeepStrictEqual(channelsOf(before), channelsOf(after))) why.set(name, 'its gateway channels changed');
  });
  return why;
}

/** Stops one instance; one that fails to stop is logged and does not keep the others from stopping. */
export async function stopLink(link: ChainLink): Promise<void> {
  try {
    await link.instance.stop?.();
  } catch (error) {
    link.log.error({ err: error }, 'plugin failed to stop');
  }
}

/** The counters and latency of every instance name that goes on are added into the new chain's. */
export function carryOver(from: PluginChain, to: PluginChain): void {
  for (const [name, stats] of to.stats) {
    const old = from.stats.get(name);
    if (!old) continue;
    stats.handled += old.handled;
    stats.errors += old.errors;
    stats.timeouts += old.timeouts;
    to.latency.get(name)!.add(from.latency.get(name)!);
  }
}
