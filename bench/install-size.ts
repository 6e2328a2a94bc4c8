import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './lib/paths.js';
import { report, type Figure } from './lib/report.js';

/**
 * #37: what a project gets from `npm install groupwire`. The package is packed twice the same way
 * (`git archive` of the commit, tsc, `npm pack`): as it is (HEAD) and as it was before the platform
 * libraries became optional packages (INSTALL_BASE_REF, default 43a367e). Each is installed into an
 * empty folder with `--omit=dev --prefer-offline` (from the npm cache this machine's install filled)
 * for a bot with the logger, the responder and relay-irc, and for one with every relay; with the
 * package as it is, the libraries are then installed by the commands `groupwire check` prints, and
 * check must pass. Packages (folders with a package.json under node_modules), MB on disk (du) and the
 * seconds of the npm commands, as ratios to the old package's install.
 */

const BASE_REF = process.env.INSTALL_BASE_REF ?? '43a367e';
const work = mkdtempSync(join(tmpdir(), 'gw-install-size-'));
const quiet = { npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false' };

function run(command: string, args: string[], options: SpawnSyncOptions = {}): string {
  const result = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, ...quiet }, ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return String(result.stdout);
}

/** The package of a commit, packed as `npm publish` would (built by tsc; the checkout's node_modules lent for it). */
function packAt(ref: string, label: string): string {
  const dir = join(work, `source-${label}`);
  mkdirSync(dir);
  run('sh', ['-c', `git -C '${ROOT}' archive ${ref} | tar -x -C '${dir}'`]);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  buildLenient(dir, label);
  // Both are groupwire-<version>.tgz: each in its own folder.
  const [packed] = JSON.parse(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: dir })) as Array<{ filename: string }>;
  return join(dir, packed!.filename);
}

/**
 * tsc in `dir`. An old commit may import a package this checkout's node_modules no longer has (the
 * base imports selfsigned, which went in #37): tsc then says TS2307 for it, and still writes the same
 * JavaScript (types are erased; the package itself is installed from the old package.json). Only that
 * error is let through; any other fails the bench.
 */
function buildLenient(dir: string, label: string): void {
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: dir, encoding: 'utf8' });
  if (result.status === 0) return;
  const errors = String(result.stdout).split('\n').filter((line) => line.includes(': error TS'));
  const missing = errors.map((line) => /: error TS2307: Cannot find module '([^'./][^']*)'/.exec(line)?.[1]);
  if (errors.length === 0 || missing.some((name) => name === undefined)) throw new Error(`tsc (${label}) exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  process.stdout.write(`(${label}: built without the types of ${[...new Set(missing)].join(', ')}, which this checkout no longer installs)\n`);
}

const IRC_BOT = `service:
  base_url: https://groups.example.com
ops: false
bots:
  - name: bridge
    login: { email: bridge@example.com, password: x }
    chats: [{ group: demo, chat: general }]
    plugins:
      - use: logger
      - use: responder
      - use: relay-irc
        with: { server: irc.example.net, nick: gwbot, channels: { general: "#general" } }
`;

const EVERY_RELAY = `${IRC_BOT}      - use: relay-slack
        with: { token: xoxb-1, app_token: xapp-1, channels: { general: C0123456789 } }
      - use: relay-discord
        with: { token: "MTA4NjY2MDQ3NzAyMzE1OTQyNA.GhYk7a.abcdefghijklmnopqrstuvwxyz0123456789AB", channels: { general: "1234567890123456789" } }
      - use: relay-matrix
        with: { homeserver: https://matrix.example.org, access_token: syt_Z3c_abcdefghijklmnopqrst_123456, user_id: "@g:example.org", rooms: { general: "#general:example.org" } }
      - use: relay-xmpp
        with: { service: "xmpp://chat.example.org:5222", jid: g@example.org, password: p, rooms: { general: general@conference.example.org } }
      - use: relay-telegram
        with: { token: "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", chats: { general: "-1001234567890" } }
      - use: relay-mattermost
        with: { server_url: https://chat.example.org, token: abcdefghijklmnopqrstuvwxyz, channels: { general: acme/town-square } }
      - use: relay-zulip
        with: { server_url: https://example.zulipchat.com, email: b@example.zulipchat.com, api_key: abcdefghijklmnopqrstuvwxyz012345, streams: { general: general/lobby } }
      - use: relay-rocketchat
        with: { server_url: https://chat.example.org, user_id: abcdefghijklmnopq, token: abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ, rooms: { general: "#general" } }
`;

interface Install { packages: number; mb: number; seconds: number; commands: string[] }

/** Installs `tarball` into an empty folder for `bots`, then what `groupwire check` asks for; check must pass. */
function install(label: string, tarball: string, bots: string): Install {
  const dir = join(work, label);
  mkdirSync(dir);
  run('npm', ['init', '-y'], { cwd: dir });
  writeFileSync(join(dir, 'bots.yaml'), bots);
  let seconds = 0;
  const npm = (args: string[]) => {
    const started = process.hrtime.bigint();
    run('npm', [...args, '--omit=dev', '--prefer-offline'], { cwd: dir });
    seconds += Number(process.hrtime.bigint() - started) / 1e9;
  };
  npm(['install', tarball]);
  const check = spawnSync('npx', ['groupwire', 'check', 'bots.yaml'], { cwd: dir, encoding: 'utf8', env: { ...process.env, ...quiet } });
  const commands = [...new Set([...check.stderr.matchAll(/: (npm install [^\n]+)$/gm)].map((match) => match[1]!))];
  for (const command of commands) npm(command.split(' ').slice(1));
  // The bot must work: check passes with what it asked for.
  run('npx', ['groupwire', 'check', 'bots.yaml'], { cwd: dir });
  const kb = Number(run('du', ['-sk', join(dir, 'node_modules')]).split('\t')[0]);
  return { packages: countPackages(join(dir, 'node_modules')), mb: kb / 1024, seconds, commands };
}

/** Folders with a package.json under node_modules, nested ones included (what npm counts as added). */
function countPackages(nodeModules: string): number {
  let count = 0;
  for (const entry of safeReaddir(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const dirs = entry.startsWith('@') ? safeReaddir(join(nodeModules, entry)).map((name) => join(entry, name)) : [entry];
    for (const name of dirs) {
      count += 1;
      count += countPackages(join(nodeModules, name, 'node_modules'));
    }
  }
  return count;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

try {
  const before = packAt(BASE_REF, 'before');
  const now = packAt('HEAD', 'now');
  const old = install('before-irc', before, IRC_BOT);
  const irc = install('now-irc', now, IRC_BOT);
  const every = install('now-every-relay', now, EVERY_RELAY);
  const oldEvery = install('before-every-relay', before, EVERY_RELAY);

  const columns = ['install', 'packages', 'MB on disk', 'seconds', 'commands check printed'];
  const row = (label: string, i: Install) => [label, i.packages, Number(i.mb.toFixed(1)), Number(i.seconds.toFixed(1)), i.commands.join('; ') || 'none'];
  const rows = [
    row(`before (${BASE_REF}): logger, responder, relay-irc`, old),
    row('now: logger, responder, relay-irc', irc),
    row(`before (${BASE_REF}): every relay`, oldEvery),
    row('now: every relay', every),
  ];
  const figure = (label: string, unit: string, value: number, base: number, baseLabel: string, limit?: number): Figure => ({
    label, value: Number(value.toFixed(1)), unit, baseline: { label: baseLabel, value: Number(base.toFixed(1)) }, ratio: value / base,
    ratioMeaning: 'of the package before (lower is better)',
    ...(limit === undefined ? {} : { limit: { text: `at most ${limit}x (#37)`, ok: value / base <= limit } }),
  });
  const figures = [
    figure('logger, responder, relay-irc: packages', 'packages', irc.packages, old.packages, 'the package before', 0.5),
    figure('logger, responder, relay-irc: MB on disk', 'MB', irc.mb, old.mb, 'the package before', 0.5),
    figure('logger, responder, relay-irc: seconds of npm', 's', irc.seconds, old.seconds, 'the package before'),
    figure('every relay: packages', 'packages', every.packages, oldEvery.packages, 'the package before'),
    figure('every relay: MB on disk', 'MB', every.mb, oldEvery.mb, 'the package before'),
    figure('every relay: seconds of npm', 's', every.seconds, oldEvery.seconds, 'the package before'),
  ];
  report({
    name: 'install-size',
    title: 'Install size: npm install of the package into an empty folder (#37)',
    table: { columns, rows },
    figures,
    notes: [
      `Each install: \`npm install --omit=dev --prefer-offline <tarball>\` in an empty folder (after \`npm init -y\`), then each \`npm install ...\` that \`groupwire check bots.yaml\` printed, then check again, which passes. Seconds are the npm commands' wall time from the warm cache.`,
      'With every relay, check printed one command per relay with a library (IRC, Slack, Discord, Matrix, XMPP, Telegram, Mattermost); Zulip and Rocket.Chat need none.',
      'What stays in the IRC bot: the local service the demo needs (fastify, sanitize-html: about 70 packages; its TLS certificates are made with node:crypto since selfsigned and its 22 packages went) and irc-framework\'s own 55 (browser polyfills, core-js); docs/install.md says why.',
    ],
  });
} finally {
  rmSync(work, { recursive: true, force: true });
}
