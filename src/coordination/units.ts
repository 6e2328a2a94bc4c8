import { createHash } from 'node:crypto';
import type { BotConfig, ChatConfig, LoadedConfig } from '../config/bots-config.js';
import type { LoadedPlugin } from '../config/plugin-loader.js';
import type { PlannedGateway } from '../gateway/gateway-plan.js';

/**
 * The units workers place (docs/scale-out.md): a bot with its chats and its plugins' connections, or
 * the bots a gateway joins (their message map and relays must live in one process), or one shard of a
 * bot that asked for `shards: N`. A unit is held by one worker at a time, under a lease.
 */
export interface UnitPlan {
  /** `bot:alpha`, `bots:alpha+beta` (joined by gateways), `bot:big#0` (shard 0 of big). */
  id: string;
  bots: Array<{ index: number; name: string; shard?: { index: number; of: number } }>;
}

/** The units of a checked bots.yaml, and mistakes (file:line:col) a unit cannot be made of. */
export function planUnits(loaded: LoadedConfig, plugins: readonly LoadedPlugin[][], gateways: readonly PlannedGateway[]): { units: UnitPlan[]; problems: string[] } {
  const { bots } = loaded.config;
  const indexOf = new Map(bots.map((bot, index) => [bot.name, index]));
  // Union-find over the bots: a gateway joins every bot it has an endpoint of.
  const parent = bots.map((_, index) => index);
  const root = (index: number): number => (parent[index] === index ? index : (parent[index] = root(parent[index]!)));
  const inGateway = new Set<number>();
  for (const gateway of gateways) {
    const members = [...new Set(gateway.endpoints.map((endpoint) => indexOf.get(endpoint.bot)!))];
    for (const member of members) inGateway.add(member);
    for (const member of members.slice(1)) parent[root(member)] = root(members[0]!);
  }
  const problems: string[] = [];
  const units: UnitPlan[] = [];
  const groups = new Map<number, number[]>();
  bots.forEach((_, index) => groups.set(root(index), [...(groups.get(root(index)) ?? []), index]));
  for (const members of groups.values()) {
    if (members.length === 1) {
      const index = members[0]!;
      const bot = bots[index]!;
      const shards = bot.shards;
      if (shards > 1) {
        const problem = shardProblem(bot, plugins[index] ?? [], inGateway.has(index));
        if (problem) {
          problems.push(`${loaded.source.where(['bots', index, 'shards'])}: ${problem}`);
          continue;
        }
        for (let shard = 0; shard < shards; shard += 1) {
          units.push({ id: `bot:${bot.name}#${shard}`, bots: [{ index, name: bot.name, shard: { index: shard, of: shards } }] });
        }
        continue;
      }
      units.push({ id: `bot:${bot.name}`, bots: [{ index, name: bot.name }] });
      continue;
    }
    const names = members.map((index) => bots[index]!.name).sort();
    for (const index of members) {
      if (bots[index]!.shards > 1) problems.push(`${loaded.source.where(['bots', index, 'shards'])}: the bot is in a gateway with ${names.filter((n) => n !== bots[index]!.name).join(', ')}: a gateway's bots run together, unsharded`);
    }
    units.push({ id: `bots:${names.join('+')}`, bots: members.map((index) => ({ index, name: bots[index]!.name })) });
  }
  return { units: units.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)), problems };
}

function shardProblem(bot: BotConfig, plugins: readonly LoadedPlugin[], inGateway: boolean): string | undefined {
  if (inGateway) return 'a bot in a gateway cannot be sharded (its relays and message map run in one process)';
  const whole = plugins.filter((plugin) => plugin.definition.shardable !== true).map((plugin) => plugin.name);
  if (whole.length > 0) return `shards: ${bot.shards} needs plugins that allow it (shardable); ${whole.join(', ')} do${whole.length === 1 ? 'es' : ''} not`;
  if (bot.chats.length < bot.shards) return `shards: ${bot.shards} is more than the bot's ${bot.chats.length} chat(s)`;
  return undefined;
}

/** The shard a chat entry belongs to: a stable hash of how bots.yaml names it, so it stays put across restarts. */
export function shardOf(chat: ChatConfig, of: number): number {
  const digest = createHash('sha1').update(`${chat.group}\u0000${chat.chat}`).digest();
  return digest.readUInt32BE(0) % of;
}

/**
 * bots.yaml narrowed to one unit: its bots (a shard with its chats only) and the gateways among them.
 * The unit's Supervisor runs it as if it were the whole file.
 */
export function narrowConfig(loaded: LoadedConfig, unit: UnitPlan): LoadedConfig {
  const bots = unit.bots.map(({ index, shard }) => {
    const bot = loaded.config.bots[index]!;
    return shard ? { ...bot, chats: bot.chats.filter((chat) => shardOf(chat, shard.of) === shard.index) } : bot;
  });
  const names = new Set(bots.map((bot) => bot.name));
  const gateways = loaded.config.gateways.filter((gateway) => gateway.endpoints.every((endpoint) => endpoint.bot === undefined || names.has(endpoint.bot)));
  return { ...loaded, config: { ...loaded.config, bots, gateways } };
}

/** What a unit runs, as text: a reload restarts a unit whose digest changed, and leaves the others be. */
export function unitDigest(loaded: LoadedConfig, unit: UnitPlan): string {
  const { config } = narrowConfig(loaded, unit);
  const relevant = { service: config.service, bots: config.bots, gateways: config.gateways, message_map: config.message_map, state_dir: config.state_dir };
  return createHash('sha256').update(JSON.stringify(relevant)).digest('hex').slice(0, 16);
}
