import type { Logger } from 'pino';
import { loadBotsConfig, type BotConfig, type LoadedConfig } from '../config/bots-config.js';
import type { LoadedPlugin } from '../config/plugin-loader.js';
import { ConfigError } from '../config/yaml-source.js';
import type { PlannedGateway } from '../gateway/gateway-plan.js';
import type { GatewayRouter } from '../gateway/gateway-router.js';
import type { Bot } from './bot.js';
import { planReload, type BotChanges, type ReloadOutcome, type ReloadPlan } from './reload-plan.js';

/** What a reload reaches of the supervisor. */
export interface ReloadHost {
  readonly log: Logger;
  readonly stopping: boolean;
  readonly bots: Bot[];
  loaded: LoadedConfig;
  plugins: LoadedPlugin[][];
  gateways: GatewayRouter | undefined;
  /** Supervisor.check: the same checks as a start. */
  check(loaded: LoadedConfig): Promise<LoadedPlugin[][]>;
  makeBot(config: BotConfig, plugins: LoadedPlugin[]): Bot;
  /** A router for a new plan (the same message map; the counters carried over); undefined for no gateways. */
  routerFor(plan: PlannedGateway[]): GatewayRouter | undefined;
}

/**
 * Reads bots.yaml again and applies the difference (see docs/bots.md "Reload"). A file with a mistake,
 * or a change that needs a restart, is refused and nothing changes; otherwise every change is applied
 * and said. Each change is logged at info, each problem at error.
 */
export async function reloadSupervisor(host: ReloadHost, file: string): Promise<ReloadOutcome> {
  const log = host.log;
  const outcome = (applied: boolean, changes: string[], problems: string[], opsChanged = false): ReloadOutcome => {
    for (const change of changes) log.info(`reload: ${change}`);
    for (const problem of problems) log.error(`reload: ${problem}`);
    if (applied && changes.length === 0) log.info(`reload: ${file} has no change to apply`);
    return { applied, at: new Date().toISOString(), changes, problems, opsChanged };
  };
  if (host.stopping) return outcome(false, [], ['groupwire is stopping: not reloading']);
  let next: LoadedConfig;
  let plugins: LoadedPlugin[][];
  try {
    next = await loadBotsConfig(file);
    plugins = await host.check(next);
  } catch (error) {
    if (error instanceof ConfigError) return outcome(false, [], error.problems);
    return outcome(false, [], [`${file}: ${error instanceof Error ? error.message : String(error)}`]);
  }
  const plan = planReload(host.loaded, host.plugins, next, plugins);
  if (plan.refusals.length > 0) return outcome(false, [], plan.refusals);
  const changes: string[] = [];
  try {
    await apply(host, plan, changes);
  } catch (error) {
    log.error({ err: error }, 'reload: failed part way');
    return outcome(false, changes, [`the reload failed part way (${error instanceof Error ? error.message : String(error)}): restart groupwire run to be sure of what runs`]);
  }
  host.loaded = next;
  host.plugins = plugins;
  changes.push(...plan.notes);
  return outcome(true, changes, [], plan.opsChanged);
}

async function apply(host: ReloadHost, plan: ReloadPlan, changes: string[]): Promise<void> {
  const { bots, log } = host;
  if (plan.logLevel) {
    log.level = plan.logLevel;
    changes.push(`log.level is ${plan.logLevel} now`);
  }
  const gateways = plan.gateways ? host.routerFor(plan.gateways) : host.gateways;
  if (plan.gateways) {
    host.gateways = gateways;
    changes.push(`gateways changed: ${plan.gateways.length === 0 ? 'none now' : plan.gateways.map((g) => g.name).join(', ')}`);
  }
  for (const name of plan.botsRemoved) {
    const bot = bots.find((b) => b.name === name);
    if (!bot) continue;
    await stopBot(bot, log);
    bots.splice(bots.indexOf(bot), 1);
    changes.push(`bot ${name} removed`);
  }
  const restart = async (config: BotConfig, plugins: LoadedPlugin[], why: string) => {
    const index = bots.findIndex((b) => b.name === config.name);
    await stopBot(bots[index]!, log);
    const bot = host.makeBot(config, plugins);
    bots[index] = bot;
    void bot.start();
    changes.push(`bot ${config.name} restarted (${why})`);
  };
  for (const { config, plugins } of plan.botsRestarted) await restart(config, plugins, 'its login changed');
  const changed = new Map(plan.botsChanged.map((c) => [c.config.name, c]));
  const restarted = new Set(plan.botsRestarted.map((b) => b.config.name));
  for (const [index, config] of host.loaded.config.bots.entries()) {
    const bot = bots.find((b) => b.name === config.name);
    if (!bot || restarted.has(config.name) || plan.botsRemoved.includes(config.name)) continue;
    // A bot whose own entry did not change still takes a new gateway plan (its chain's last step, its relays' channels).
    const botChanges = changed.get(config.name) ?? (plan.gateways ? unchanged(config, host.plugins[index] ?? []) : undefined);
    if (!botChanges) continue;
    // A bot still logging in or joining has no chain or chats to change in place: it starts again with the new entry.
    if (bot.phase !== 'running') await restart(botChanges.config, botChanges.plugins, 'it was still starting');
    else changes.push(...(await bot.reload(botChanges, gateways)));
  }
  for (const { config, plugins } of plan.botsAdded) {
    const bot = host.makeBot(config, plugins);
    bots.push(bot);
    void bot.start();
    changes.push(`bot ${config.name} added`);
  }
}

async function stopBot(bot: Bot, log: Logger): Promise<void> {
  await bot.stop().catch((error: unknown) => {
    log.error({ err: error, bot: bot.name }, 'bot did not stop cleanly');
  });
}

/** A bot whose entry is the same: nothing of its own to change (the gateways may have). */
function unchanged(config: BotConfig, plugins: LoadedPlugin[]): BotChanges {
  return { config, plugins, chatsAdded: [], chatsRemoved: [], pluginsRestarted: new Set(), chainChanged: false, changes: [] };
}
