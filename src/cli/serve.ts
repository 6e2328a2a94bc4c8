import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from '../service/connection-limits.js';
import { ID_STYLES, type IdStyle } from '../service/ids.js';
import { LocalService, type LocalServiceOptions } from '../service/local-service.js';
import { parseRateLimit } from '../service/rate-limit.js';
import { readSeedFile } from '../service/seed.js';
import { announceLocalService, removeOwnDemoFile } from './demo-file.js';
import { DEMO_FILE } from './service-address.js';
import { StderrSink } from '../supervisor/stderr-sink.js';
import { ignoreHangup, stopOnSignal } from './signals.js';
import { UsageError } from './usage-error.js';

export const SERVE_HELP = `Usage: groupwire serve [options]

Runs the local Group Discussion Service over HTTPS and WSS. When ready it prints one JSON line to
stdout: {"base_url": ..., "ca_file": ..., "admin_token": ...}. Logs go to stderr. While it runs,
${DEMO_FILE} in the working directory says where it is, so the client commands (api, topics, chat,
...) run from here find it without GROUPWIRE_URL (not when a running demo already uses that file).

Options:
  --host HOST              address to listen on (default 127.0.0.1)
  --port N                 port; 0 picks a free one (default 0)
  --seed FILE              start from this YAML seed instead of the built-in demo seed
  --ids STYLE              numeric (default), big (integers above 2^53) or opaque (strings up to 255 chars)
  --state FILE             keep the data in FILE across restarts
  --tls-cert F --tls-key F serve this certificate instead of a generated one
  --rate-limit R[/B]       per-caller requests per second and burst, or off (default 100/200)
  --upgrade-rate-limit R[/B] per-caller chat socket upgrades per second and burst, or off (default 20/50)
  --ping-interval SECONDS  how often chat sockets are pinged (default 30)
  --max-connections-per-address N
                           open connections one address (an IPv6 /64) may hold, chat sockets not
                           counted; one more is closed as it arrives (default ${DEFAULT_CONNECTION_LIMITS.perAddress})
  --idle-timeout SECONDS   a connection silent this long is closed (before, between or during
                           requests; not chat sockets) (default ${DEFAULT_CONNECTION_LIMITS.idleTimeoutMs / 1000})
  --headers-timeout SECONDS  a request's headers must arrive within this (default ${DEFAULT_CONNECTION_LIMITS.headersTimeoutMs / 1000})
  --request-timeout SECONDS  a whole request, body included, within this (default ${DEFAULT_CONNECTION_LIMITS.requestTimeoutMs / 1000})
  --handshake-timeout SECONDS  the TLS handshake within this (default ${DEFAULT_CONNECTION_LIMITS.handshakeTimeoutMs / 1000})
  --admin-token TOKEN      the admin API's token (default: random, printed)
  --log-level LEVEL        pino level for stderr (default info)
  -h, --help               this text
`;

export async function serveOptionsFromArgs(args: string[]): Promise<LocalServiceOptions & { help?: boolean }> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        host: { type: 'string' }, port: { type: 'string' }, seed: { type: 'string' }, ids: { type: 'string' },
        state: { type: 'string' }, 'tls-cert': { type: 'string' }, 'tls-key': { type: 'string' },
        'rate-limit': { type: 'string' }, 'upgrade-rate-limit': { type: 'string' }, 'ping-interval': { type: 'string' },
        'admin-token': { type: 'string' }, 'log-level': { type: 'string' }, help: { type: 'boolean', short: 'h' },
        'max-connections-per-address': { type: 'string' }, 'idle-timeout': { type: 'string' }, 'headers-timeout': { type: 'string' },
        'request-timeout': { type: 'string' }, 'handshake-timeout': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return { help: true };
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0 to 65535, got ${values.port}`);
  if (values.ids !== undefined && !ID_STYLES.includes(values.ids as IdStyle)) {
    throw new UsageError(`--ids must be one of ${ID_STYLES.join(', ')}, got ${values.ids}`);
  }
  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) {
    throw new UsageError('--tls-cert and --tls-key go together');
  }
  const rate = (flag: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    try {
      return parseRateLimit(text);
    } catch (error) {
      throw new UsageError(`${flag}: ${(error as Error).message}`);
    }
  };
  const pingSeconds = values['ping-interval'] === undefined ? 30 : Number(values['ping-interval']);
  if (!(pingSeconds > 0)) throw new UsageError('--ping-interval must be a positive number of seconds');
  const connectionLimits = connectionLimitsFromArgs(values);
  return {
    host: values.host,
    port,
    idStyle: values.ids as IdStyle | undefined,
    seed: values.seed ? await readSeedFile(values.seed) : 'demo',
    statePath: values.state,
    tls: values['tls-cert'] && values['tls-key']
      ? { cert: await readFile(values['tls-cert'], 'utf8'), key: await readFile(values['tls-key'], 'utf8'), caFile: values['tls-cert'] }
      : undefined,
    rateLimit: rate('--rate-limit', values['rate-limit']),
    upgradeRateLimit: rate('--upgrade-rate-limit', values['upgrade-rate-limit']),
    pingIntervalMs: pingSeconds * 1000,
    connectionLimits,
    adminToken: values['admin-token'],
    logger: pino({ level: values['log-level'] ?? 'info' }, new StderrSink()),
  };
}

/** The connection flags given (each a positive number; the rest keep their defaults). */
function connectionLimitsFromArgs(values: Record<string, string | boolean | undefined>): Partial<ConnectionLimits> {
  const limits: Partial<ConnectionLimits> = {};
  const positive = (flag: string): number | undefined => {
    const text = values[flag];
    if (typeof text !== 'string') return undefined;
    const value = Number(text);
    if (!(value > 0) || !Number.isFinite(value)) throw new UsageError(`--${flag} must be a positive number, got ${text}`);
    return value;
  };
  const perAddress = positive('max-connections-per-address');
  if (perAddress !== undefined) {
    if (!Number.isInteger(perAddress)) throw new UsageError(`--max-connections-per-address must be a whole number, got ${perAddress}`);
    limits.perAddress = perAddress;
  }
  const seconds: Array<[string, keyof ConnectionLimits]> = [
    ['idle-timeout', 'idleTimeoutMs'], ['headers-timeout', 'headersTimeoutMs'],
    ['request-timeout', 'requestTimeoutMs'], ['handshake-timeout', 'handshakeTimeoutMs'],
  ];
  for (const [flag, key] of seconds) {
    const value = positive(flag);
    if (value !== undefined) limits[key] = Math.round(value * 1000);
  }
  const headers = limits.headersTimeoutMs ?? DEFAULT_CONNECTION_LIMITS.headersTimeoutMs;
  const request = limits.requestTimeoutMs ?? DEFAULT_CONNECTION_LIMITS.requestTimeoutMs;
  if (headers > request) throw new UsageError('--headers-timeout must not be longer than --request-timeout');
  return limits;
}

/** Starts the service and keeps it up until SIGINT or SIGTERM. */
export async function serve(args: string[], announce: (service: LocalService) => void = printReadyLine): Promise<void> {
  const options = await serveOptionsFromArgs(args);
  if (options.help) {
    process.stdout.write(SERVE_HELP);
    return;
  }
  // Before anything slow: a SIGHUP while starting must not end the process either.
  ignoreHangup();
  const service = await LocalService.start(options);
  // Before the ready line: a SIGTERM sent as soon as it is read must stop the service cleanly too.
  const stopped = stopOnSignal(() => service.close());
  announce(service);
  // The state file's folder, like the demo's state_dir, so a demo over the same state is refused.
  const stateDir = options.statePath === undefined ? '' : dirname(resolve(options.statePath));
  const wroteDemoFile = await announceLocalService(
    { base_url: service.baseUrl, ca_file: service.caFile, state_dir: stateDir },
    (line) => process.stderr.write(`groupwire: ${line}\n`),
  );
  try {
    await stopped;
  } finally {
    if (wroteDemoFile) removeOwnDemoFile();
  }
}

function printReadyLine(service: LocalService): void {
  process.stdout.write(`${JSON.stringify({ base_url: service.baseUrl, ca_file: service.caFile ?? null, admin_token: service.adminToken })}\n`);
}
