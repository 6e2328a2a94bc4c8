import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { freePort } from '../../test/helpers/ports.js';
import { BUILD } from '../lib/build.js';
import { timedGet } from '../lib/process-probe.js';
import { ROOT } from '../lib/paths.js';
import { BOT_NICK, HTTP_CHANNEL, HTTP_TOKEN, IRC_CHANNEL, type Sides } from './sides.js';

/**
 * The long benches' bot, set up as a user would from the README and the docs: `groupwire run` (the tsc
 * build) with one bot whose chat general is in a gateway with an ngircd channel (relay-irc) and the
 * HTTP API's channel `ops`, with the logger (jsonl transcripts) and the responder (`!pingn <text>`
 * answered `PONG:<TEXT>`), its operations endpoint on a port of its own. Its log (warn and up, JSON)
 * goes to a file, read at the end.
 */
export interface BotPlan {
  /** relay-irc's pacing of what it sends to IRC. */
  ircRate: 'off' | { lines_per_second: number; burst: number };
  /** The bot's posts into the chat, per chat. */
  replyRate: { per_second: number; burst: number };
}

export interface Bot {
  pid: number;
  opsUrl: string;
  httpUrl: string;
  stateDir: string;
  transcriptDir: string;
  /** Whether the process has ended (by itself, before stop()). */
  ended(): boolean;
  /** SIGTERM, then SIGKILL after `patienceMs`: how long it took to exit, and whether it had to be killed. */
  stop(patienceMs?: number): Promise<{ ms: number; killed: boolean }>;
  /** Warnings and errors of its log, by message, most frequent first. */
  logSummary(): Array<{ level: string; msg: string; count: number }>;
}

/** Starts the bot with `<dir>/state` as its state_dir (a state put there before is started on). */
export async function startBot(dir: string, sides: Pick<Sides, 'service' | 'irc'>, plan: BotPlan): Promise<Bot> {
  const stateDir = join(dir, 'state');
  const transcriptDir = join(dir, 'transcripts');
  const opsPort = await freePort();
  const httpPort = await freePort();
  const file = join(dir, 'bots.yaml');
  writeFileSync(file, stringify({
    service: { base_url: sides.service.baseUrl, ca_file: sides.service.caFile },
    state_dir: stateDir,
    log: { level: 'warn', pretty: false },
    ops: { listen: `127.0.0.1:${opsPort}` },
    bots: [{
      name: 'bridge',
      login: { email: 'bot@example.com', password: 'bot-demo' },
      chats: [{ group: 'demo', chat: 'general' }],
      reply_rate: plan.replyRate,
      plugins: [
        { use: 'logger', with: { dir: transcriptDir } },
        { use: 'responder', with: { rules: [{ command: 'pingn', args: [{ name: 'n', type: 'rest' }], reply: 'PONG:{{args.n | upper}}' }] } },
        { use: 'relay-irc', with: { server: '127.0.0.1', port: sides.irc.port, tls: false, nick: BOT_NICK, rate: plan.ircRate } },
        { use: 'http-api', with: { listen: { host: '127.0.0.1', port: httpPort }, clients: [{ name: 'bench', token: HTTP_TOKEN }] } },
      ],
    }],
    gateways: [{ name: 'general', endpoints: [{ chat: 'general' }, { irc: IRC_CHANNEL }, { http: HTTP_CHANNEL }] }],
  }));
  const logFile = join(dir, 'groupwire.log');
  const log = openSync(logFile, 'a');
  // BENCH_BOT_NODE_ARGS: extra node flags for the bot (e.g. --cpu-prof), when profiling a bench.
  const nodeArgs = process.env.BENCH_BOT_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, join(BUILD, 'src/cli/main.js'), 'run', file], { cwd: ROOT, stdio: ['ignore', log, log] });
  closeSync(log);
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const bot: Bot = {
    pid: child.pid!, opsUrl: `http://127.0.0.1:${opsPort}`, httpUrl: `http://127.0.0.1:${httpPort}`, stateDir, transcriptDir, ended,
    async stop(patienceMs = 30_000) {
      const start = performance.now();
      if (ended()) return { ms: 0, killed: false };
      child.kill('SIGTERM');
      // The patience timer does not keep the bench process alive once the bot has exited.
      const killed = await Promise.race([exited.then(() => false), sleep(patienceMs, undefined, { ref: false }).then(() => true)]);
      if (killed) {
        child.kill('SIGKILL');
        await exited;
      }
      return { ms: performance.now() - start, killed };
    },
    logSummary: () => summarise(existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
  };
  try {
    const deadline = performance.now() + 60_000;
    while ((await timedGet(`${bot.opsUrl}/readyz`, 5_000)).status !== 200) {
      if (ended()) throw new Error(`groupwire run ended (${child.exitCode ?? child.signalCode}) before it was ready:\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
      if (performance.now() > deadline) throw new Error('groupwire run was not ready within 60 s');
      await sleep(250);
    }
  } catch (error) {
    await bot.stop(10_000);
    throw error;
  }
  return bot;
}

const LEVELS: Record<number, string> = { 40: 'warn', 50: 'error', 60: 'fatal' };

function summarise(text: string): Array<{ level: string; msg: string; count: number }> {
  const counts = new Map<string, { level: string; msg: string; count: number }>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { level?: number; msg?: string };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    const level = LEVELS[entry.level ?? 0] ?? String(entry.level);
    const key = `${level} ${entry.msg}`;
    const seen = counts.get(key) ?? { level, msg: String(entry.msg), count: 0 };
    seen.count += 1;
    counts.set(key, seen);
  }
  return [...counts.values()].sort((a, b) => b.count - a.count);
}
