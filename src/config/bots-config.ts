import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { mediaSchema } from './media-config.js';
import { nearestName } from './nearest-name.js';
import { unknownPluginName } from './plugin-resolution.js';
import { packageProblems } from './package-problems.js';
import { ConfigError, YamlSource } from './yaml-source.js';

const rate = z.strictObject({
  per_second: z.number().positive(),
  burst: z.number().int().min(1).optional(),
});

const chatEntry = z.strictObject({
  group: z.union([z.string().min(1), z.number()]).transform(String),
  chat: z.union([z.string().min(1), z.number()]).transform(String),
  /** Make the chat when the group has none with that subject. */
  create: z.boolean().default(false),
  /** The description a created chat gets. */
  desc: z.string().default(''),
});

const pluginEntry = z.strictObject({
  use: z.string().min(1),
  with: z.unknown().optional(),
  /** How long one message may take in this plugin (default: the plugin's own, else 10 s). */
  timeout_ms: z.number().int().positive().optional(),
});

const login = z.union([
  z.strictObject({ email: z.email(), password: z.string().min(1), twofactor: z.string().optional() }),
  z.strictObject({ token: z.string().min(1), scheme: z.enum(['basic', 'bearer']).default('basic') }),
], { error: 'expected { email, password } or { token }' });

const bot = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'a bot name (letters, digits, _ . -)'),
  login,
  /**
   * The name the bot's own lines (its answers, its announcements) go out under on the other sides of its
   * gateways (IRC, XMPP, the HTTP API...). Default: its account's display name, as the chat shows it.
   */
  speaker_name: z.string().trim().min(1, 'a name of at least one character').max(100).optional(),
  chats: z.array(chatEntry).min(1),
  plugins: z.array(pluginEntry).default([]),
  /**
   * On a first start (no cursor yet) dispatch this many recent messages of each chat; 0 (the default)
   * starts with what is said from now on.
   */
  history_on_first_start: z.number().int().min(0).max(10_000).default(0),
  /** Pacing of the bot's posts per chat (default 5 per second, bursts of 10). */
  reply_rate: rate.optional(),
  /** How often a closed chat is checked for reopening, in seconds (default 30). */
  closed_chat_check_seconds: z.number().positive().default(30),
  /**
   * With coordination: split the bot's chats over this many units, each placed on a worker of its own
   * (docs/scale-out.md). Only for a bot in no gateway whose plugins are all shardable. 1: one unit.
   */
  shards: z.number().int().min(1).max(1024).default(1),
});

/** Workers sharing the bots of one bots.yaml through Redis (docs/scale-out.md). */
const coordination = z.strictObject({
  redis: z.string().regex(/^rediss?:\/\/\S+$/, 'a redis:// or rediss:// URL'),
  /** The prefix of every key, so several deployments can share one Redis. */
  prefix: z.string().regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits, _ . : -').default('groupwire'),
  /** How long a unit's lease lasts unrenewed: a dead worker's units start elsewhere after about this long. */
  lease_seconds: z.number().min(2).max(600).default(10),
  /** The worker's name (default `<host>-<pid>`); unique among the workers. */
  worker_id: z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, 'letters, digits, _ . - (up to 100)').optional(),
});

/**
 * One side of a gateway: a chat of a bot (`chat: <subject or id>`) or a channel of one of its platform
 * relays (`irc: "#general"`, `slack: C0123`: the key is the relay's platform). `bot` may be left out
 * when bots.yaml has one bot; `plugin` names the relay instance when a bot has two of one platform.
 */
const ENDPOINT_KEYS = ['bot', 'plugin', 'direction'];
const gatewayEndpoint = z.object({
  bot: z.string().min(1).optional(),
  plugin: z.string().min(1).optional(),
  direction: z.enum(['in', 'out', 'inout']).default('inout'),
}).catchall(z.union([z.string().min(1), z.number()]).transform(String)).superRefine((endpoint, ctx) => {
  const sides = Object.keys(endpoint).filter((key) => !ENDPOINT_KEYS.includes(key));
  // One side too many whose name is near bot, plugin or direction (`bto: a`) is a misspelt key, not a platform.
  const misspelt = sides.length > 1 ? sides.filter((key) => nearestName(key, ENDPOINT_KEYS) !== undefined) : [];
  if (misspelt.length > 0 && sides.length - misspelt.length === 1) {
    ctx.addIssue({ code: 'unrecognized_keys', keys: misspelt, input: endpoint });
    return;
  }
  if (sides.length !== 1) {
    ctx.addIssue({ code: 'custom', message: `an endpoint names one side: chat: <subject or id>, or <platform>: <channel> (irc: "#general", slack: C0123)${sides.length > 1 ? `; this one names ${sides.join(', ')}` : ''}` });
  }
});

/** `host:port` (an IPv6 host in brackets); port 0 takes a free port (`<state_dir>/ops.json` says which). */
const listenAddress = z.string().regex(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'expected host:port, like 127.0.0.1:9464')
  // Only a port the pattern took is checked (not a second error for a value that is no host:port at all).
  .refine((value) => {
    const port = Number(value.slice(value.lastIndexOf(':') + 1));
    return Number.isNaN(port) || port <= 65535;
  }, 'a port is 0 to 65535');

/** Whether a listen address is on this machine only (no token needed there). */
export function isLoopback(listen: string): boolean {
  const host = listen.slice(0, listen.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The operations endpoint (docs/operations.md): /metrics, /healthz, /readyz, /status. */
export const DEFAULT_OPS_LISTEN = '127.0.0.1:9464';
const ops = z.union([
  z.literal(false),
  z.strictObject({
    listen: listenAddress.default(DEFAULT_OPS_LISTEN),
    /** Asked of every caller as `Authorization: Bearer <token>` (or `?token=` on the status page); required off loopback. */
    token: z.string().min(16, 'a token of at least 16 characters').optional(),
    /** How often the newest msg_num of a chat whose socket is down is read, for its lag (seconds; 0: never). */
    lag_probe_seconds: z.number().min(0).default(15),
  }),
], { error: 'expected false, or { listen: host:port, token?: ... }' }).prefault({});

const gateway = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'a gateway name (letters, digits, _ . -)'),
  endpoints: z.array(gatewayEndpoint).min(2, 'a gateway joins at least two endpoints'),
  /**
   * Lines between the bot's relays travel through the chat (docs/gateways.md): posted there first, and
   * sent on to the other relays once the chain saw the bot's post, so a filter in the chain can keep
   * them from the relays, at the cost of the confirming read's wait. Default: handed on at once.
   */
  through_chat: z.boolean().default(false),
});

export const botsConfigSchema = z.strictObject({
  service: z.strictObject({
    base_url: z.union([z.literal('embedded'), z.url({ protocol: /^https$/, error: 'expected embedded or an https:// address' })]),
    ca_file: z.string().optional(),
    /**
     * The most chat socket upgrades per second (and at once) for all bots of the process: the service's
     * per-caller upgrade limit (default 20 a second, bursts of 50; a burst left out is two seconds' worth).
     * The pace slows by itself when the service refuses upgrades for its rate limit.
     */
    upgrade_rate: rate.default({ per_second: 20, burst: 50 }).transform((r) => ({
      per_second: r.per_second, burst: r.burst ?? Math.max(1, Math.ceil(r.per_second * 2)),
    })),
    /** Options for the embedded local service. */
    embedded: z.strictObject({
      port: z.number().int().min(0).max(65535).default(0),
      ids: z.enum(['numeric', 'big', 'opaque']).default('numeric'),
      seed: z.string().optional(),
      state: z.string().optional(),
    }).optional(),
  }),
  state_dir: z.string().default('./.groupwire'),
  log: z.strictObject({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    pretty: z.union([z.boolean(), z.literal('auto')]).default('auto'),
  }).default({ level: 'info', pretty: 'auto' }),
  bots: z.array(bot).min(1),
  /** Named gateways joining chats and relay channels (docs/gateways.md); relays' own `channels:` make gateways too. */
  gateways: z.array(gateway).default([]),
  /** The gateways' message map (for threads, edits, and lines taken twice): how many lines and days it keeps. */
  message_map: z.strictObject({
    max_lines: z.number().int().min(100).default(20_000),
    max_age_days: z.number().positive().default(14),
  }).prefault({}),
  ops,
  /** Files across the gateway: the media store, its listener and the limits (docs/gateways.md "Files"). */
  media: mediaSchema(listenAddress),
  coordination: coordination.optional(),
}).superRefine((config, ctx) => {
  if (config.coordination && config.service.base_url === 'embedded') {
    ctx.addIssue({ code: 'custom', message: 'workers must share one service: coordination needs service.base_url https://..., not embedded (each worker would run its own)', path: ['coordination'] });
  }
  if (config.ops && !isLoopback(config.ops.listen) && !config.ops.token) {
    ctx.addIssue({ code: 'custom', message: `ops.listen ${config.ops.listen} is reachable from other machines: give ops.token (at least 16 characters), or listen on 127.0.0.1`, path: ['ops', 'listen'] });
  }
  const gatewayNames = new Set<string>();
  config.gateways.forEach((g, index) => {
    if (gatewayNames.has(g.name)) ctx.addIssue({ code: 'custom', message: `a second gateway named ${g.name}; names must differ`, path: ['gateways', index, 'name'] });
    gatewayNames.add(g.name);
  });
  const names = new Set<string>();
  config.bots.forEach((b, index) => {
    if (names.has(b.name)) ctx.addIssue({ code: 'custom', message: `a second bot named ${b.name}; names must differ`, path: ['bots', index, 'name'] });
    names.add(b.name);
  });
});

export type BotsConfig = z.output<typeof botsConfigSchema>;
export type BotConfig = BotsConfig['bots'][number];
export type ChatConfig = BotConfig['chats'][number];
export type PluginConfig = BotConfig['plugins'][number];
export type OpsConfig = Exclude<BotsConfig['ops'], false>;
export type { MediaConfig } from './media-config.js';
export type GatewayConfig = BotsConfig['gateways'][number];
export type CoordinationConfig = NonNullable<BotsConfig['coordination']>;
export type GatewayEndpointConfig = GatewayConfig['endpoints'][number];

export interface LoadedConfig {
  config: BotsConfig;
  source: YamlSource;
  /** The directory of the file: relative paths in it are relative to it. */
  dir: string;
}

/** Reads bots.yaml: YAML, `${ENV}` interpolation, the schema; every mistake located. */
export async function loadBotsConfig(file: string, env: NodeJS.ProcessEnv = process.env): Promise<LoadedConfig> {
  const source = await YamlSource.read(file);
  source.interpolate(env);
  const dir = dirname(resolve(file));
  let config: BotsConfig;
  try {
    config = source.validate(botsConfigSchema);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // The rest is read as it stands too, so that one check says every mistake it can find, in file order.
    const raw = source.toJS() as RawConfig;
    throw new ConfigError(inFileOrder([
      ...error.problems, ...fileProblems(raw, source, dir), ...pluginNameProblems(raw, source, dir), ...packageProblems(raw, source),
    ]));
  }
  const problems = inFileOrder([...fileProblems(config, source, dir), ...packageProblems(config, source)]);
  if (problems.length > 0) throw new ConfigError(problems);
  return { config, source, dir };
}

/** bots.yaml as it was written, before the schema: anything may be missing or of another type. */
type RawConfig = { service?: { ca_file?: unknown }; bots?: Array<{ plugins?: Array<{ use?: unknown }> }> } | null;

/** Files the config names that must be there before anything connects (found now, not at the first TLS handshake). */
function fileProblems(config: RawConfig, source: YamlSource, dir: string): string[] {
  const caFile = config?.service?.ca_file;
  if (typeof caFile !== 'string') return [];
  let problem: string | undefined;
  try {
    if (!statSync(resolve(dir, caFile)).isFile()) problem = 'is not a file';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    problem = code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist' : `cannot be read (${code})`;
  }
  return problem ? [`${source.where(['service', 'ca_file'])}: ca_file ${caFile} ${problem}`] : [];
}

/**
 * `use:` names that are no built-in, path or installed package, found without loading anything (when
 * the schema passes, loading the plugins finds them, with the rest of what is wrong with a plugin).
 */
function pluginNameProblems(config: RawConfig, source: YamlSource, dir: string): string[] {
  const problems: string[] = [];
  const bots = Array.isArray(config?.bots) ? config.bots : [];
  bots.forEach((bot, botIndex) => {
    const plugins = Array.isArray(bot?.plugins) ? bot.plugins : [];
    plugins.forEach((plugin, index) => {
      const problem = typeof plugin?.use === 'string' ? unknownPluginName(plugin.use, dir) : undefined;
      if (problem) problems.push(`${source.where(['bots', botIndex, 'plugins', index, 'use'])}: ${problem}`);
    });
  });
  return problems;
}

/** Problems sorted by their `file:line:col` (a stable sort: those without a place keep their order). */
function inFileOrder(problems: string[]): string[] {
  const place = (problem: string) => {
    const match = /^.*?:(\d+):(\d+): /.exec(problem);
    return match ? Number(match[1]) * 10_000 + Number(match[2]) : 0;
  };
  return problems.toSorted((a, b) => place(a) - place(b));
}

/** A path from the config, relative to the config file's directory. */
export function configPath(loaded: LoadedConfig, path: string): string {
  return resolve(loaded.dir, path);
}
