import { isDeepStrictEqual } from 'node:util';
import type { BotConfig, BotsConfig, ChatConfig, LoadedConfig, PluginConfig } from '../config/bots-config.js';
import type { LoadedPlugin } from '../config/plugin-loader.js';
import { instanceNames, planGateways, type PlannedGateway } from '../gateway/gateway-plan.js';

/** What a reload did, or why it did nothing (kept as `supervisor.lastReload`, shown by /status). */
export interface ReloadOutcome {
  applied: boolean;
  /** When the reload ended (ISO 8601). */
  at: string;
  /** What changed, in plain words ("bot demo: chat random added"). */
  changes: string[];
  /** Why it was refused (each mistake in the file with its file:line:col). */
  problems: string[];
  /** `ops:` changed: `groupwire run` starts its endpoint again. */
  opsChanged: boolean;
}

/** One running bot's changes that are applied in place (its login did not change). */
export interface BotChanges {
  config: BotConfig;
  plugins: LoadedPlugin[];
  chatsAdded: ChatConfig[];
  /** Entries that left bots.yaml, or changed (a changed entry is stopped, then set up again). */
  chatsRemoved: ChatConfig[];
  /** Plugin instances (by instance name) to stop and make again: their `use`, `with` or `timeout_ms` changed. */
  pluginsRestarted: Set<string>;
  /** Whether the chain changes at all (an instance added, removed, restarted, or moved). */
  chainChanged: boolean;
  /** What is said in the outcome for this bot (the plugin changes are said when applied). */
  changes: string[];
}

export interface ReloadPlan {
  /** Changes that cannot be applied live: the reload is refused when there is any. */
  refusals: string[];
  /** The root logger's new level, when `log.level` changed. */
  logLevel?: string;
  opsChanged: boolean;
  /** Changes said that need nothing done (`log.pretty`, ops). */
  notes: string[];
  botsAdded: Array<{ config: BotConfig; plugins: LoadedPlugin[] }>;
  botsRemoved: string[];
  /** Bots started again whole (their login changed). */
  botsRestarted: Array<{ config: BotConfig; plugins: LoadedPlugin[] }>;
  botsChanged: BotChanges[];
  /** The new gateway plan, when it differs from the running one. */
  gateways?: PlannedGateway[];
}

/** The settings of a bot that running chats keep (new chats take the new value). */
const CHAT_SETTINGS = ['reply_rate', 'closed_chat_check_seconds', 'history_on_first_start'] as const;
/** Top-level keys that need a restart of `groupwire run`. */
const FIXED_KEYS = ['state_dir', 'message_map', 'media'] as const;

const restartText = (what: string) => `${what} changed: restart groupwire run to apply it`;
const chatKey = (chat: ChatConfig) => `${chat.group}/${chat.chat}`;

/** The difference between the running bots.yaml and the one just read (both checked), as steps to apply. */
export function planReload(running: LoadedConfig, runningPlugins: LoadedPlugin[][], next: LoadedConfig, nextPlugins: LoadedPlugin[][]): ReloadPlan {
  const before = running.config;
  const after = next.config;
  const plan: ReloadPlan = {
    refusals: fixedChanges(before, after), opsChanged: !isDeepStrictEqual(before.ops, after.ops), notes: [],
    botsAdded: [], botsRemoved: [], botsRestarted: [], botsChanged: [],
  };
  if (before.log.level !== after.log.level) plan.logLevel = after.log.level;
  if (before.log.pretty !== after.log.pretty) plan.notes.push('log.pretty changed: it applies when groupwire run starts again');
  if (plan.opsChanged) plan.notes.push('ops changed: the operations endpoint starts again');
  const oldBots = new Map(before.bots.map((bot, index) => [bot.name, { config: bot, plugins: runningPlugins[index] ?? [] }]));
  after.bots.forEach((bot, index) => {
    const plugins = nextPlugins[index] ?? [];
    const old = oldBots.get(bot.name);
    if (!old) plan.botsAdded.push({ config: bot, plugins });
    else if (!isDeepStrictEqual(old.config.login, bot.login)) plan.botsRestarted.push({ config: bot, plugins });
    else {
      const changes = botChanges(old.config, old.plugins, bot, plugins);
      if (changes) plan.botsChanged.push(changes);
    }
  });
  const names = new Set(after.bots.map((bot) => bot.name));
  plan.botsRemoved = before.bots.filter((bot) => !names.has(bot.name)).map((bot) => bot.name);
  const oldGateways = planGateways(running, runningPlugins).gateways;
  const newGateways = planGateways(next, nextPlugins).gateways;
  if (!isDeepStrictEqual(oldGateways, newGateways)) plan.gateways = newGateways;
  return plan;
}

/** `service`, `state_dir`, `message_map`, `media`: what the process was started with and keeps. */
function fixedChanges(before: BotsConfig, after: BotsConfig): string[] {
  const refusals: string[] = [];
  const serviceKeys = new Set([...Object.keys(before.service), ...Object.keys(after.service)]) as Set<keyof BotsConfig['service']>;
  for (const key of serviceKeys) {
    if (!isDeepStrictEqual(before.service[key], after.service[key])) refusals.push(restartText(`service.${key}`));
  }
  for (const key of FIXED_KEYS) {
    if (!isDeepStrictEqual(before[key], after[key])) refusals.push(restartText(key));
  }
  return refusals;
}

/** A kept bot's chats, plugins and settings compared; undefined when nothing changed. */
function botChanges(before: BotConfig, oldPlugins: LoadedPlugin[], after: BotConfig, plugins: LoadedPlugin[]): BotChanges | undefined {
  const changes: string[] = [];
  const oldChats = new Map(before.chats.map((chat) => [chatKey(chat), chat]));
  const newChats = new Map(after.chats.map((chat) => [chatKey(chat), chat]));
  const chatsAdded: ChatConfig[] = [];
  const chatsRemoved: ChatConfig[] = [];
  for (const [key, chat] of oldChats) {
    const now = newChats.get(key);
    if (!now) {
      chatsRemoved.push(chat);
      changes.push(`bot ${after.name}: chat ${chat.chat} removed`);
    } else if (!isDeepStrictEqual(now, chat)) {
      chatsRemoved.push(chat);
      chatsAdded.push(now);
      changes.push(`bot ${after.name}: chat ${chat.chat} restarted (its entry changed)`);
    }
  }
  for (const [key, chat] of newChats) {
    if (oldChats.has(key)) continue;
    chatsAdded.push(chat);
    changes.push(`bot ${after.name}: chat ${chat.chat} added`);
  }
  for (const setting of CHAT_SETTINGS) {
    if (!isDeepStrictEqual(before[setting], after[setting])) {
      changes.push(`bot ${after.name}: ${setting} changed; it applies to chats started from now on`);
    }
  }
  if (before.speaker_name !== after.speaker_name) changes.push(`bot ${after.name}: speaker_name changed; the bot's lines go out under the new name from now on`);
  const { restarted, chainChanged } = pluginChanges(before.plugins, oldPlugins, after.plugins, plugins);
  if (changes.length === 0 && !chainChanged) return undefined;
  return { config: after, plugins, chatsAdded, chatsRemoved, pluginsRestarted: restarted, chainChanged, changes };
}

/**
 * Plugin instances compared by instance name (`relay-irc`, `relay-irc-2`, as instanceNames names the
 * loaded plugins) and their entry's `use`, `with` and `timeout_ms`.
 */
function pluginChanges(before: PluginConfig[], oldLoaded: LoadedPlugin[], after: PluginConfig[], newLoaded: LoadedPlugin[]): { restarted: Set<string>; chainChanged: boolean } {
  const oldNames = instanceNames(oldLoaded);
  const newNames = instanceNames(newLoaded);
  const oldByName = new Map(before.map((plugin, index) => [oldNames[index]!, plugin]));
  const restarted = new Set<string>();
  after.forEach((plugin, index) => {
    const old = oldByName.get(newNames[index]!);
    if (old && !isDeepStrictEqual(old, plugin)) restarted.add(newNames[index]!);
  });
  return { restarted, chainChanged: restarted.size > 0 || !isDeepStrictEqual(oldNames, newNames) };
}
