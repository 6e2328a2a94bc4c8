import { parseArgs } from 'node:util';
import { configPath, loadBotsConfig, type LoadedConfig } from '../config/bots-config.js';
import { sizeInWords } from '../media/file-lines.js';
import { Operations } from '../ops/operations.js';
import { RecentErrors } from '../ops/recent-errors.js';
import { createLogger } from '../supervisor/logging.js';
import { describeEndpoint, planGateways } from '../gateway/gateway-plan.js';
import { mediaDirOf, Supervisor } from '../supervisor/supervisor.js';
import { describeRefusal } from '../supervisor/login-wait.js';
import type { ReloadOutcome } from '../supervisor/reload-plan.js';
import { sayOnStderr } from '../supervisor/stderr-sink.js';
import { announceLocalService } from './demo-file.js';
import { planUnits } from '../coordination/units.js';
import { ConfigError } from '../config/yaml-source.js';
import { redact, writeErr, writeOut } from './output.js';
import { DEMO_FILE } from './service-address.js';
import { onHangup, stopOnSignal } from './signals.js';
import { UsageError } from './usage-error.js';
import { limitHeapGrowth } from './heap-growth.js';
import { keepYoungGenerationSmall } from './young-generation.js';
import { exitIfStillHeld } from './exit-after-stop.js';

export const RUN_HELP = `Usage: groupwire run [bots.yaml]

Runs the bots of bots.yaml (default ./bots.yaml) until SIGINT or SIGTERM. A first signal stops cleanly
(posts flushed for up to 5 s, sockets closed, plugins stopped, cursors saved); a second exits at once.
SIGHUP (or groupwire reload) re-reads bots.yaml and applies what changed without a restart: chats
and bots added or removed, a changed plugin restarted alone; unchanged chats keep their sockets. A file
with a mistake is refused and the running config goes on (docs/bots.md "Reload").
Unless bots.yaml says ops: false, the operations endpoint (default http://127.0.0.1:9464) serves
/status (a live page), /metrics (Prometheus), /healthz and /readyz (docs/operations.md).
With coordination: { redis: redis://... }, this process is one worker of several sharing the bots
through Redis: it runs its share of them, takes over a dead worker's, and on SIGTERM hands its own
over before it exits (docs/scale-out.md).
With service.base_url: embedded, .groupwire/demo.json in the working directory says where the service
is while it runs, so the client commands run from here (chat, api, ...) find it, as they find the demo.

V8's heap is kept within 1.5 times what is live; GROUPWIRE_HEAP_GROWTH=N (a percent, 1-300, default 50;
v8 for V8's own rule) changes that. Its young generation stays at the size it starts with;
GROUPWIRE_YOUNG_GENERATION=v8 lets node grow it (docs/operations.md "What grows and its bound").

A bot whose login the service refuses (wrong password or token, an account banned from its groups)
says so once and waits: it tries again when bots.yaml changes, or every 15 minutes. When every bot is
refused (each after its first attempt) there is nothing to run: groupwire run stops and exits 3.

Exit codes: 0 stopped by a signal, 1 an error (a bots.yaml mistake, a file that cannot be read),
2 a usage mistake, 3 every bot's login was refused.

Options:
  --log-level LEVEL   overrides log.level of bots.yaml
  -h, --help          this text
`;

export const CHECK_HELP = `Usage: groupwire check [bots.yaml]

Validates bots.yaml (default ./bots.yaml) without connecting: YAML, \${ENV} variables, the schema, every
plugin and its options. Each mistake is printed as file:line:col: what was expected. Exit 0 when valid,
1 when not. A valid but risky setting (a plugin's API served over plain HTTP to other machines) is
printed on stderr as warning: file:line:col: what and why; the exit code stays 0.
`;

function fileArgument(args: string[], help: string): { file: string; logLevel?: string } | undefined {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' }, 'log-level': { type: 'string' } }, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (parsed.values.help) {
    process.stdout.write(help);
    return undefined;
  }
  if (parsed.positionals.length > 1) throw new UsageError('give one bots.yaml at most');
  return { file: parsed.positionals[0] ?? 'bots.yaml', logLevel: parsed.values['log-level'] };
}

export async function runCommand(args: string[]): Promise<number> {
  const options = fileArgument(args, RUN_HELP);
  if (!options) return 0;
  // Before anything is loaded: the bots' heap is kept near what is live (docs/operations.md "What grows and its bound").
  limitHeapGrowth();
  keepYoungGenerationSmall();
  const loaded = await loadBotsConfig(options.file);
  // The status page lists the last warnings and errors: they are taken off the log lines as written.
  const errors = new RecentErrors();
  const log = createLogger({ level: options.logLevel ?? loaded.config.log.level, pretty: loaded.config.log.pretty, tee: errors });
  // Redis and the worker are loaded only for a bots.yaml that names them (#20).
  if (loaded.config.coordination) return (await import('./run-worker.js')).runWorker(loaded, options.file, log, errors);
  // A SIGHUP while the bots start is said and ignored; from the moment they run it reloads bots.yaml.
  let reload: (() => Promise<ReloadOutcome>) | undefined;
  onHangup(() => {
    if (reload) void reload();
    else log.warn('SIGHUP while starting: ignored; send it again once groupwire run is up to reload bots.yaml');
  });
  const supervisor = await Supervisor.start(loaded, { log });
  const stateDir = configPath(loaded, loaded.config.state_dir);
  const reloads = { applied: 0, refused: 0 };
  reload = async () => {
    const outcome = await supervisor.reload(options.file);
    reloads[outcome.applied ? 'applied' : 'refused'] += 1;
    // A changed ops: starts the endpoint again, once the answer to a POST /reload has gone out.
    if (outcome.applied && outcome.opsChanged) {
      setTimeout(() => void operations.start(supervisor.loaded.config.ops).catch((error: unknown) => log.error({ err: error }, 'the operations endpoint could not start again')), 200);
    }
    return outcome;
  };
  const operations = new Operations({
    supervisor, config: loaded.config.ops, log, errors, stateDir, reload, lastReload: () => supervisor.lastReload, reloads: () => reloads,
  });
  await operations.start();
  const service = supervisor.localService;
  if (service) {
    // An embedded service: client commands (chat, api, ...) run from here find it, as they find the demo.
    const announced = await announceLocalService(
      { base_url: service.baseUrl, ca_file: service.caFile, state_dir: stateDir }, (line) => log.warn(line));
    if (announced) log.info({ baseUrl: service.baseUrl, file: DEMO_FILE }, 'the embedded service is up; client commands run from this directory find it');
  }
  const outcome = await Promise.race([
    stopOnSignal(async () => {
      await operations.close();
      await supervisor.stop();
    }).then(() => 'stopped' as const),
    supervisor.everyLoginRefused(),
  ]);
  if (outcome === 'stopped') {
    exitIfStillHeld(log, 0);
    return 0;
  }
  // Exiting at once (not after a retry): a person at the terminal gets the reason now, and under a
  // service manager the documented exit code 3 tells it not to restart (see docs/bots.md).
  await operations.close();
  await supervisor.stop(0);
  const lines = outcome.map((refusal) => `groupwire: ${describeRefusal(refusal)}\n`);
  sayOnStderr(redact(`${lines.join('')}groupwire: no bot can log in; exiting (code ${EXIT_LOGIN_REFUSED})`));
  exitIfStillHeld(log, EXIT_LOGIN_REFUSED);
  return EXIT_LOGIN_REFUSED;
}

/** `groupwire run`'s exit code when every bot's login is refused: restarting will not help. */
export const EXIT_LOGIN_REFUSED = 3;

/** bots.yaml's `media:` in words (docs/gateways.md "Files"): where files are kept, their limits, where the links go. */
function describeMedia(loaded: LoadedConfig): string[] {
  const media = loaded.config.media;
  const dir = mediaDirOf(loaded);
  const links = media.public_url ? `links at ${media.public_url}/<id>/<name>`
    : media.listen ? `links at http://${media.listen}/<id>/<name> (set public_url for a proxy or CDN in front)`
      : 'no links (set media.listen, or public_url): the chat and IRC see file names only';
  const lines = [
    `  files: kept in ${dir} for ${media.retention_days} day(s), up to ${sizeInWords(media.max_size)} each; refused: ${media.deny_types.length} type(s) (deny_types), downloads silent for ${media.stall_timeout} s`,
    `    ${media.listen ? `served on http://${media.listen}; ` : 'no listener; '}${links}`,
  ];
  const host = media.listen?.slice(0, media.listen.lastIndexOf(':'));
  if (media.listen && !media.public_url && (host === '0.0.0.0' || host === '[::]')) {
    lines.push(`    media.listen ${media.listen} listens on every address: set public_url to the address people open (links would say ${host})`);
  }
  return lines;
}

export async function checkCommand(args: string[]): Promise<number> {
  const options = fileArgument(args, CHECK_HELP);
  if (!options) return 0;
  const loaded = await loadBotsConfig(options.file);
  const plugins = await Supervisor.check(loaded);
  const summary = loaded.config.bots.map((bot, index) =>
    `  ${bot.name}: ${bot.chats.length} chat(s), plugins: ${plugins[index]!.map((p) => p.name).join(', ') || 'none'}; `
    + `its own lines go out as ${bot.speaker_name ? `"${bot.speaker_name}" (speaker_name)` : 'its account\'s display name (set speaker_name: to choose)'}`);
  // The gateways as resolved (the relays' own channels: included), so a user sees what will be joined to what.
  for (const gateway of planGateways(loaded, plugins).gateways) {
    summary.push(`  gateway ${gateway.name}${gateway.implied ? ' (from the relays\' channels:)' : ''}: ${gateway.endpoints.map(describeEndpoint).join(' ⇄ ')}`);
    // Lines between relays go straight from the intake unless the gateway says otherwise: say which, and what it costs.
    if (gateway.throughChat) summary.push('    through_chat: lines between its relays go through the chat first (the chain sees them before the other relays do; each waits for its post to be confirmed from the chat\'s history)');
  }
  const coordination = loaded.config.coordination;
  if (coordination) {
    const { units, problems } = planUnits(loaded, plugins, planGateways(loaded, plugins).gateways);
    if (problems.length > 0) throw new ConfigError(problems);
    const { redactRedisUrl } = await import('../coordination/redis-connection.js');
    summary.push(`  workers share ${units.length} unit(s) through Redis (${redactRedisUrl(coordination.redis)}, leases of ${coordination.lease_seconds} s): ${units.map((unit) => unit.id).join(', ')}`);
  }
  summary.push(...describeMedia(loaded));
  const ops = loaded.config.ops;
  summary.push(ops ? `  operations endpoint: http://${ops.listen} (/status, /metrics, /healthz, /readyz)${ops.token ? ', token required' : ''}` : '  operations endpoint: off (ops: false)');
  writeOut(`${options.file} is valid\n${summary.join('\n')}\n`);
  // Valid but risky settings (a plugin's warnings): said on stderr, the exit code stays 0.
  const warnings = plugins.flat().flatMap((plugin) => plugin.warnings ?? []);
  if (warnings.length > 0) writeErr(warnings.map((warning) => `warning: ${warning}\n`).join(''));
  return 0;
}
