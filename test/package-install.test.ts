import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type WebSocket from 'ws';
import { afterAll, describe, expect, test } from 'vitest';
import { GroupsClient } from '../src/api/client.js';
import type { Chat, ChatMessage } from '../src/api/types.js';
import { parseWireJson } from '../src/api/wire-json.js';
import { DEMO_ACCOUNTS } from '../src/service/demo-seed.js';
import { collect } from './helpers/built-cli.js';
import { cleanEnv, ROOT } from './helpers/cli.js';

/**
 * #37: groupwire as a user gets it. The checkout is built (tsc, incremental: a no-op when dist/ is
 * current) and packed as `npm publish` would pack it; the tarball is installed into an empty folder
 * from the npm cache this machine's install filled (--prefer-offline); there, the commands run as a
 * user types them: npx groupwire --help, demo (answering !ping), new-plugin, check (refusing the
 * TypeScript plugin until the optional esbuild is installed with the command it prints), the README's
 * install line, test-plugin, run.
 */

const dirs: string[] = [];
const children: ChildProcess[] = [];
const clients: GroupsClient[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(clients.map((client) => client.close()));
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The environment of a user's shell: no GROUPWIRE_* of the runner, npm quiet about funding and audits. */
const userEnv = () => cleanEnv({ npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false' });

function sh(command: string, args: string[], cwd: string) {
  return collect(spawn(command, args, { cwd, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] }));
}

function ok(result: { code: number | null; stdout: string; stderr: string }, what: string) {
  if (result.code !== 0) throw new Error(`${what} exited ${result.code}\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** npm's warnings in an output (`npm warn ...`), which a clean install has none of. */
const npmWarnings = (text: string) => text.split('\n').filter((line) => /^npm (warn|WARN)/.test(line));

/** A long-running `npx groupwire ...` with its output so far. */
function start(args: string[], cwd: string) {
  const child = spawn('npx', ['groupwire', ...args], { cwd, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    async waitFor(pattern: RegExp) {
      const deadline = Date.now() + 30_000;
      while (!pattern.test(output)) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`never matched ${pattern}:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    /** SIGINT to npx and groupwire under it (one process group), as Ctrl-C in a terminal; the output. */
    async stop(): Promise<string> {
      process.kill(-child.pid!, 'SIGINT');
      await exited;
      // npx dies of the signal itself; groupwire's own stop is what it says last.
      await new Promise((resolve) => setTimeout(resolve, 200));
      return output;
    },
  };
}

/** bob says `text` in #general of the service `.groupwire/demo.json` names, and gets the bot's next line. */
async function ask(project: string, text: string): Promise<string> {
  const demo = JSON.parse(await readFile(join(project, '.groupwire', 'demo.json'), 'utf8')) as { base_url: string; ca_file: string };
  const client = new GroupsClient({ baseUrl: demo.base_url, caFile: demo.ca_file, credentials: { email: DEMO_ACCOUNTS.bob.email, password: DEMO_ACCOUNTS.bob.password } });
  clients.push(client);
  const chats = await client.paginate<Chat>('getchats', { group_name: 'demo', limit: 100 }).all();
  const chat = chats.find((c) => c.subject === 'general')!;
  const chatsubId = chat.chat_sub?.id ?? (await client.joinChat({ chat_id: chat.id })).id;
  const ws: WebSocket = await client.openChatSocket({ chatsubId, noHistory: true });
  const answer = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer to ${text}`)), 20_000);
    ws.on('message', (data) => {
      const frame = parseWireJson(String(data)) as ChatMessage;
      if (frame.object !== 'chat_message' || frame.user_name !== 'bot') return;
      // A line the bot relays (`<Carol Member> New topic: …`: the demo's topic, announced by this run when
      // the demo stopped before it was) is not its answer.
      if (/^<[^>]+> /.test(frame.message)) return;
      clearTimeout(timer);
      resolve(frame.message);
    });
  });
  ws.send(JSON.stringify({ object: 'chat_post', message: text }));
  try {
    return await answer;
  } finally {
    ws.terminate();
  }
}

describe('the package, installed from its tarball', () => {
  test('packs what the commands need, installs cleanly from the cache, and works as a user runs it', { timeout: 180_000 }, async () => {
    const work = await mkdtemp(join(tmpdir(), 'gw-package-'));
    dirs.push(work);
    // The build as a clone makes it (npm start's prestart, npm run build): its bin is executable, as
    // `npx groupwire` in the clone runs it (a rebuilt dist/ left it 0644: "sh: groupwire: Permission denied").
    const bin = join(ROOT, 'dist', 'src', 'cli', 'main.js');
    await chmod(bin, 0o644).catch(() => undefined);
    ok(await sh('npm', ['run', '--silent', 'build'], ROOT), 'npm run build');
    expect((await stat(bin)).mode & 0o111).toBe(0o111);
    expect(ok(await sh(bin, ['--help'], ROOT), 'the bin itself').stdout).toMatch(/^Usage: groupwire/m);
    // --ignore-scripts: prepack's clean build would remove the dist/ other tests may be building into.
    const packed = ok(await sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT), 'npm pack');
    const [pack] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const files = pack!.files.map((file) => file.path);
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'bots.yaml', 'dist/src/cli/main.js', 'dist/src/index.d.ts', 'docs/bots.md', 'docs/install.md']));
    expect(files.filter((path) => !/^(dist\/(src|plugins)\/|docs\/|package\.json$|README\.md$|bots\.yaml$)/.test(path))).toEqual([]);
    expect(files.filter((path) => path.endsWith('.map') || path.includes('.tsbuildinfo'))).toEqual([]);

    const project = join(work, 'project');
    ok(await sh('mkdir', [project], work), 'mkdir');
    ok(await sh('npm', ['init', '-y'], project), 'npm init');
    const install = ok(await sh('npm', ['install', '--prefer-offline', join(work, pack!.filename)], project), 'npm install');
    expect(npmWarnings(install.stdout + install.stderr)).toEqual([]);

    const help = ok(await sh('npx', ['groupwire', '--help'], project), 'groupwire --help');
    expect(help.stdout).toMatch(/^Usage: groupwire/m);
    // The public API, as a script of the project imports it.
    const imported = ok(await sh(process.execPath, ['--input-type=module', '-e', "import * as g from 'groupwire'; console.log(typeof g.definePlugin, typeof g.GroupsClient)"], project), 'import');
    expect(imported.stdout.trim()).toBe('function function');

    // The demo: its bots.yaml comes from the package, its state goes to this folder's .groupwire/.
    const demo = start(['demo'], project);
    await demo.waitFor(/Join the conversation from another terminal/);
    expect(await ask(project, '!ping')).toBe('pong');
    const said = await demo.stop();
    expect(said).toMatch(/The demo stopped; its conversation is saved in \.\/\.groupwire\./);
    // Its words name the commands that work here (this project has no npm start that runs the demo).
    expect(said).toContain('so the next npx groupwire demo continues it (npx groupwire demo --fresh starts over)');
    expect(said).not.toContain('npm start');
    // A client command after the demo stopped says how to start it here (#36 item 8).
    const stopped = await collect(spawn('npx', ['groupwire', 'groups'], {
      cwd: project, env: { ...userEnv(), GROUPWIRE_EMAIL: DEMO_ACCOUNTS.bob.email, GROUPWIRE_PASSWORD: DEMO_ACCOUNTS.bob.password }, stdio: ['ignore', 'pipe', 'pipe'],
    }));
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/^groupwire: the demo is not running: start it with npx groupwire demo \(or groupwire serve\) /);
    expect(await readFile(join(project, 'bots.yaml'), 'utf8')).toBe(await readFile(join(ROOT, 'bots.yaml'), 'utf8'));
    await expect(readFile(join(project, '.groupwire', 'local-service.json'), 'utf8')).resolves.toContain('demo');

    // A plugin of one's own: TypeScript needs the optional esbuild, which check asks for, with the command.
    const made = ok(await sh('npx', ['groupwire', 'new-plugin', 'greeter'], project), 'new-plugin');
    expect(made.stdout).toContain('needs esbuild@^0.28.2: npm install esbuild@0.28');
    const refused = await sh('npx', ['groupwire', 'check', 'greeter/bots.yaml'], project);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^groupwire: greeter\/bots\.yaml:\d+:\d+: a TypeScript plugin \(\.\/greeter\.ts\) needs esbuild@\^0\.28\.2: npm install esbuild@0\.28$/m);
    const plugins = ok(await sh('npx', ['groupwire', 'plugins'], project), 'plugins');
    expect(plugins.stdout).toMatch(/^ {2}relay-matrix +matrix-js-sdk@\^36\.2\.0: not installed \(npm install matrix-js-sdk@36\)$/m);
    // A relay whose platform library the project has not installed: refused the same way.
    await writeFile(join(project, 'matrix.yaml'), 'service: { base_url: https://groups.example.com }\nbots:\n  - name: b\n'
      + '    login: { email: b@example.com, password: x }\n    chats: [{ group: g, chat: c }]\n    plugins:\n      - use: relay-matrix\n');
    const matrix = await sh('npx', ['groupwire', 'check', 'matrix.yaml'], project);
    const refusal = 'groupwire: matrix.yaml:7:14: relay-matrix needs matrix-js-sdk@^36.2.0: npm install matrix-js-sdk@36\n';
    expect([matrix.code, matrix.stderr]).toEqual([1, refusal]);
    const running = await sh('npx', ['groupwire', 'run', 'matrix.yaml'], project);
    expect([running.code, running.stderr]).toEqual([1, refusal]);
    // Reading an archive needs the optional yauzl: said in one line before the day's one download is asked for.
    const archive = await sh('npx', ['groupwire', 'archive', 'download', '--group', 'demo'], project);
    expect([archive.code, archive.stderr]).toEqual([1, 'groupwire: reading an archive needs yauzl@^3.4.0: npm install yauzl@3\n']);
    // The README's install line, as written (from the cache too).
    const readme = await readFile(join(project, 'greeter', 'README.md'), 'utf8');
    const line = readme.split('\n').find((l) => l.startsWith('npm install'))!.replace(/ +#.*$/, '');
    expect(line).toBe('npm install esbuild@0.28 typescript');
    const installed = ok(await sh('npm', [...line.split(' ').slice(1), '--prefer-offline'], project), line);
    // npm 11 lists esbuild's install script for the project to decide on (docs/install.md): nothing else.
    expect(npmWarnings(installed.stdout + installed.stderr).filter((w) => !w.startsWith('npm warn install-scripts'))).toEqual([]);
    ok(await sh('npx', ['groupwire', 'check', 'greeter/bots.yaml'], project), 'check');
    ok(await sh('npx', ['groupwire', 'test-plugin', 'greeter'], project), 'test-plugin');
    // The plugin type-checks against the installed groupwire's types.
    ok(await sh('npx', ['tsc', '--noEmit', '--strict', '--module', 'nodenext', '--target', 'es2022', '--skipLibCheck', 'greeter/greeter.ts'], project), 'tsc');

    // groupwire run with the demo's bots.yaml: the same conversation, the bot answers again.
    const yaml = await readFile(join(project, 'bots.yaml'), 'utf8');
    await writeFile(join(project, 'bots.yaml'), `${yaml.replace('port: 8443', 'port: 0')}ops: false\n`);
    const run = start(['run'], project);
    await run.waitFor(/demo-bot/);
    let answer: string | undefined;
    for (let attempt = 0; answer === undefined && attempt < 50; attempt += 1) {
      answer = await ask(project, '!ping').catch(() => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 200)));
    }
    expect(answer).toBe('pong');
    expect(await run.stop()).toMatch(/"msg":"stopped"/);
  });
});
