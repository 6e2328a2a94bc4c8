import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, outputs, PASSWORDS, ROOT, runCli, succeeded } from './helpers/cli.js';
import { startTestService, type TestService } from './helpers/service.js';
import { freePort } from './helpers/ports.js';
import { DEFAULT_SERVICE_STATE } from '../src/cli/demo-state.js';
import { DEMO_SERVICE_DATA } from '../src/cli/service-address.js';

/** The client commands find a running demo or serve through `.groupwire/demo.json` in the working directory. */

// tsx as a file URL, so serve runs from a folder outside the repo.
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

let svc: TestService;
const dirs: string[] = [];

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.close();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  for (const output of outputs) for (const password of PASSWORDS) expect(output).not.toContain(password);
});

/** A folder holding a demo file with `content` (as a demo writes it). */
async function folderWithDemoFile(content: Record<string, unknown>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gw-demo-file-'));
  dirs.push(dir);
  await mkdir(join(dir, '.groupwire'));
  await writeFile(join(dir, '.groupwire', 'demo.json'), JSON.stringify(content));
  return dir;
}

/** The demo file of a demo that is up: this test process stands in for the demo's. */
const liveDemo = () => ({ base_url: svc.baseUrl, ca_file: svc.service.caFile, pid: process.pid, state_dir: '/somewhere/state' });
const asBob = (vars: Record<string, string> = {}) => cleanEnv({ GROUPWIRE_EMAIL: 'bob@example.com', GROUPWIRE_PASSWORD: 'bob-demo', ...vars });
const asMo = () => cleanEnv({ GROUPWIRE_EMAIL: 'mo@example.com', GROUPWIRE_PASSWORD: 'mo-demo' });

/** The pid of a process that has ended. */
async function endedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}


describe('client commands without GROUPWIRE_URL', () => {
  it('api, topics, activity, archive search and transcript export use the demo file\'s address and CA', async () => {
    const cwd = await folderWithDemoFile(liveDemo());
    const [api, topics, activity, search] = await Promise.all([
      runCli(['api', 'getchats', '--group_name', 'demo'], asBob(), cwd),
      runCli(['topics', '--group', 'demo'], asBob(), cwd),
      runCli(['activity', '--group', 'demo', '--limit', '2'], asMo(), cwd),
      runCli(['archive', 'search', '--group', 'demo', 'release'], asBob(), cwd),
    ]);
    expect(JSON.parse(succeeded(api)).object).toBe('list');
    expect(succeeded(topics)).toContain('Release planning');
    expect(succeeded(activity).trimEnd().split('\n').length).toBeGreaterThanOrEqual(2);
    expect(succeeded(search)).toMatch(/^#\d+ /m);
    const transcript = await runCli(['transcript', 'export', '--chat', 'general', '--group', 'demo', '--from', '2000-01-01',
      '--to', '2100-01-01', '--format', 'text', '--source', 'service'], asBob(), cwd);
    expect(succeeded(transcript)).toContain('Welcome to #general!');
  });

  it('GROUPWIRE_URL wins over the demo file', async () => {
    const cwd = await folderWithDemoFile({ ...liveDemo(), base_url: `https://127.0.0.1:${await freePort()}` });
    const result = await runCli(['topics', '--group', 'demo'], asBob({ GROUPWIRE_URL: svc.baseUrl, GROUPWIRE_CA_FILE: svc.service.caFile! }), cwd);
    expect(succeeded(result)).toContain('Release planning');
  });

  it('without credentials, says which variables to set (no account is guessed), exit 2', async () => {
    const cwd = await folderWithDemoFile(liveDemo());
    const result = await runCli(['topics', '--group', 'demo'], cleanEnv(), cwd);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`groupwire: no credentials for the demo at ${svc.baseUrl} (found in .groupwire/demo.json): `
      + 'set GROUPWIRE_EMAIL and GROUPWIRE_PASSWORD to one of its accounts');
    expect(result.stderr).toContain('GROUPWIRE_TOKEN');
  });

  it('a demo file left by a demo that has ended: "the demo is not running", exit 1, at once', async () => {
    const pid = await endedPid();
    const cwd = await folderWithDemoFile({ ...liveDemo(), pid });
    const result = await runCli(['api', 'getchats', '--group_name', 'demo'], asBob(), cwd);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`groupwire: the demo is not running: start it with npx groupwire demo (or groupwire serve) (.groupwire/demo.json is left from process ${pid}, which has ended)\n`);
  });

  it('nothing answering at the demo file\'s address: "the demo is not running", not ECONNREFUSED', async () => {
    const address = `https://127.0.0.1:${await freePort()}`;
    const cwd = await folderWithDemoFile({ ...liveDemo(), base_url: address });
    const result = await runCli(['topics', '--group', 'demo'], asBob(), cwd);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`groupwire: the demo is not running: start it with npx groupwire demo (or groupwire serve) (nothing answers at ${address}, the address in .groupwire/demo.json)\n`);
    expect(result.stderr).not.toContain('ECONNREFUSED');
  });

  it('after the demo stopped (its conversation kept, no demo file): "the demo is not running", exit 1 (#36 item 8)', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'gw-demo-stopped-'));
    dirs.push(cwd);
    // What a demo leaves as it stops: the service's data, the bots' state; its demo file removed.
    expect(DEMO_SERVICE_DATA).toBe(join('.groupwire', DEFAULT_SERVICE_STATE));
    await mkdir(join(cwd, '.groupwire', 'bots', 'demo-bot'), { recursive: true });
    await writeFile(join(cwd, '.groupwire', 'local-service.json'), '{}');
    const result = await runCli(['groups'], asBob(), cwd);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('groupwire: the demo is not running: start it with npx groupwire demo (or groupwire serve) (its conversation is kept in '
      + '.groupwire/local-service.json, but no demo runs from this directory now: .groupwire/demo.json is not there)\n');
    // In groupwire's checkout (its package.json, whose start script runs the demo): npm start, as the README says.
    await writeFile(join(cwd, 'package.json'), await readFile(join(ROOT, 'package.json'), 'utf8'));
    const inCheckout = await runCli(['groups'], asBob(), cwd);
    expect(inCheckout.code).toBe(1);
    expect(inCheckout.stderr).toMatch(/^groupwire: the demo is not running: start it with npm start \(or groupwire serve\) \(its conversation is kept/);
  });

  it('no demo file and no address: says to set GROUPWIRE_URL or start the demo, exit 2', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'gw-no-demo-'));
    dirs.push(cwd);
    const result = await runCli(['topics', '--group', 'demo'], asBob(), cwd);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no service address: set GROUPWIRE_URL or pass --url https://host[:port] (or start the demo in this directory with npx groupwire demo');
  });
});

describe('groupwire serve', () => {
  it('writes the demo file while it runs (the client commands of its directory find it) and removes it on SIGTERM', { timeout: 90_000 }, async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'gw-serve-file-'));
    dirs.push(cwd);
    const file = join(cwd, '.groupwire', 'demo.json');
    const serve = spawn(process.execPath, ['--import', TSX, `${ROOT}src/cli/main.ts`, 'serve'], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv() });
    const exited = new Promise<number | null>((resolve) => serve.once('exit', resolve));
    try {
      const ready = JSON.parse(await new Promise<string>((resolve, reject) => {
        let text = '';
        serve.stdout.on('data', (chunk: Buffer) => {
          text += chunk.toString();
          if (text.includes('\n')) resolve(text.slice(0, text.indexOf('\n')));
        });
        serve.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
      }));
      // Written right after the ready line.
      await waitFor(() => existsSync(file));
      expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ base_url: ready.base_url, ca_file: ready.ca_file, pid: serve.pid });
      expect(succeeded(await runCli(['topics', '--group', 'demo'], asBob(), cwd))).toContain('Release planning');
    } finally {
      serve.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(existsSync(file)).toBe(false);
  });
});

describe('groupwire run with an embedded service', () => {
  it('writes the demo file while it runs, so groupwire chat from the same directory talks to its bot; removed on SIGTERM', { timeout: 90_000 }, async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'gw-run-file-'));
    dirs.push(cwd);
    const file = join(cwd, '.groupwire', 'demo.json');
    await writeFile(join(cwd, 'bots.yaml'), [
      'service: { base_url: embedded, embedded: { port: 0 } }',
      'state_dir: ./state',
      'bots:',
      '  - name: b',
      '    login: { email: bot@example.com, password: bot-demo }',
      '    chats: [{ group: demo, chat: general }]',
      '    plugins: [{ use: responder }]',
      '',
    ].join('\n'));
    const run = spawn(process.execPath, ['--import', TSX, `${ROOT}src/cli/main.ts`, 'run', 'bots.yaml'], { cwd, stdio: ['ignore', 'ignore', 'pipe'], env: cleanEnv() });
    let log = '';
    run.stderr.on('data', (chunk: Buffer) => {
      log += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => run.once('exit', resolve));
    try {
      // The bot's socket is open (a first start hands on nothing said before it), and the file is there.
      await waitFor(() => log.includes('chat socket open') && existsSync(file), 60_000);
      expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: run.pid, state_dir: join(cwd, 'state') });
      // --wait: the chat command goes on showing the chat after its input ended, so the answer is seen.
      const said = await runCli(['chat', '--as', 'bob', 'general', '--wait', '5'], cleanEnv(), cwd, '!ping\n');
      expect(said.code, said.stderr).toBe(0);
      expect(said.stdout).toMatch(/^\[\d{2}:\d{2}\] <Demo Bot> pong$/m);
      const general = chatIdOf(succeeded(await runCli(['api', 'getchats', '--group_name', 'demo'], asBob(), cwd)));
      let answered = false;
      for (let attempt = 0; attempt < 60 && !answered; attempt += 1) {
        const history = succeeded(await runCli(['api', 'getchathistory', '--chat_id', general, '--limit', '3', '--sort_dir', 'desc'], asBob(), cwd));
        answered = history.includes('"message": "pong"');
        if (!answered) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(answered).toBe(true);
    } finally {
      run.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(existsSync(file)).toBe(false);
  });
});

/** The id of #general in a getchats answer, as printed. */
function chatIdOf(printed: string): string {
  const general = (JSON.parse(printed) as { data: Array<{ id: string | number; subject: string }> }).data.find((chat) => chat.subject === 'general');
  return String(general!.id);
}

async function waitFor(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
