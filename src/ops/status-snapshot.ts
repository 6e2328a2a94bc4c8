import type { ConnectionState } from '../chat/chat-connection-events.js';
import type { CoordinationStatus } from '../coordination/coordination-status.js';
import type { Bot } from '../supervisor/bot.js';
import type { ChatRunner } from '../supervisor/chat-runner.js';
import type { BacklogStatus } from './backlog-watch.js';
import type { GatewaySideStatus, GatewayStatus } from './gateway-watch.js';
import type { RecentError, RecentErrors } from './recent-errors.js';

/** What `/status`, `/status.json`, `/readyz` and `groupwire status` show (docs/operations.md). */
export interface StatusSnapshot {
  version: string;
  /** ISO 8601 times, and the process's uptime in seconds. */
  now: string;
  startedAt: string;
  uptimeSeconds: number;
  pid: number;
  /** Every bot logged in and every chat open or waiting for a documented reason. */
  ready: boolean;
  bots: BotStatus[];
  /**
   * Every side's backlog (a chat's outbox, a relay's channel queue): lines waiting, the oldest's age,
   * the rates over the last minute, and a warning while it falls behind (docs/operations.md "Backlogs").
   */
  backlogs: BacklogStatus[];
  /**
   * Each gateway: its sides (a chat, a relay's channel), each side's state, lines in and out, queue,
   * last line and lag, and its last 15 minutes sampled (docs/operations.md "Gateways").
   */
  gateways: GatewayStatus[];
  /** The process's last warnings and errors, newest first. */
  errors: RecentError[];
  process: { rssBytes: number; heapUsedBytes: number; eventLoopLagMs: number };
  /** The last reload (SIGHUP, `groupwire reload`), if any. */
  lastReload?: { at: string; applied: boolean; changes: string[]; problems: string[] };
  /** A worker of several (bots.yaml `coordination:`): which worker holds which unit. */
  coordination?: CoordinationStatus;
  /** The media store (bots.yaml `media:`): its listener's address while it listens, files stored and refused. */
  media?: MediaStatus;
}

export interface MediaStatus {
  url?: string;
  stored: number;
  bytesStored: number;
  refused: number;
}

export interface BotStatus {
  name: string;
  phase: 'starting' | 'running' | 'login_refused' | 'stopping';
  ready: boolean;
  /** Why the bot is not ready (a refused login, still starting). */
  reason?: string;
  chats: ChatStatus[];
  plugins: PluginStatusLine[];
}

export interface ChatStatus {
  id: string;
  subject: string;
  group: string;
  /** The socket's state, or `waiting_to_join` for a chat that was closed when the bot started. */
  state: ConnectionState | 'waiting_to_join';
  /** Since when (ISO 8601). */
  since: string;
  ready: boolean;
  /** Why it is not open: a documented wait (closed chat, deleted) or the last trouble. */
  reason?: string;
  cursor: number | null;
  newest: number;
  lag: number;
  /** When the plugins were last done with a message of this chat (ISO 8601), and how long ago in seconds. */
  lastMessageAt: string | null;
  secondsSinceLastMessage: number | null;
  outbox: number;
  handled: number;
  opened: number;
  reconnects: number;
  upgradesRefused: number;
  lastTrouble?: { at: string; what: string };
}

export interface PluginStatusLine {
  instance: string;
  plugin: string;
  handled: number;
  errors: number;
  timeouts: number;
  connection?: { state: string; detail?: string };
  queues?: Record<string, number>;
  /** A relay's sides (its channels in gateways): lines in and out, queue, last line and lag. */
  sides?: RelaySideStatus[];
}

/** One channel of a relay, as its row on the status page shows it (a GatewaySideStatus, without its history). */
export type RelaySideStatus = Pick<GatewaySideStatus, 'side' | 'state' | 'linesIn' | 'linesOut' | 'queue' | 'lastLineAt' | 'lastLineSeconds' | 'lagSeconds'>;

export interface SnapshotSources {
  bots(): readonly Bot[];
  version: string;
  startedAt: number;
  errors: RecentErrors;
  eventLoopLagMs(): number;
  lastReload(): StatusSnapshot['lastReload'] | undefined;
  /** Set for a worker of several (docs/scale-out.md). */
  coordination?(): CoordinationStatus;
  /** Every side's backlog (BacklogWatch.status). */
  backlogs?(): BacklogStatus[];
  /** Every gateway and its sides (GatewayWatch.status). */
  gateways?(): GatewayStatus[];
  /** The media store's listener and counts. */
  media?(): MediaStatus | undefined;
}

/** The whole process as the status page shows it, read now (cheap: counters and states, no I/O). */
export function takeSnapshot(sources: SnapshotSources): StatusSnapshot {
  const now = Date.now();
  const gateways = sources.gateways?.() ?? [];
  const bots = sources.bots().map((bot) => botStatus(bot, now, gateways));
  const memory = process.memoryUsage();
  const lastReload = sources.lastReload();
  const coordination = sources.coordination?.();
  const media = sources.media?.();
  // A worker holding no unit is a ready standby; one that lost Redis is not ready (it is winding its units down).
  const ready = coordination ? coordination.redisUp && bots.every((bot) => bot.ready) : bots.length > 0 && bots.every((bot) => bot.ready);
  return {
    version: sources.version,
    now: new Date(now).toISOString(),
    startedAt: new Date(sources.startedAt).toISOString(),
    uptimeSeconds: Math.round((now - sources.startedAt) / 1000),
    pid: process.pid,
    ready,
    bots,
    backlogs: sources.backlogs?.() ?? [],
    gateways,
    errors: sources.errors.list(),
    process: { rssBytes: memory.rss, heapUsedBytes: memory.heapUsed, eventLoopLagMs: Math.round(sources.eventLoopLagMs() * 100) / 100 },
    ...(lastReload ? { lastReload } : {}),
    ...(coordination ? { coordination } : {}),
    ...(media ? { media } : {}),
  };
}

function botStatus(bot: Bot, now: number, gateways: readonly GatewayStatus[]): BotStatus {
  const phase = bot.phase;
  const chats = bot.runners.map((runner) => chatStatus(runner, now));
  const plugins = bot.pluginReports().map((report): PluginStatusLine => {
    const sides = relaySides(gateways, bot.name, report.instance);
    return {
      instance: report.instance, plugin: report.plugin, ...report.chain,
      ...(report.status.connection ? { connection: report.status.connection } : {}),
      ...(report.status.queues ? { queues: report.status.queues } : {}),
      ...(sides.length > 0 ? { sides } : {}),
    };
  });
  let reason: string | undefined;
  if (phase === 'login_refused') reason = `login refused: ${bot.loginRefusal?.said ?? 'see the log'}`;
  else if (phase === 'starting') reason = 'starting (logging in, joining its chats)';
  else if (phase === 'stopping') reason = 'stopping';
  else if (chats.some((chat) => !chat.ready)) reason = 'some chats are not open';
  return { name: bot.name, phase, ready: reason === undefined, ...(reason ? { reason } : {}), chats, plugins };
}

/** A relay's channels in the gateways, once each (a channel may be in several gateways). */
function relaySides(gateways: readonly GatewayStatus[], bot: string, instance: string): RelaySideStatus[] {
  const sides = new Map<string, RelaySideStatus>();
  for (const gateway of gateways) {
    for (const side of gateway.sides) {
      if (side.kind !== 'relay' || side.bot !== bot || side.instance !== instance || sides.has(side.side)) continue;
      const { side: name, state, linesIn, linesOut, queue, lastLineAt, lastLineSeconds, lagSeconds } = side;
      sides.set(name, { side: name, state, linesIn, linesOut, queue, lastLineAt, lastLineSeconds, lagSeconds });
    }
  }
  return [...sides.values()];
}

function chatStatus(runner: ChatRunner, now: number): ChatStatus {
  const { connection, sequencer, info } = runner;
  const state = runner.waitingToJoin ? 'waiting_to_join' : connection.state;
  const { newest, behind } = runner.lag;
  const last = sequencer.lastHandedAt;
  const trouble = connection.lastTrouble;
  const causes = Object.values(connection.reconnectCauses).reduce((sum, count) => sum + count, 0);
  const status: ChatStatus = {
    id: String(info.id), subject: info.subject, group: info.groupName, state,
    since: new Date(connection.stateSince).toISOString(), ready: false,
    cursor: sequencer.position ?? null, newest, lag: behind,
    lastMessageAt: last === undefined ? null : new Date(last).toISOString(),
    secondsSinceLastMessage: last === undefined ? null : Math.round((now - last) / 1000),
    outbox: runner.outbox.pending, handled: sequencer.stats.delivered,
    opened: connection.stats.opened, reconnects: causes, upgradesRefused: connection.stats.refused,
    ...(trouble ? { lastTrouble: { at: new Date(trouble.at).toISOString(), what: trouble.what } } : {}),
  };
  // Documented waits count as ready (docs/operations.md): nothing the bot can do until the chat changes.
  if (state === 'open') status.ready = true;
  else if (state === 'closed' || state === 'waiting_to_join') {
    status.ready = true;
    status.reason = 'the chat is closed; waiting for it to reopen';
  } else if (state === 'stopped') {
    status.ready = true;
    status.reason = 'the bot left the chat (deleted, or the bot is stopping)';
  } else status.reason = trouble ? trouble.what : state;
  return status;
}
