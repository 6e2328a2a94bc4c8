import { access, readdir, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { loggerOptions } from '../../plugins/logger/options.js';
import { PathPattern, safeSegment } from '../../plugins/logger/path-pattern.js';
import { configPath, type LoadedConfig } from '../config/bots-config.js';
import { GATEWAY_MAP_FILE } from '../supervisor/supervisor.js';

/** The embedded service's data when bots.yaml does not name a file: beside the bots' state. */
export const DEFAULT_SERVICE_STATE = 'local-service.json';
/** How far the demo's scripted member got in this conversation (demo-script.ts). */
export const SCRIPT_PROGRESS_FILE = 'demo-script.json';

/**
 * Everything the demo keeps between runs, so that one conversation goes on: the embedded service's
 * data (its chats and msg_nums) and, beside it, what the bots remember of that conversation (cursors,
 * outbox, plugin stores), the gateways' message map, how far carol got in her script, and the
 * transcripts the logger wrote of it. They are kept or cleared together: a bot that remembers msg_num
 * 50 of a service that starts again from 1 would ignore every message, and a message map that
 * remembers topic 9 as relayed would never announce the new conversation's topic 9.
 */
export interface DemoState {
  /** The bots.yaml state_dir, absolute. */
  stateDir: string;
  /** The embedded service's state file; its CA and key live in `<serviceState>.tls/` and stay. */
  serviceState: string;
  /** `<state_dir>/bots/<name>` of each bot of the file. */
  botDirs: string[];
  /** `<state_dir>/gateway-map.jsonl`: which lines the gateways relayed, and their copies. */
  gatewayMap: string;
  /** `<state_dir>/demo-script.json`: how far carol got. */
  scriptProgress: string;
  transcripts: TranscriptPlace[];
}

interface TranscriptPlace {
  root: string;
  pattern: PathPattern;
  bot: string;
  /** The groups of the bot's chats, as the logger writes them into paths. */
  groups: Set<string>;
}

/**
 * The demo's state places; when bots.yaml names no `service.embedded.state`, the demo gives the
 * embedded service `<state_dir>/local-service.json`, so its data is kept with the bots'.
 */
export function demoState(loaded: LoadedConfig): DemoState {
  const { config } = loaded;
  const stateDir = configPath(loaded, config.state_dir);
  const embedded = config.service.embedded ?? { port: 0, ids: 'numeric' as const };
  embedded.state ??= join(stateDir, DEFAULT_SERVICE_STATE);
  config.service.embedded = embedded;
  const transcripts: TranscriptPlace[] = [];
  for (const bot of config.bots) {
    for (const plugin of bot.plugins) {
      if (plugin.use !== 'logger') continue;
      // The supervisor checked the options already; a logger it would refuse writes nothing.
      const options = loggerOptions.safeParse(plugin.with ?? {});
      if (!options.success) continue;
      transcripts.push({
        root: configPath(loaded, options.data.dir),
        pattern: PathPattern.parse(options.data.path),
        bot: safeSegment(bot.name),
        groups: new Set(bot.chats.map((chat) => safeSegment(chat.group))),
      });
    }
  }
  return {
    stateDir,
    serviceState: configPath(loaded, embedded.state),
    botDirs: config.bots.map((bot) => join(stateDir, 'bots', bot.name)),
    gatewayMap: join(stateDir, GATEWAY_MAP_FILE),
    scriptProgress: join(stateDir, SCRIPT_PROGRESS_FILE),
    transcripts,
  };
}

/** Whether the service's data of an earlier run is there to continue. */
export function savedConversation(state: DemoState): Promise<boolean> {
  return exists(state.serviceState);
}

/**
 * Whether the bots or transcripts hold a conversation the service no longer has: state from a demo
 * before the service's data was kept (or whose data file was deleted). Continuing would leave the bot
 * silent, so the demo starts over instead.
 */
export async function orphanedState(state: DemoState): Promise<boolean> {
  if (await exists(state.serviceState)) return false;
  for (const kept of [...state.botDirs, state.gatewayMap, state.scriptProgress]) if (await exists(kept)) return true;
  return (await transcriptFiles(state)).length > 0;
}

/**
 * Clears the conversation: the service's data, the bots' state, the gateways' message map, carol's
 * progress and the logger's transcripts of the demo's groups (nothing else in those folders). The CA stays, so clients keep trusting it. Returns
 * what was removed, as lines to show.
 */
export async function startOver(state: DemoState): Promise<string[]> {
  const removed: string[] = [];
  if (await exists(state.serviceState)) removed.push(`${shown(state.serviceState)} (the service's chats and messages)`);
  await rm(state.serviceState, { force: true });
  await removeUnsavedTemporaries(state.serviceState);
  for (const dir of state.botDirs) {
    if (!(await exists(dir))) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(`${shown(dir)} (the bot's cursors, outbox and plugin stores)`);
  }
  for (const [file, what] of [[state.gatewayMap, 'what the gateways relayed'], [state.scriptProgress, 'how far carol got in her script']] as const) {
    if (await exists(file)) removed.push(`${shown(file)} (${what})`);
    await rm(file, { force: true });
    await removeUnsavedTemporaries(file);
  }
  const files = await transcriptFiles(state);
  for (const file of files) {
    await rm(file, { force: true });
    // A text transcript's index of msg_nums beside it.
    await rm(join(dirname(file), `.${basename(file)}.idx`), { force: true });
  }
  for (const place of state.transcripts) await removeEmptyDirs(files, place.root);
  if (files.length > 0) {
    const roots = [...new Set(state.transcripts.map((place) => shown(place.root)))].join(', ');
    removed.push(`${files.length} transcript file${files.length === 1 ? '' : 's'} of the demo's chats in ${roots}`);
  }
  return removed;
}

async function transcriptFiles(state: DemoState): Promise<string[]> {
  const files = new Set<string>();
  for (const place of state.transcripts) {
    for (const found of await place.pattern.find(place.root, {})) {
      const { group, bot } = found.values;
      if (group !== undefined && !place.groups.has(group)) continue;
      if (bot !== undefined && bot !== place.bot) continue;
      files.add(found.path);
    }
  }
  return [...files];
}

/** The `<state>.<pid>.tmp` files of a save that was cut short. */
async function removeUnsavedTemporaries(path: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dirname(path));
  } catch {
    return;
  }
  const prefix = `${basename(path)}.`;
  for (const name of names) {
    if (name.startsWith(prefix) && name.endsWith('.tmp')) await rm(join(dirname(path), name), { force: true });
  }
}

/** The folders the removed files were in, when nothing else is left in them (up to the root). */
async function removeEmptyDirs(files: string[], root: string): Promise<void> {
  const dirs = new Set<string>();
  for (const file of files) {
    for (let dir = dirname(file); dir.startsWith(`${root}/`) && dir !== root; dir = dirname(dir)) dirs.add(dir);
  }
  // Deepest first, so a parent is tried after its children are gone.
  for (const dir of [...dirs].sort((a, b) => b.length - a.length)) {
    await rmdir(dir).catch(() => undefined);
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false);
}

/** A path as a person in this directory would write it. */
export function shown(path: string): string {
  const rel = relative(process.cwd(), resolve(path));
  return rel && !rel.startsWith('..') ? `./${rel}` : path;
}
