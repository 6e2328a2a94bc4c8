import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type WebSocket from 'ws';
import { afterEach, describe, expect, test } from 'vitest';
import { GroupsClient } from '../src/api/client.js';
import type { Chat, ChatMessage } from '../src/api/types.js';
import { parseWireJson } from '../src/api/wire-json.js';
import { DEMO_ACCOUNTS } from '../src/service/demo-seed.js';
import { cleanEnv, ROOT, runCli } from './helpers/cli.js';

/**
 * `groupwire demo` (what npm start runs), for real: the CLI as a child process with the repo's
 * bots.yaml (port 0), run twice in one state dir, then with --fresh, on an orphaned state, and with --fresh again.
 */

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

type Person = keyof typeof DEMO_ACCOUNTS;

interface DemoFile {
  base_url: string;
  ca_file: string;
  pid: number;
  state_dir: string;
}

/** One run of the demo: its output so far, and what it wrote to .groupwire/demo.json. */
class DemoRun {
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  private constructor(readonly child: ChildProcess, readonly dir: string) {
    child.stdout!.on('data', (chunk: Buffer) => { this.stdout += chunk.toString('utf8'); });
    child.stderr!.on('data', (chunk: Buffer) => { this.stderr += chunk.toString('utf8'); });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  static start(dir: string, args: string[] = []): DemoRun {
    const child = spawn(process.execPath, ['--import', TSX, `${ROOT}src/cli/main.ts`, 'demo', '--config', 'bots.yaml', ...args], {
      cwd: dir, env: cleanEnv({ TZ: 'UTC' }), stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run = new DemoRun(child, dir);
    runs.push(run);
    return run;
  }

  /** Waits until the output matches `pattern` (from `from` on); fails with the output so far. */
  async waitFor(pattern: RegExp, from = 0, timeoutMs = 60_000): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = pattern.exec(this.stdout.slice(from));
      if (match) return match;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`the demo's output never matched ${pattern}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr.slice(-3000)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Carol's scripted !ping and the bot's pong right after it, in the terminal's view. */
  async pong(): Promise<void> {
    await this.waitFor(/\[\d\d:\d\d:\d\d\] #general <Carol Member> !ping\n {2}\[\d\d:\d\d:\d\d\] #general <Demo Bot> pong\n/);
  }

  /** The pong, and carol's script done (its !help answered): the bot answers nobody else meanwhile. */
  async scriptDone(): Promise<void> {
    await this.pong();
    await this.waitFor(/#general <Demo Bot> Commands you may use here:/);
    await this.waitFor(/Join the conversation from another terminal/);
  }

  async demoFile(): Promise<DemoFile> {
    return JSON.parse(await readFile(join(this.dir, '.groupwire', 'demo.json'), 'utf8')) as DemoFile;
  }

  /** Ctrl-C, and the exit code. */
  async stop(): Promise<number | null> {
    this.child.kill('SIGINT');
    return this.exited;
  }
}

/** group-mail's announcement of carol's topic in #general. */
const ANNOUNCEMENT = /#general <Demo Bot> <Carol Member> New topic: Demo day on Friday — Who is coming to the demo day\? .*\/g\/demo\/message\/\d+\n/;

const runs: DemoRun[] = [];
const dirs: string[] = [];
const clients: GroupsClient[] = [];
const sockets: WebSocket[] = [];

async function releaseClients(): Promise<void> {
  for (const ws of sockets.splice(0)) ws.terminate();
  await Promise.all(clients.splice(0).map((client) => client.close()));
}

afterEach(async () => {
  await releaseClients();
  for (const run of runs.splice(0)) {
    if (run.child.exitCode === null && run.child.signalCode === null) {
      run.child.kill('SIGKILL');
      await run.exited;
    }
  }
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A folder with the repo's bots.yaml on a free port, as a user's checkout would be. */
async function checkout(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'groupwire-demo-test-'));
  dirs.push(dir);
  const yaml = await readFile(join(ROOT, 'bots.yaml'), 'utf8');
  expect(yaml).toMatch(/port: 8443/);
  await writeFile(join(dir, 'bots.yaml'), yaml.replace(/port: 8443/, 'port: 0'));
  // Its package.json (name and start script): there the demo and the client commands say npm start.
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { name: string; scripts: { start: string } };
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: manifest.name, scripts: { start: manifest.scripts.start } }));
  return dir;
}

function clientOf(demo: DemoFile, who: Person): GroupsClient {
  const { email, password } = DEMO_ACCOUNTS[who];
  const client = new GroupsClient({ baseUrl: demo.base_url, caFile: demo.ca_file, credentials: { email, password } });
  clients.push(client);
  return client;
}

async function chatNamed(client: GroupsClient, subject: string): Promise<Chat> {
  const chats = await client.paginate<Chat>('getchats', { group_name: 'demo', limit: 100 }).all();
  const chat = chats.find((c) => c.subject === subject);
  if (!chat) throw new Error(`no chat ${subject}; there are ${chats.map((c) => c.subject).join(', ')}`);
  return chat;
}

async function history(client: GroupsClient, subject: string): Promise<ChatMessage[]> {
  const chat = await chatNamed(client, subject);
  return client.paginate<ChatMessage>('getchathistory', { chat_id: chat.id, sort_dir: 'asc', limit: 100 }).all();
}

/**
 * `who` says `text` in a chat through the chat socket, as `groupwire chat` does, and answers the
 * bot's next message there.
 */
async function ask(demo: DemoFile, who: Person, subject: string, text: string): Promise<string> {
  const client = clientOf(demo, who);
  const chat = await chatNamed(client, subject);
  const chatsubId = chat.chat_sub?.id ?? (await client.joinChat({ chat_id: chat.id })).id;
  const ws = await client.openChatSocket({ chatsubId, noHistory: true });
  sockets.push(ws);
  const answer = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer from the bot to ${who}'s ${text} in ${subject}`)), 30_000);
    ws.on('message', (data) => {
      const frame = parseWireJson(String(data)) as ChatMessage;
      if (frame.object !== 'chat_message' || frame.user_name !== 'bot') return;
      clearTimeout(timer);
      resolve(frame.message);
    });
  });
  ws.send(JSON.stringify({ object: 'chat_post', message: text }));
  const said = await answer;
  ws.close(1000, 'done');
  return said;
}

/** The /tmp/groupwire-<pid>-* folders (a CA's private key each) a process left. */
async function temporaryKeysOf(pid: number): Promise<string[]> {
  return (await readdir(tmpdir())).filter((name) => name.startsWith(`groupwire-${pid}-`));
}

describe('groupwire demo', () => {
  test('a second run continues the conversation, --fresh starts over; alice and mo can use every built-in', { timeout: 240_000 }, async () => {
    const dir = await checkout();
    const help = await runCli(['demo', '--help'], cleanEnv(), dir);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--fresh +start over: remove the service's data, the bots' state/);

    // First run: carol's !ping is answered; the terminal says how to reach the demo.
    const first = DemoRun.start(dir);
    await first.scriptDone();
    // carol's topic in the group's archive is announced in #general by group-mail.
    await first.waitFor(ANNOUNCEMENT);
    expect(first.stdout).toContain('A new demo; its conversation is saved in ./.groupwire');
    const one = await first.demoFile();
    expect(one).toMatchObject({ pid: first.child.pid, state_dir: join(dir, '.groupwire') });
    expect(one.ca_file.startsWith(join(dir, '.groupwire'))).toBe(true);
    expect(first.stdout).toContain(`export GROUPWIRE_URL=${one.base_url} GROUPWIRE_CA_FILE=${one.ca_file}\n`);
    expect(first.stdout).toContain('export GROUPWIRE_EMAIL=alice@example.com GROUPWIRE_PASSWORD=alice-demo\n');
    const ca = await readFile(one.ca_file, 'utf8');
    // A second demo on the same state would write over the first one's data: refused.
    const twice = await runCli(['demo', '--config', 'bots.yaml'], cleanEnv(), dir);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain(`groupwire: a demo is already running with ./.groupwire (process ${first.child.pid}, ${one.base_url})`);

    // The moderators of bots.yaml: in #standup, the bot's own chat, alice changes the subject and
    // closes it; mo reopens it from #general and reads the activity log; bob may not.
    const at = first.stdout.length;
    expect(await ask(one, 'alice', 'standup', '!subject Standup notes')).toBe('The subject is now: Standup notes');
    // bots.yaml finds the chat by its subject at the next start: named back.
    expect(await ask(one, 'alice', 'Standup notes', '!subject standup')).toBe('The subject is now: standup');
    expect(await ask(one, 'alice', 'standup', '!close')).toMatch(/^Closing this chat, as Alice Owner asked\./);
    // The bot says so first, then closes it.
    await first.waitFor(/#standup -- This chat has been closed\.\n/, at);
    expect(await ask(one, 'mo', 'general', '!reopen standup')).toBe('Reopened standup.');
    expect(await ask(one, 'mo', 'general', '!activity 2')).toMatch(/^Recent activity in demo:\n.+\n.+$/);
    expect(await ask(one, 'bob', 'general', '!activity')).toBe('Sorry, !activity is only for the group\'s moderators.');
    // The terminal shows every chat and every line, the asker's own too, as a chat client does.
    await first.waitFor(/#standup <Alice Owner> !close\n/, at);
    await first.waitFor(/#general <Mo Moderator> !reopen standup\n {2}\[\d\d:\d\d:\d\d\] #general <Demo Bot> Reopened standup\.\n/, at);
    await first.waitFor(/#general <Bob Member> !activity\n/, at);
    // The bot is back in #standup after !reopen (bots.yaml checks closed chats every 5 s).
    expect(await ask(one, 'alice', 'standup', '!ping')).toBe('pong');
    const carol = clientOf(one, 'carol');
    const lastOfFirst = (await history(carol, 'general')).at(-1)!.msg_num;
    await releaseClients();

    expect(await first.stop()).toBe(0);
    await expect(readFile(join(dir, '.groupwire', 'demo.json'), 'utf8')).rejects.toThrow(/ENOENT/);
    expect(await temporaryKeysOf(first.child.pid!)).toEqual([]);
    // A client command now, as the README says it answers after the demo stopped (#36 item 8).
    const stopped = await runCli(['groups'], cleanEnv({ GROUPWIRE_EMAIL: 'bob@example.com', GROUPWIRE_PASSWORD: 'bob-demo' }), dir);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/^groupwire: the demo is not running: start it with npm start /);

    // Second run in the same state dir: the same conversation goes on, with the same CA; carol did
    // her part in this conversation already, so she says nothing and posts no second topic.
    const second = DemoRun.start(dir);
    await second.waitFor(/Join the conversation from another terminal/);
    expect(second.stdout).toContain('Continuing the demo\'s conversation saved in ./.groupwire');
    expect(second.stdout).toContain('Carol did her part of the demo in this conversation already (npm start -- --fresh starts over).');
    const two = await second.demoFile();
    expect(two.ca_file).toBe(one.ca_file);
    expect(await readFile(two.ca_file, 'utf8')).toBe(ca);
    expect(await ask(two, 'bob', 'general', '!ping')).toBe('pong');
    const general = await history(clientOf(two, 'carol'), 'general');
    const newer = general.filter((m) => m.msg_num > lastOfFirst);
    expect(newer.map((m) => [m.msg_num, m.user_name, m.message])).toEqual([[lastOfFirst + 1, 'bob', '!ping'], [lastOfFirst + 2, 'bot', 'pong']]);
    const topics = await clientOf(two, 'carol').paginate<{ subject: string }>('gettopics', { group_name: 'demo', limit: 100 }).all();
    expect(topics.filter((topic) => topic.subject === 'Demo day on Friday')).toHaveLength(1);
    // Still one #standup, the bot's, and it answers there.
    expect(await ask(two, 'alice', 'standup', '!ping')).toBe('pong');
    await releaseClients();
    expect(await second.stop()).toBe(0);
    expect(await temporaryKeysOf(second.child.pid!)).toEqual([]);

    // --fresh: the seed's conversation again, the bot answering from scratch; the CA stays.
    const fresh = DemoRun.start(dir, ['--fresh']);
    await fresh.scriptDone();
    // carol's topic takes the first run's message number again: announced all the same, as new.
    await fresh.waitFor(ANNOUNCEMENT);
    expect(fresh.stdout).toMatch(new RegExp(['Starting over \\(--fresh\\); removed:', '  \\./\\.groupwire/local-service\\.json .*',
      '  \\./\\.groupwire/bots/demo-bot .*', '  \\./\\.groupwire/gateway-map\\.jsonl \\(what the gateways relayed\\)',
      '  \\./\\.groupwire/demo-script\\.json \\(how far carol got in her script\\)', '  \\d+ transcript files? of the demo\'s chats in \\./transcripts\n'].join('\n')));
    const three = await fresh.demoFile();
    expect(three.ca_file).toBe(one.ca_file);
    expect(await readFile(three.ca_file, 'utf8')).toBe(ca);
    const again = await history(clientOf(three, 'carol'), 'general');
    // The seed's three lines, then carol's script.
    expect(again.slice(3, 5).map((m) => [m.msg_num, m.message])).toEqual([[4, 'Hi everyone! Is the demo bot around?'], [5, '!ping']]);
    expect(again.find((m) => m.msg_num > 5 && m.user_name === 'bot')?.message).toBe('pong');
    expect(again.some((m) => m.message === '!reopen standup')).toBe(false);
    await releaseClients();
    expect(await fresh.stop()).toBe(0);

    // The transcripts start over with the conversation: none of the earlier runs' lines are left.
    const transcriptDir = join(dir, 'transcripts', 'demo', 'general');
    const lines = (await Promise.all((await readdir(transcriptDir)).map((name) => readFile(join(transcriptDir, name), 'utf8')))).join('');
    expect(lines).toContain('"message":"!ping"');
    expect(lines).not.toContain('!reopen standup');

    // A checkout whose bot state outlived the service's data (a demo from before the data was kept):
    // the demo starts over by itself instead of running a bot that ignores everything.
    await rm(join(dir, '.groupwire', 'local-service.json'));
    const upgraded = DemoRun.start(dir);
    await upgraded.pong();
    expect(upgraded.stdout).toContain('The bot\'s state in ./.groupwire belongs to a conversation the service no longer has');
    expect(upgraded.stdout).toMatch(/removed:\n {2}\.\/\.groupwire\/bots\/demo-bot /);
    const restarted = await history(clientOf(await upgraded.demoFile(), 'carol'), 'general');
    expect(restarted.find((m) => m.message === '!ping')?.msg_num).toBe(5);
    await releaseClients();
    // Most likely while carol still talks: Ctrl-C stops cleanly at any moment.
    expect(await upgraded.stop()).toBe(0);
    expect(upgraded.stdout).toContain('The demo stopped; its conversation is saved in ./.groupwire.');
    await expect(readFile(join(dir, '.groupwire', 'demo.json'), 'utf8')).rejects.toThrow(/ENOENT/);

    // --fresh a second time: everything the runs kept for the demo's chats is gone (the gateways'
    // message map and how far carol got among them), so carol's script runs whole and her topic,
    // with a message number an earlier run's topic had, is announced again.
    const refreshed = DemoRun.start(dir, ['--fresh']);
    await refreshed.scriptDone();
    await refreshed.waitFor(ANNOUNCEMENT);
    expect(refreshed.stdout).toContain('  ./.groupwire/gateway-map.jsonl (what the gateways relayed)\n');
    expect(await refreshed.stop()).toBe(0);
  });
});
