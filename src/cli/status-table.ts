import type { GatewayStatus } from '../ops/gateway-watch.js';
import type { BotStatus, PluginStatusLine, StatusSnapshot } from '../ops/status-snapshot.js';
import { formatDate } from './output.js';
import { terminalText } from './terminal-text.js';

/** How many of the process's last warnings and errors `groupwire status` prints. */
const ERRORS_SHOWN = 5;

/**
 * `groupwire status` as text: a header (version, pid, uptime, ready or not), per bot a table of its
 * chats and one of its plugins, per gateway one of its sides, the sides falling behind, the last reload and the last errors. Plain columns, no colour: it reads
 * the same in a terminal, a pipe and a log.
 */
export function statusTable(snapshot: StatusSnapshot, url: string): string {
  const now = snapshot.now;
  const lines = [
    `groupwire ${clean(snapshot.version)} · pid ${snapshot.pid} · up ${duration(snapshot.uptimeSeconds)} · ${snapshot.ready ? 'ready' : 'NOT READY'}`,
    `${url} · ${formatDate(now)} · memory ${Math.round(snapshot.process.rssBytes / 1048576)} MB · event loop lag ${snapshot.process.eventLoopLagMs} ms`,
  ];
  if (snapshot.coordination) lines.push('', ...workerLines(snapshot.coordination));
  if (snapshot.bots.length === 0) lines.push('', snapshot.coordination ? 'No units held by this worker (a standby).' : 'No bots.');
  for (const bot of snapshot.bots) lines.push('', ...botLines(bot, now));
  // A process of an earlier version sends no gateways.
  for (const gateway of snapshot.gateways ?? []) lines.push('', ...gatewayLines(gateway, now));
  // Sides falling behind (docs/operations.md "Backlogs"); a process of an earlier version sends none.
  const behind = (snapshot.backlogs ?? []).filter((side) => side.behind);
  if (behind.length > 0) lines.push('', 'Falling behind:', ...behind.map((side) => `  ${clean(side.bot)}: ${clip(side.warning ?? `${side.side}: ${side.lines} waiting`, 300)}`));
  const reload = snapshot.lastReload;
  if (reload) {
    lines.push('', `Last reload ${ago(reload.at, now)}: ${reload.applied ? 'applied' : 'refused'}`);
    for (const change of reload.changes) lines.push(`  ${clean(change)}`);
    for (const problem of reload.problems) lines.push(`  ${clean(problem)}`);
  }
  const errors = snapshot.errors.slice(0, ERRORS_SHOWN);
  lines.push('', errors.length === 0 ? 'No warnings or errors since the start.'
    : `Last warnings and errors (${errors.length} of ${snapshot.errors.length}, newest first):`);
  lines.push(...indent(columns(errors.map((error) => [
    formatDate(error.at), error.level, [error.bot, error.chat, error.plugin].filter(Boolean).join(' · '),
    error.msg + (error.detail ? `: ${error.detail}` : ''),
  ].map((cell) => clip(cell, 100))))));
  return `${lines.join('\n')}\n`;
}

/** A worker of several: Redis, every live worker with its units, and units between holders. */
function workerLines(status: NonNullable<StatusSnapshot['coordination']>): string[] {
  const lines = [`Worker ${clean(status.worker)} of ${status.workers.length} · Redis ${status.redisUp ? 'up' : 'UNREACHABLE'} · leases of ${status.leaseSeconds} s · prefix ${clean(status.prefix)}`];
  const token = new Map(status.units.map((unit) => [unit.unit, unit.token]));
  lines.push(...indent(columns([
    ['WORKER', 'HOST', 'PID', 'UNITS', 'HELD'],
    ...status.workers.map((worker) => [
      `${worker.id}${worker.id === status.worker ? ' (this one)' : ''}`, worker.host ?? '', worker.pid === undefined ? '' : String(worker.pid),
      String(worker.units.length), clip(worker.units.map((unit) => `${unit} (token ${token.get(unit) ?? '?'})`).join(', '), 120),
    ]),
  ], [2, 3])));
  const free = status.units.filter((unit) => unit.worker === undefined);
  if (free.length > 0) lines.push(`  between holders: ${clip(free.map((unit) => unit.unit).join(', '), 120)}`);
  return lines;
}

function botLines(bot: BotStatus, now: string): string[] {
  const lines = [`Bot ${clean(bot.name)}: ${bot.phase}${bot.reason ? ` (${clean(bot.reason)})` : ''}`];
  if (bot.chats.length === 0) lines.push('  no chats');
  else {
    lines.push(...indent(columns([
      ['CHAT', 'GROUP', 'STATE', 'SINCE', 'LAG', 'LAST MESSAGE', 'OUTBOX', 'RECONNECTS', 'LAST TROUBLE'],
      ...bot.chats.map((chat) => {
        const trouble = chat.lastTrouble ? `${chat.lastTrouble.what} (${ago(chat.lastTrouble.at, now)})` : '';
        const why = !chat.ready && chat.reason && chat.reason !== chat.lastTrouble?.what ? `${chat.reason}${trouble ? `; ${trouble}` : ''}` : trouble;
        return [clip(chat.subject, 40), clip(chat.group, 30), chat.state, ago(chat.since, now), String(chat.lag),
          chat.lastMessageAt ? ago(chat.lastMessageAt, now) : 'none yet', String(chat.outbox), String(chat.reconnects), clip(why, 80)];
      }),
    ], [4, 6, 7])));
  }
  if (bot.plugins.length > 0) {
    lines.push(...indent(columns([
      ['PLUGIN', 'USE', 'HANDLED', 'ERRORS', 'TIMEOUTS', 'CONNECTION', 'QUEUES'],
      ...bot.plugins.map((plugin) => [
        plugin.instance, clip(plugin.plugin, 40), handled(plugin), String(plugin.errors), String(plugin.timeouts),
        plugin.connection ? clip(`${plugin.connection.state}${plugin.connection.detail ? ` ${plugin.connection.detail}` : ''}`, 60) : '',
        Object.entries(plugin.queues ?? {}).map(([name, depth]) => `${name} ${depth}`).join(', '),
      ]),
    ], [2, 3, 4])));
  }
  return lines;
}

/**
 * What a plugin handled: a relay's lines do not pass its handle(), so its lines in and out (over its
 * sides, each under its gateway) say it, as on the page; any other plugin, the messages it handled.
 */
function handled(plugin: PluginStatusLine): string {
  if (!plugin.sides) return String(plugin.handled);
  const sum = (key: 'linesIn' | 'linesOut') => plugin.sides!.reduce((total, side) => total + side[key], 0);
  return `in ${sum('linesIn')} · out ${sum('linesOut')}`;
}

/** A gateway and its sides, as on the page without its charts: state, lines in and out, last minute, queue, last line, lag. */
function gatewayLines(gateway: GatewayStatus, now: string): string[] {
  return [`Gateway ${clean(gateway.name)}${gateway.implied ? ' (from the relays\' channels)' : ''}`, ...indent(columns([
    ['SIDE', 'BOT', 'STATE', 'IN', 'OUT', 'LAST MINUTE', 'QUEUE', 'LAST LINE', 'LAG'],
    ...gateway.sides.map((side) => [
      clip(side.side, 40), clip(side.bot, 30), side.state.replaceAll('_', ' '), String(side.linesIn), String(side.linesOut),
      side.lastMinute ? `${side.lastMinute.in} in · ${side.lastMinute.out} out` : '–', String(side.queue),
      side.lastLineAt ? ago(side.lastLineAt, now) : 'none yet', duration(side.lagSeconds),
    ]),
  ], [3, 4, 6]))];
}

/** Rows padded to their columns' widths; `numeric` columns aligned right. Every cell is cleaned first. */
function columns(rows: string[][], numeric: number[] = []): string[] {
  const cells = rows.map((row) => row.map(clean));
  const widths: number[] = [];
  for (const row of cells) row.forEach((cell, i) => { widths[i] = Math.max(widths[i] ?? 0, width(cell)); });
  return cells.map((row) => row.map((cell, i) => {
    if (i === row.length - 1 && !numeric.includes(i)) return cell;
    const pad = ' '.repeat((widths[i] ?? 0) - width(cell));
    return numeric.includes(i) ? pad + cell : cell + pad;
  }).join('  ').trimEnd());
}

function indent(lines: string[]): string[] {
  return lines.map((line) => `  ${line}`);
}

function width(text: string): number {
  return [...text].length;
}

/**
 * Text from the service or a plugin (subjects, errors) as one safe line: line breaks and tabs as
 * spaces, other control characters (a terminal's escape sequences among them) and bidi controls
 * shown as codes (terminal-text.ts).
 */
function clean(text: string): string {
  return terminalText(text.replace(/[\r\n\t]+/g, ' '));
}

function clip(text: string, most: number): string {
  const chars = [...text];
  return chars.length <= most ? text : `${chars.slice(0, most - 1).join('')}…`;
}

export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  const d = Math.floor(h / 24);
  const and = (count: number, unit: string) => (count > 0 ? ` ${count} ${unit}` : '');
  if (d > 0) return `${d} d${and(h % 24, 'h')}`;
  if (h > 0) return `${h} h${and(m % 60, 'min')}`;
  return `${m} min${and(s % 60, 's')}`;
}

/** How long before the snapshot's own time (so a clock that is off here does not matter). */
function ago(iso: string, now: string): string {
  const seconds = (Date.parse(now) - Date.parse(iso)) / 1000;
  return seconds < 2 ? 'just now' : `${duration(seconds)} ago`;
}
