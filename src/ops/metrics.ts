import { collectDefaultMetrics, Registry } from 'prom-client';
import type { ConnectionState } from '../chat/chat-connection-events.js';
import type { UpgradeGate } from '../chat/upgrade-gate.js';
import type { ChatRunner } from '../supervisor/chat-runner.js';
import type { CoordinationStatus } from '../coordination/coordination-status.js';
import { REFUSAL_KINDS, type FileCounts } from '../gateway/file-intake.js';
import type { BacklogStatus } from './backlog-watch.js';
import type { RecentErrors } from './recent-errors.js';
import { renderLabels, ScrapeMetric, type Sample } from './scrape-metric.js';
import { takeSnapshot, type SnapshotSources, type StatusSnapshot } from './status-snapshot.js';

const STATES: ConnectionState[] = ['idle', 'connecting', 'open', 'reconnecting', 'closed', 'stopped'];

export interface MetricsSources extends SnapshotSources {
  gate: UpgradeGate;
  /** What the gateways' file intake counted (none: no files families). */
  files?: () => FileCounts | undefined;
  errors: RecentErrors;
  reloads(): { applied: number; refused: number };
}

/**
 * The Prometheus registry of `groupwire run` (docs/operations.md lists every metric). Labels are
 * bounded by bots.yaml: bot, group, chat (subject and id), plugin instance, queue, REST operation,
 * answer type; never message text or a user's id.
 */
export interface OpsMetrics {
  /** The process's own metrics (prom-client's defaults). */
  registry: Registry;
  /** The exposition text for a scrape: groupwire's families, then the process's. */
  scrape(): Promise<string>;
}

export function createMetrics(sources: MetricsSources): OpsMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const families: ScrapeMetric[] = [];
  const metric = (name: string, help: string, type: 'counter' | 'gauge' | 'histogram', read: () => Iterable<Sample>) => {
    families.push(new ScrapeMetric(name, help, type, read));
  };
  const bots = () => sources.bots();
  // Every chat with its labels rendered once per scrape (10,000 chats times two dozen families).
  let scraped: Array<{ runner: ChatRunner; labels: string }> | undefined;
  const chats = (): Array<{ runner: ChatRunner; labels: string }> => {
    if (scraped) return scraped;
    const all: Array<{ runner: ChatRunner; labels: string }> = [];
    for (const bot of bots()) {
      for (const runner of bot.runners) {
        const { info } = runner;
        all.push({ runner, labels: renderLabels({ bot: bot.name, group: info.groupName, chat: info.subject, chat_id: String(info.id) }) });
      }
    }
    return all;
  };
  const perChat = (read: (runner: ChatRunner) => number) => function* () {
    for (const { runner, labels } of chats()) yield { labels, value: read(runner) };
  };

  metric('groupwire_build_info', 'The running groupwire: version and Node.js.', 'gauge', () => [{ labels: { version: sources.version, node: process.version }, value: 1 }]);
  // One snapshot a scrape says who is ready (the same judgement as /readyz).
  let snapshot: StatusSnapshot | undefined;
  const ready = () => (snapshot ??= takeSnapshot(sources));
  metric('groupwire_ready', '1 when every bot is logged in and every chat open or waiting for a documented reason (as /readyz).', 'gauge',
    () => [{ labels: {}, value: ready().ready ? 1 : 0 }]);
  metric('groupwire_bot_ready', '1 when the bot is logged in and its chats are open (or closed, or deleted).', 'gauge', function* () {
    for (const bot of ready().bots) yield { labels: { bot: bot.name }, value: bot.ready ? 1 : 0 };
  });
  metric('groupwire_bot_logged_in', '1 when the bot is logged in and running (0 starting, or its login refused).', 'gauge', function* () {
    for (const bot of bots()) yield { labels: { bot: bot.name }, value: bot.phase === 'running' ? 1 : 0 };
  });

  metric('groupwire_chat_messages_total', 'Members\' messages handed through the plugin chain.', 'counter', perChat((r) => r.sequencer.stats.delivered));
  metric('groupwire_chat_backfilled_total', 'Messages handed on from history (after a reconnect or a restart) rather than live.', 'counter', perChat((r) => r.sequencer.stats.backfilled));
  metric('groupwire_chat_lag_messages', 'The newest msg_num the service is known to have minus the bot\'s cursor.', 'gauge', perChat((r) => r.lag.behind));
  metric('groupwire_chat_cursor', 'The msg_num the bot has handed on up to.', 'gauge', perChat((r) => r.sequencer.position ?? 0));
  metric('groupwire_chat_seconds_since_last_message', 'Seconds since the plugins were last done with a message of the chat (since the start when none yet).', 'gauge',
    perChat((r) => Math.round((Date.now() - (r.sequencer.lastHandedAt ?? sources.startedAt)) / 1000)));
  metric('groupwire_chat_socket_state', 'The chat socket\'s state: 1 for the current one.', 'gauge', function* () {
    for (const { runner, labels } of chats()) {
      const state = runner.connection.state;
      for (const each of STATES) yield { labels: `${labels},state="${each}"`, value: each === state ? 1 : 0 };
    }
  });
  metric('groupwire_chat_socket_opens_total', 'Chat sockets opened (the first and every reconnect).', 'counter', perChat((r) => r.connection.stats.opened));
  metric('groupwire_chat_reconnects_total', 'Socket reconnects by cause (what the close code or refused upgrade asked for).', 'counter', function* () {
    for (const { runner, labels } of chats()) {
      for (const [cause, value] of Object.entries(runner.connection.reconnectCauses)) yield { labels: `${labels},cause="${cause}"`, value };
    }
  });
  metric('groupwire_chat_upgrades_refused_total', 'Socket upgrades the service refused.', 'counter', perChat((r) => r.connection.stats.refused));
  metric('groupwire_chat_malformed_frames_total', 'Frames that were not JSON or not a known object (logged and skipped).', 'counter', perChat((r) => r.connection.stats.malformedFrames));
  metric('groupwire_chat_outbox_depth', 'The bot\'s posts waiting to go into the chat (replies, relayed lines).', 'gauge', perChat((r) => r.outbox.pending));

  // Every side's backlog (a chat's outbox, a relay's channel queue), read once a scrape in O(1) a side.
  let sides: BacklogStatus[] | undefined;
  const backlogs = () => (sides ??= sources.backlogs?.() ?? []);
  const perSide = (read: (side: BacklogStatus) => number | null) => function* () {
    for (const side of backlogs()) {
      const value = read(side);
      if (value !== null) yield { labels: { bot: side.bot, side: side.side }, value };
    }
  };
  metric('groupwire_backlog_lines', 'Lines waiting for a side: a chat (the bot\'s posts: queued and sent unconfirmed) or a relay\'s channel (queued and in flight).', 'gauge', perSide((s) => s.lines));
  metric('groupwire_backlog_oldest_seconds', 'Age of the oldest line waiting for the side (0 when none waits).', 'gauge', perSide((s) => s.oldestSeconds));
  metric('groupwire_backlog_arriving_per_second', 'Lines a second queued for the side over the last minute.', 'gauge', perSide((s) => s.arrivingPerSecond));
  metric('groupwire_backlog_taken_per_second', 'Lines a second the side took (sent and confirmed) over the last minute: the rate it sustains.', 'gauge', perSide((s) => s.takenPerSecond));
  metric('groupwire_backlog_behind', '1 while the side is falling behind (the warning of docs/operations.md "Backlogs"), until it caught up.', 'gauge', perSide((s) => (s.behind ? 1 : 0)));

  const reports = function* () {
    for (const bot of bots()) for (const report of bot.pluginReports()) yield { bot, report, labels: { bot: bot.name, plugin: report.plugin, instance: report.instance } };
  };
  metric('groupwire_plugin_messages_total', 'Messages each plugin handled.', 'counter', function* () {
    for (const { report, labels } of reports()) yield { labels, value: report.chain.handled };
  });
  metric('groupwire_plugin_errors_total', 'Messages a plugin failed on (thrown or rejected; the chain went on).', 'counter', function* () {
    for (const { report, labels } of reports()) yield { labels, value: report.chain.errors };
  });
  metric('groupwire_plugin_timeouts_total', 'Messages a plugin took longer than its timeout on (the chain went on).', 'counter', function* () {
    for (const { report, labels } of reports()) yield { labels, value: report.chain.timeouts };
  });
  metric('groupwire_plugin_latency_seconds', 'The time a plugin spent on a message (its own, not the plugins after it).', 'histogram', function* () {
    for (const { report, labels } of reports()) {
      const histogram = report.latency;
      for (const { le, count } of histogram.cumulative()) yield { labels: { ...labels, le: le === Number.POSITIVE_INFINITY ? '+Inf' : le }, value: count, suffix: '_bucket' };
      yield { labels, value: histogram.sum, suffix: '_sum' };
      yield { labels, value: histogram.count, suffix: '_count' };
    }
  });
  metric('groupwire_plugin_queue_depth', 'Lines waiting in a plugin\'s queue (a relay\'s to_irc, to_slack, to_chat, ...).', 'gauge', function* () {
    for (const { report, labels } of reports()) {
      for (const [queue, value] of Object.entries(report.status.queues ?? {})) yield { labels: { bot: labels.bot, instance: labels.instance, queue }, value };
    }
  });
  metric('groupwire_plugin_connected', '1 when a relay is connected to its platform.', 'gauge', function* () {
    for (const { report, labels } of reports()) {
      if (report.status.connection) yield { labels: { bot: labels.bot, instance: labels.instance }, value: report.status.connection.state === 'connected' ? 1 : 0 };
    }
  });
  const pluginFamilies = pluginStats(families, reports);

  metric('groupwire_rest_calls_total', 'REST calls to the service by operation and answer (ok, or the error type), retries included.', 'counter', function* () {
    for (const bot of bots()) {
      for (const { operation, answer, count } of bot.client.calls.entries()) yield { labels: { bot: bot.name, operation, answer }, value: count };
    }
  });
  metric('groupwire_upgrades_total', 'Chat socket upgrades of the whole process, accepted or refused (its shared upgrade budget).', 'counter', () => [
    { labels: { outcome: 'accepted' }, value: sources.gate.stats.accepted },
    { labels: { outcome: 'refused' }, value: sources.gate.stats.refused },
  ]);
  metric('groupwire_log_lines_total', 'Warnings and errors logged, by level.', 'counter', () =>
    Object.entries(sources.errors.counts).map(([level, value]) => ({ labels: { level }, value })));
  if (sources.files) fileMetrics(metric, sources.files);
  if (sources.coordination) coordinationMetrics(metric, sources.coordination);
  metric('groupwire_reloads_total', 'Reloads of bots.yaml, applied or refused.', 'counter', () => {
    const { applied, refused } = sources.reloads();
    return [{ labels: { outcome: 'applied' }, value: applied }, { labels: { outcome: 'refused' }, value: refused }];
  });
  return {
    registry,
    scrape: async () => {
      scraped = undefined;
      snapshot = undefined;
      sides = undefined;
      scraped = chats();
      try {
        const text = [...families, ...pluginFamilies()].map((family) => family.render()).join('');
        return `${text}${await registry.metrics()}`;
      } finally {
        scraped = undefined;
        snapshot = undefined;
        sides = undefined;
      }
    },
  };
}

type AddMetric = (name: string, help: string, type: 'counter' | 'gauge', read: () => Iterable<Sample>) => void;

/** The gateways' files (docs/gateways.md "Files"): stored, their bytes, refused by reason (every reason, 0 until one happens). */
function fileMetrics(metric: AddMetric, read: () => FileCounts | undefined): void {
  metric('groupwire_files_stored_total', 'Files said on a side that the gateways stored in the media store (each once, whatever the sides it goes to).', 'counter',
    () => [{ labels: {}, value: read()?.stored ?? 0 }]);
  metric('groupwire_file_bytes_stored_total', 'Bytes of the files stored in the media store.', 'counter', () => [{ labels: {}, value: read()?.bytesStored ?? 0 }]);
  metric('groupwire_files_refused_total', 'Files said on a side that were not relayed, by reason (too_big, denied_type, size_mismatch, stalled, not_an_image, read_failed, no_store).', 'counter',
    () => REFUSAL_KINDS.map((reason) => ({ labels: { reason }, value: read()?.refused.get(reason) ?? 0 })));
}

/** A worker's families (docs/scale-out.md): what it holds, the placement of every unit, Redis, lease events. */
function coordinationMetrics(metric: AddMetric, read: () => CoordinationStatus): void {
  metric('groupwire_worker_units', 'Units this worker holds a lease on.', 'gauge', () => [{ labels: { worker: read().worker }, value: read().held.length }]);
  metric('groupwire_unit_lease_valid_seconds', 'How long each lease this worker holds is provably valid (renewed every fifth of lease_seconds).', 'gauge', () =>
    read().held.map((lease) => ({ labels: { unit: lease.unit, token: lease.token }, value: lease.validForSeconds })));
  metric('groupwire_unit_holder', 'Every unit of bots.yaml and the worker holding it (1), as read from Redis every 2 s; worker="" between holders.', 'gauge', () =>
    read().units.map((unit) => ({ labels: { unit: unit.unit, worker: unit.worker ?? '' }, value: 1 })));
  metric('groupwire_workers', 'Live workers sharing this bots.yaml, as read from Redis.', 'gauge', () => [{ labels: {}, value: read().workers.length }]);
  metric('groupwire_redis_up', '1 while this worker reaches Redis.', 'gauge', () => [{ labels: {}, value: read().redisUp ? 1 : 0 }]);
  metric('groupwire_lease_events_total', 'Leases acquired, handed over, lost, renewals that failed, and times Redis went unreachable.', 'counter', () =>
    Object.entries(read().counters).map(([event, value]) => ({ labels: { event }, value })));
}

/**
 * Every plugin's stats() under its own name: `groupwire_plugin_<plugin>_<stat>{bot, instance}`, as
 * gauges (a plugin's counters and its queue lengths look alike from here). The metric set follows the
 * plugins: a name seen at one scrape is registered then, and reads nothing once its plugin is gone.
 */
function pluginStats(
  ours: readonly ScrapeMetric[],
  reports: () => Iterable<{ report: { plugin: string; stats: Record<string, number> }; labels: Record<string, string> }>,
): () => ScrapeMetric[] {
  const known = new Map<string, ScrapeMetric>();
  const taken = new Set(ours.flatMap((family) => (family.type === 'histogram'
    ? [`${family.name}_bucket`, `${family.name}_sum`, `${family.name}_count`] : [family.name])));
  return () => {
    for (const { report } of reports()) {
      for (const stat of Object.keys(report.stats)) {
        const name = metricName(`groupwire_plugin_${report.plugin}_${stat}`);
        // A stat whose name would be one of ours is not exported twice.
        if (known.has(name) || taken.has(name)) continue;
        const plugin = report.plugin;
        known.set(name, new ScrapeMetric(name, `${plugin}'s stats().${stat}`, 'gauge', function* () {
          for (const { report: each, labels } of reports()) {
            const value = each.plugin === plugin ? each.stats[stat] : undefined;
            if (typeof value === 'number' && Number.isFinite(value)) yield { labels: { bot: labels.bot!, instance: labels.instance! }, value };
          }
        }));
      }
    }
    return [...known.values()];
  };
}

/** A Prometheus metric name from a plugin's name and stat key: anything else than [a-zA-Z0-9_] becomes `_`. */
export function metricName(raw: string): string {
  return raw.replace(/[^A-Za-z0-9_:]/g, '_').replace(/^[^A-Za-z_:]/, '_');
}
