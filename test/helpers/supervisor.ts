import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { GroupsClient, type Chat, type ChatMessage } from '../../src/api/index.js';
import { loadBotsConfig } from '../../src/config/bots-config.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { captureLog, type LogCapture } from './client.js';
import { admin, DEMO, send, startTestService, type DemoUser, type TestService } from './service.js';

/**
 * Harness for the supervisor's tests: a local service of its own, a temp dir holding bots.yaml, the
 * service's CA, the state dir and probe plugins (small .mjs files), and the supervisor run in this
 * process (captured logs) or in a child process that can be SIGKILLed.
 */

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const SRC = (path: string) => pathToFileURL(join(ROOT, 'src', path)).href;

/** What a probe plugin saw of one message. */
export interface Seen {
  chat: string;
  msgNum: number;
  backfilled: boolean;
  userId: string;
  text: string;
  /** ctx.own was set: 'voice' or the relayed line's origin platform. */
  own?: string;
  /** ctx.sender: `<platform>:<name>`. */
  sender: string;
  answerable: boolean;
}

/** What a probe plugin's `!send <chat> <text>` came to. */
export interface SendOutcome {
  chat: string;
  text: string;
  ok: boolean;
  error?: string;
}

interface Probes {
  seen: Record<string, Seen[]>;
  sends: Record<string, SendOutcome[]>;
  /** Probe names in the order their stop() ran. */
  stops: string[];
}

/** The probes' records of this process (plugins loaded by an in-process supervisor write here). */
export function probes(): Probes {
  const global = globalThis as { __groupwireProbes?: Probes };
  global.__groupwireProbes ??= { seen: {}, sends: {}, stops: [] };
  return global.__groupwireProbes;
}

export type ProbeMode = 'record' | 'throw' | 'hang';

/**
 * A probe plugin. `record` keeps every message under `with.key` (and appends a JSON line to `with.file`,
 * synchronously, when given) and on `!send <chat> <text>` posts `<text>` to that chat without waiting;
 * `throw` throws before `next()`; `hang` never returns. Every mode notes its stop() in `probes().stops`.
 */
function probeSource(name: string, mode: ProbeMode, ownPosts: boolean): string {
  return `import { appendFileSync } from 'node:fs';
import { definePlugin } from ${JSON.stringify(SRC('index.ts'))};
const passThrough = { safeParse: (value) => ({ success: true, data: value ?? {} }) };
const probes = (globalThis.__groupwireProbes ??= { seen: {}, sends: {}, stops: [] });
export default definePlugin({
  name: ${JSON.stringify(name)},
  options: passThrough,
  ownPosts: ${ownPosts},
  create(options) {
    const key = options.key ?? ${JSON.stringify(name)};
    const seen = (probes.seen[key] ??= []);
    const sends = (probes.sends[key] ??= []);
    return {
      async handle(ctx, next) {
        const m = ctx.message;
        if (${JSON.stringify(mode)} === 'throw') throw new Error('probe failure at ' + m.msg_num);
        if (${JSON.stringify(mode)} === 'hang') return new Promise(() => {});
        const entry = {
          chat: ctx.chat.subject, msgNum: m.msg_num, backfilled: ctx.backfilled, userId: String(m.user_id), text: m.message,
          sender: ctx.sender.platform + ':' + ctx.sender.name, answerable: ctx.answerable,
          ...(ctx.own ? { own: ctx.own.relayed ? ctx.own.relayed.platform : 'voice' } : {}),
        };
        seen.push(entry);
        if (options.file) appendFileSync(options.file, JSON.stringify(entry) + '\\n');
        const command = /^!send (\\S+) (.+)$/.exec(m.message);
        if (command) {
          const [, chat, text] = command;
          ctx.send(chat, text).then(
            () => sends.push({ chat, text, ok: true }),
            (error) => sends.push({ chat, text, ok: false, error: error?.name }),
          );
        }
        await next();
      },
      stop() {
        probes.stops.push(${JSON.stringify(name)});
      },
    };
  },
});
`;
}

const RUNNER = `import { loadBotsConfig } from ${JSON.stringify(SRC('config/bots-config.ts'))};
import { Supervisor } from ${JSON.stringify(SRC('supervisor/supervisor.ts'))};
import { createLogger } from ${JSON.stringify(SRC('supervisor/logging.ts'))};
const log = createLogger({ level: process.env.GROUPWIRE_TEST_LOG ?? 'silent', pretty: false });
const supervisor = await Supervisor.start(await loadBotsConfig(process.argv[2]), { log });
await supervisor.connected();
process.stdout.write('connected\\n');
process.once('SIGTERM', () => void supervisor.stop().then(() => process.exit(0)));
`;

export interface ChatSpec {
  group?: string;
  chat: string;
  create?: boolean;
  desc?: string;
}

export interface PluginSpec {
  use: string;
  with?: Record<string, unknown>;
  timeout_ms?: number;
}

export interface GatewaySpec {
  name: string;
  endpoints: Array<Record<string, string>>;
  through_chat?: boolean;
}

export interface BotSpec {
  name?: string;
  login?: { email: string; password: string };
  chats: ChatSpec[];
  plugins?: PluginSpec[];
  history_on_first_start?: number;
  reply_rate?: { per_second: number; burst?: number };
  closed_chat_check_seconds?: number;
}

export interface Env {
  svc: TestService;
  dir: string;
  configFile: string;
  stateDir: string;
  supervisor: Supervisor | undefined;
  log: LogCapture;
  /** Writes a probe plugin `<name>.mjs` into the temp dir; answers its path for `use:`. It sees the bot's own posts only with `ownPosts`. */
  probe(name: string, mode?: ProbeMode, options?: { ownPosts?: boolean }): string;
  /** (Re)writes bots.yaml with these bots (the first one defaults to bot@example.com). */
  writeConfig(bots: BotSpec[], gateways?: GatewaySpec[]): void;
  /** Starts the supervisor in this process and waits until it is connected. */
  start(options?: { waitConnected?: boolean }): Promise<Supervisor>;
  /** Starts the supervisor in a child process; resolves once it printed `connected`. */
  spawn(): Promise<ChildProcess>;
  /** A client of a demo member, closed at the end. */
  client(who: DemoUser): GroupsClient;
  close(): Promise<void>;
}

/** A service, a temp dir and bots.yaml; `close()` stops whatever was started. */
export async function makeEnv(bots: BotSpec[], serviceOptions: Parameters<typeof startTestService>[0] = {}): Promise<Env> {
  const svc = await startTestService(serviceOptions);
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-sup-'));
  writeFileSync(join(dir, 'ca.pem'), svc.service.ca);
  const clients: GroupsClient[] = [];
  const children: ChildProcess[] = [];
  const env: Env = {
    svc,
    dir,
    configFile: join(dir, 'bots.yaml'),
    stateDir: join(dir, 'state'),
    supervisor: undefined,
    log: captureLog(),
    probe(name, mode = 'record', options = {}) {
      const file = join(dir, `${name}.mjs`);
      writeFileSync(file, probeSource(name, mode, options.ownPosts ?? false));
      return `./${name}.mjs`;
    },
    writeConfig(specs, gateways) {
      const config = {
        ...(gateways ? { gateways } : {}),
        service: { base_url: svc.baseUrl, ca_file: './ca.pem' },
        state_dir: './state',
        log: { level: 'silent', pretty: false },
        bots: specs.map((bot, index) => ({
          ...bot,
          name: bot.name ?? `bot${index}`,
          login: bot.login ?? { email: DEMO.bot[0], password: DEMO.bot[1] },
          chats: bot.chats.map((chat) => ({ group: 'demo', ...chat })),
        })),
      };
      writeFileSync(env.configFile, stringify(config));
    },
    async start(options = {}) {
      env.log = captureLog();
      const supervisor = await Supervisor.start(await loadBotsConfig(env.configFile), { log: env.log.logger });
      env.supervisor = supervisor;
      if (options.waitConnected ?? true) await supervisor.connected();
      return supervisor;
    },
    async spawn() {
      const child = spawn(process.execPath, ['--import', 'tsx', join(dir, 'run.mjs'), env.configFile], {
        cwd: ROOT, stdio: ['ignore', 'pipe', process.env.GROUPWIRE_TEST_LOG ? 'inherit' : 'ignore'],
      });
      children.push(child);
      await new Promise<void>((ready, fail) => {
        let out = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('connected\n')) ready();
        });
        child.once('exit', (code, signal) => fail(new Error(`the supervisor process ended (${code ?? signal}) before connecting`)));
      });
      return child;
    },
    client(who) {
      const made = new GroupsClient({
        baseUrl: svc.baseUrl, ca: svc.service.ca, credentials: { email: DEMO[who][0], password: DEMO[who][1] },
        retry: { baseDelayMs: 5, maxDelayMs: 500, maxTimeMs: 10_000 },
      });
      clients.push(made);
      return made;
    },
    async close() {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await env.supervisor?.stop(0).catch(() => undefined);
      await Promise.all(clients.map((c) => c.close()));
      // A test may have closed it already (to start another service on its port).
      await svc.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  writeFileSync(join(dir, 'run.mjs'), RUNNER);
  env.writeConfig(bots);
  return env;
}

/** Polls `check` every 50 ms until it answers something truthy; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Posts as a member through the admin API; `count` > 1 numbers `{n}` in the text. */
export async function post(svc: TestService, chat: string, who: DemoUser, message: string, count = 1, group = 'demo'): Promise<ChatMessage> {
  const answer = await admin(svc, 'chats/messages', { chat, group, user: DEMO[who][0], message, count });
  if (answer.status !== 200) throw new Error(`posting to ${chat} failed: ${answer.status} ${answer.text}`);
  return answer.body as ChatMessage;
}

export async function adminOk(svc: TestService, path: string, body: unknown = {}): Promise<any> {
  const answer = await admin(svc, path, body);
  if (answer.status !== 200) throw new Error(`admin ${path} failed: ${answer.status} ${answer.text}`);
  return answer.body;
}

export async function serviceStats(svc: TestService): Promise<any> {
  return (await send(svc, '/_admin/stats', 'GET', { authorization: `Bearer ${svc.service.adminToken}` })).body;
}

/** A chat of group demo as `client` sees it (open or closed). */
export async function chatOf(client: GroupsClient, subject: string, group = 'demo'): Promise<Chat | undefined> {
  for (const showClosed of [false, true]) {
    for await (const chat of client.paginate<Chat>('getchats', { group_name: group, show_closed: showClosed, limit: 100 })) {
      if (chat.subject === subject) return chat;
    }
  }
  return undefined;
}

/** A chat's whole history, oldest first. */
export async function history(client: GroupsClient, chatId: string): Promise<ChatMessage[]> {
  const all: ChatMessage[] = [];
  for await (const m of client.paginate<ChatMessage>('getchathistory', { chat_id: chatId, sort_dir: 'asc', limit: 100 })) all.push(m);
  return all;
}

/** The cursors file as chat id → msg_num (the last line per chat wins), with its line count. */
export function readCursors(stateDir: string, bot: string): { cursors: Map<string, number>; lines: number } {
  const cursors = new Map<string, number>();
  let lines = 0;
  for (const line of readFileSync(join(stateDir, 'bots', bot, 'cursors.jsonl'), 'utf8').split('\n')) {
    if (!line) continue;
    lines += 1;
    const { c, m } = JSON.parse(line) as { c: string; m?: number };
    if (typeof m === 'number') cursors.set(c, m);
  }
  return { cursors, lines };
}

/** The JSON lines a probe appended to its file. */
export function readSeenFile(file: string): Seen[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Seen);
}

/** Every msg_num from `from` to `to`, for comparing with what a probe saw. */
export function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
}

/** Ends a child process and waits for it. */
export function kill(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once('exit', () => done());
    child.kill(signal);
  });
}
