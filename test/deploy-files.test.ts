import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_OPS_LISTEN, loadBotsConfig } from '../src/config/bots-config.js';
import { ConfigError } from '../src/config/yaml-source.js';
import { EXIT_LOGIN_REFUSED } from '../src/cli/run-command.js';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import { Supervisor } from '../src/supervisor/supervisor.js';
import { EXPORTED_METRICS, WORKER_METRICS } from './helpers/alert-metrics.js';
import { ROOT } from './helpers/cli.js';
import { makeEnv, type Env } from './helpers/supervisor.js';
import { requireTool } from './helpers/require-tool.js';

/**
 * The files of deploy/ (docs/deploy.md), checked with the tools that will read them: systemd-analyze
 * (Debian's systemd package) for the unit, promtool (Debian's prometheus package) for the scrape config
 * and the alert rules, groupwire's own loader for the example bots.yaml. `docker build` cannot run on
 * this machine (a docker client, no engine), so the Dockerfile is checked for what can be checked here,
 * and its HEALTHCHECK command is run for real against an operations endpoint.
 */

/** Every groupwire_* metric the alerts may name (kept in a helper, so a scrape test can import it alone). */
export { EXPORTED_METRICS };

const DEPLOY = join(ROOT, 'deploy');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const scratch = mkdtempSync(join(tmpdir(), 'gw-deploy-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A unit file's `Key=value` lines, by key (a key given twice keeps both values). */
function unitKeys(text: string): Map<string, string[]> {
  const keys = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (match) keys.set(match[1]!, [...(keys.get(match[1]!) ?? []), match[2]!]);
  }
  return keys;
}

/** The unit as it would be installed, with its node at this machine's node (verify wants ExecStart's binary to exist). */
function verifyUnit(text: string): { code: number | null; output: string } {
  const file = join(scratch, 'groupwire.service');
  writeFileSync(file, text.replaceAll('/usr/bin/node ', `${process.execPath} `));
  const run = spawnSync(requireTool('systemd-analyze', 'systemd'), ['verify', '--man=no', file], { encoding: 'utf8' });
  if (run.error) throw new Error(`systemd-analyze could not run: ${run.error.message}`);
  return { code: run.status, output: `${run.stdout}${run.stderr}` };
}

function promtool(args: string[], cwd = DEPLOY): { code: number | null; output: string } {
  const run = spawnSync(requireTool('promtool', 'prometheus'), args, { cwd, encoding: 'utf8' });
  if (run.error) throw new Error(`promtool could not run: ${run.error.message}`);
  return { code: run.status, output: `${run.stdout}${run.stderr}` };
}

const EXAMPLE_ENV = { BOT_PASSWORD: 'bot-demo', GROUPWIRE_OPS_TOKEN: 't'.repeat(24) };

describe('deploy/groupwire.service', () => {
  const unit = read('deploy/groupwire.service');
  const keys = unitKeys(unit);

  test('systemd-analyze verify finds nothing to say (a warning is a failure, though verify exits 0 for it)', () => {
    expect(verifyUnit(unit)).toEqual({ code: 0, output: '' });
    // The check is not blind: a misspelt key and a missing binary are said.
    expect(verifyUnit(unit.replace(/^ProtectHome=/m, 'ProtectHom=')).output).toMatch(/Unknown key 'ProtectHom'/);
    expect(verifyUnit(unit.replace('/usr/bin/node ', '/nonexistent/node ')).code).not.toBe(0);
  });

  test('restarts on failure but not after every login was refused; reloads with SIGHUP; stops with time for the flush', () => {
    expect(keys.get('Restart')).toEqual(['on-failure']);
    expect(keys.get('RestartPreventExitStatus')![0]!.split(/\s+/)).toContain(String(EXIT_LOGIN_REFUSED));
    expect(keys.get('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    expect(keys.get('KillSignal')).toEqual(['SIGTERM']);
    expect(Number(keys.get('TimeoutStopSec')![0])).toBeGreaterThan(5);
    expect(keys.get('ExecStart')).toEqual(['/usr/bin/node /opt/groupwire/dist/src/cli/main.js run /etc/groupwire/bots.yaml']);
    expect(keys.get('EnvironmentFile')).toEqual(['/etc/groupwire/groupwire.env']);
  });

  test('a user of its own, the state in StateDirectory (where the example bots.yaml puts state_dir), and hardening', async () => {
    expect(keys.get('DynamicUser')).toEqual(['yes']);
    expect(keys.get('StateDirectory')).toEqual(['groupwire']);
    for (const [key, value] of [['NoNewPrivileges', 'yes'], ['ProtectSystem', 'strict'], ['ProtectHome', 'yes'], ['PrivateTmp', 'yes']]) {
      expect(keys.get(key!), key).toEqual([value]);
    }
    const loaded = await loadBotsConfig(join(DEPLOY, 'bots.yaml'), EXAMPLE_ENV);
    expect(loaded.config.state_dir).toBe(`/var/lib/${keys.get('StateDirectory')![0]}`);
    expect(loaded.config.ops).toMatchObject({ listen: DEFAULT_OPS_LISTEN, token: EXAMPLE_ENV.GROUPWIRE_OPS_TOKEN });
    // Every path the bots write to is under the state directory: the rest of the system is read-only.
    expect(loaded.config.bots[0]!.plugins.map((p) => (p.with as { dir?: string } | undefined)?.dir).filter(Boolean))
      .toEqual(['/var/lib/groupwire/transcripts']);
    // The plugins and their options pass, as groupwire check would have them.
    await expect(Supervisor.check(loaded)).resolves.toHaveLength(1);
  });
});

/** The Dockerfile as instructions (continuation lines joined), each with the stage it is in. */
function dockerfile(): Array<{ keyword: string; args: string; stage: string }> {
  const lines = read('deploy/Dockerfile').replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  let stage = '';
  return lines.map((line) => {
    const [keyword, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (keyword === 'FROM') stage = /\sAS\s+(\S+)/i.exec(args)?.[1] ?? '';
    return { keyword: keyword!.toUpperCase(), args, stage };
  });
}

describe('deploy/Dockerfile (docker build cannot run here: no engine)', () => {
  const steps = dockerfile();
  const of = (keyword: string) => steps.filter((s) => s.keyword === keyword);

  test('multi-stage on node:<engines major>-slim; every --from names an earlier stage', () => {
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    const major = /(\d+)/.exec(engines)![1];
    const froms = of('FROM').map((s) => s.args.split(/\s+/)[0]);
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const image of froms) expect(image).toBe(`node:${major}-slim`);
    const stages = of('FROM').map((s) => s.stage);
    for (const step of of('COPY').filter((s) => s.args.includes('--from='))) {
      const from = /--from=(\S+)/.exec(step.args)![1]!;
      expect(stages.slice(0, stages.indexOf(step.stage))).toContain(from);
    }
  });

  test('every COPY source from the context exists and is let in by .dockerignore (an allow list)', () => {
    const ignore = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    expect(ignore[0]).toBe('*');
    const allowed = ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    const sources = of('COPY').filter((s) => !s.args.includes('--from=')).flatMap((s) => s.args.split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      const path = source.replace(/^\.\//, '').replace(/\/$/, '');
      expect(existsSync(join(ROOT, path)), path).toBe(true);
      expect(allowed.some((a) => path === a || path.startsWith(`${a}/`)), `${path} in .dockerignore`).toBe(true);
    }
    // The build (tsc -p tsconfig.build.json) reads only what is copied in.
    const build = JSON.parse(read('tsconfig.build.json')) as { include: string[] };
    for (const dir of build.include) expect(sources).toContain(dir);
  });

  test('production dependencies without install scripts, as package.json\'s bin; non-root; the state a volume; 9464', async () => {
    const runtime = steps.filter((s) => s.stage === 'runtime');
    const installs = runtime.filter((s) => s.keyword === 'RUN' && s.args.includes('npm ci'));
    expect(installs).toHaveLength(1);
    expect(installs[0]!.args).toMatch(/--omit=dev/);
    expect(installs[0]!.args).toMatch(/--ignore-scripts/);
    // The optional packages (docs/install.md) too, so the image runs any bots.yaml: every peer dependency.
    expect(installs[0]!.args).toMatch(/npm install --save-prod --no-save --omit=dev --ignore-scripts .*peerDependencies/);
    // What --ignore-scripts skips (the image installs the optional packages, dev dependencies of the
    // repo, so every package of the lock counts): esbuild's (it checks its binary, found without it as
    // @esbuild/linux-x64) and core-js's (a banner), each denied in package.json's allowScripts. A new
    // one must be looked at.
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { hasInstallScript?: boolean; dev?: boolean }> };
    const scripted = Object.entries(lock.packages).filter(([, p]) => p.hasInstallScript).map(([path]) => path);
    expect(scripted.sort()).toEqual(['node_modules/core-js', 'node_modules/esbuild']);
    expect((JSON.parse(read('package.json')) as { allowScripts: unknown }).allowScripts).toEqual({ 'core-js': false, esbuild: false });

    const bin = (JSON.parse(read('package.json')) as { bin: { groupwire: string } }).bin.groupwire;
    expect(JSON.parse(runtime.find((s) => s.keyword === 'ENTRYPOINT')!.args)).toEqual(['node', `/app/${bin}`]);
    const user = runtime.filter((s) => s.keyword === 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);

    const env = Object.fromEntries(runtime.filter((s) => s.keyword === 'ENV').map((s) => s.args.split('=')));
    const loaded = await loadBotsConfig(join(DEPLOY, 'bots.yaml'), { ...EXAMPLE_ENV, ...env });
    expect(runtime.find((s) => s.keyword === 'VOLUME')!.args).toBe(loaded.config.state_dir);
    expect(loaded.config.ops).toMatchObject({ listen: '0.0.0.0:9464', token: EXAMPLE_ENV.GROUPWIRE_OPS_TOKEN });
    expect(runtime.find((s) => s.keyword === 'EXPOSE')!.args).toBe(DEFAULT_OPS_LISTEN.split(':')[1]);
    // Off loopback a token is required: the example says so rather than starting an open endpoint.
    const open = await loadBotsConfig(join(DEPLOY, 'bots.yaml'), { ...env, BOT_PASSWORD: 'x' }).catch((e: unknown) => e);
    expect(open).toBeInstanceOf(ConfigError);
    expect((open as ConfigError).problems.join('\n')).toMatch(/GROUPWIRE_OPS_TOKEN is not set/);
  });

  describe('HEALTHCHECK, run against a real operations endpoint', () => {
    let env: Env | undefined;
    let ops: Operations | undefined;
    afterEach(async () => {
      await ops?.close();
      await env?.close();
    });
    const healthcheck = () => {
      const step = of('HEALTHCHECK')[0]!;
      expect(step.args).not.toMatch(/curl|wget/);
      const command = JSON.parse(step.args.slice(step.args.indexOf('CMD ') + 4)) as string[];
      expect(command.slice(0, 2)).toEqual(['node', '-e']);
      expect(command[2]).toContain('/healthz');
      // Run asynchronously: the endpoint answers from this very process, whose event loop must go on.
      return (vars: Record<string, string>) => new Promise<number | null>((resolve, reject) => {
        const child = spawn(process.execPath, command.slice(1), { env: { PATH: process.env.PATH, ...vars }, stdio: 'ignore' });
        child.once('error', reject);
        child.once('exit', (code) => resolve(code));
      });
    };

    test('healthy with the container\'s token; unhealthy with another token, or nothing listening', { timeout: 60_000 }, async () => {
      const check = healthcheck();
      env = await makeEnv([{ chats: [{ chat: 'general' }] }]);
      const supervisor = await env.start();
      const token = 'h'.repeat(24);
      ops = new Operations({ supervisor, config: { listen: '127.0.0.1:0', token, lag_probe_seconds: 15 }, log: env.log.logger, errors: new RecentErrors(), stateDir: env.stateDir });
      await ops.start();
      const port = new URL(ops.url!).port;
      // /healthz wants the token too once one is set: without it, 401.
      expect((await fetch(`${ops.url}/healthz`)).status).toBe(401);
      expect(await check({ GROUPWIRE_OPS_LISTEN: `0.0.0.0:${port}`, GROUPWIRE_OPS_TOKEN: token })).toBe(0);
      expect(await check({ GROUPWIRE_OPS_LISTEN: `0.0.0.0:${port}`, GROUPWIRE_OPS_TOKEN: 'x'.repeat(24) })).toBe(1);
      await ops.close();
      ops = undefined;
      expect(await check({ GROUPWIRE_OPS_LISTEN: `0.0.0.0:${port}`, GROUPWIRE_OPS_TOKEN: token })).toBe(1);
    });
  });
});

describe('deploy/prometheus.yml and deploy/alerts.yml', () => {
  test('alerts.yml is a Prometheus rule file: groups[].rules[] with alert, expr, for, a severity and what to look at', () => {
    const rules = (parse(read('deploy/alerts.yml')) as { groups: Array<{ name: string; rules: Array<Record<string, any>> }> }).groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual(['GroupwireChatLagging', 'GroupwireRelayQueueGrowing', 'GroupwireBacklogFallingBehind', 'GroupwireBotNotReady', 'GroupwireDown', 'GroupwireRedisUnreachable', 'GroupwireUnitWithoutWorker']);
    for (const rule of rules) {
      expect(Object.keys(rule).sort(), rule.alert).toEqual(['alert', 'annotations', 'expr', 'for', 'labels']);
      expect(rule.for).toMatch(/^\d+m$/);
      expect(['warning', 'critical']).toContain(rule.labels.severity);
      expect(rule.annotations.description).toMatch(/groupwire status|\/status|journalctl|grep/);
    }
    const named = rules.flatMap((r) => String(r.expr).match(/\bgroupwire_[a-z_]+/g) ?? []);
    expect(named.length).toBeGreaterThan(0);
    for (const name of named) expect([...EXPORTED_METRICS, ...WORKER_METRICS]).toContain(name);
  });

  test('promtool: the rules load, and fire on the trouble they are for and not on the look-alikes (alerts.test.yml)', () => {
    expect(promtool(['check', 'rules', 'alerts.yml'])).toMatchObject({ code: 0 });
    const tested = promtool(['test', 'rules', 'alerts.test.yml']);
    expect(tested.output).toMatch(/SUCCESS/);
    expect(tested.code).toBe(0);
  });

  test('promtool check config: the scrape config is valid, sending the token from a file', () => {
    const tokenFile = join(scratch, 'ops-token');
    writeFileSync(tokenFile, 't'.repeat(24));
    const config = read('deploy/prometheus.yml');
    expect(config).toMatch(/credentials_file: \/etc\/prometheus\/groupwire-ops-token/);
    const file = join(scratch, 'prometheus.yml');
    // Where the files would be installed, here: promtool checks that they exist.
    writeFileSync(file, config.replace('/etc/prometheus/groupwire-alerts.yml', join(DEPLOY, 'alerts.yml')).replace('/etc/prometheus/groupwire-ops-token', tokenFile));
    const checked = promtool(['check', 'config', file], scratch);
    expect(checked.output).toMatch(/SUCCESS: 7 rules found/);
    expect(checked.code).toBe(0);
  });
});
