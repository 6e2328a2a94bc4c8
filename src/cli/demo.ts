import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { GroupsClient } from '../api/client.js';
import { parseWireJson } from '../api/wire-json.js';
import type { Chat, ChatMessage } from '../api/types.js';
import { sleep } from '../chat/backoff.js';
import { loadBotsConfig, type LoadedConfig } from '../config/bots-config.js';
import { DEMO_ACCOUNTS } from '../service/demo-seed.js';
import { createLogger } from '../supervisor/logging.js';
import { Supervisor } from '../supervisor/supervisor.js';
import { DEMO_FILE, formatChatLine } from './chat-command.js';
import { stopOnSignal } from './serve.js';
import { UsageError } from './usage-error.js';

const SCRIPT = ['Hi everyone! Is the demo bot around?', '!ping', '!help'];

/**
 * `npm start`: the embedded local service and the supervisor with the repo's bots.yaml. A scripted
 * member (carol) says a few lines in #general so the bot answers within seconds; the terminal shows
 * the conversation and how to join it.
 */
export async function demo(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args, options: { config: { type: 'string' }, 'log-level': { type: 'string' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) {
    process.stdout.write('Usage: groupwire demo [--config bots.yaml] [--log-level warn]\n\nWhat npm start runs: the local service, the demo bot and a scripted member.\n');
    return 0;
  }
  const loaded = await loadBotsConfig(values.config ?? 'bots.yaml');
  const log = createLogger({ level: values['log-level'] ?? 'warn', pretty: loaded.config.log.pretty });
  const supervisor = await startFallingBack(loaded, log);
  const service = supervisor.localService;
  if (!service) throw new UsageError('the demo needs service.base_url: embedded in bots.yaml');
  await mkdir(dirname(DEMO_FILE), { recursive: true });
  await writeFile(DEMO_FILE, JSON.stringify({ base_url: service.baseUrl, ca_file: service.caFile }));

  process.stdout.write(`\ngroupwire demo: the local service is at ${service.baseUrl}; the demo bot is joining #general, #random and #standup\n`);
  await supervisor.connected();
  const watcher = await watch(service.baseUrl, service.ca);
  process.stdout.write(`The bot is in. Carol says a few things in #general:\n\n`);
  await runScript(service.baseUrl, service.ca);
  process.stdout.write(`
Join the conversation from another terminal:
  npx groupwire chat --as bob general        (or --as alice, mo, carol; chats: general, random, standup)
Say !ping or !help to the bot. Transcripts are written to ./transcripts. Ctrl-C stops the demo.

`);
  await stopOnSignal(async () => {
    watcher.close();
    await supervisor.stop();
  });
  return 0;
}

async function startFallingBack(loaded: LoadedConfig, log: Logger): Promise<Supervisor> {
  try {
    return await Supervisor.start(loaded, { log });
  } catch (error) {
    const embedded = loaded.config.service.embedded;
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || !embedded) throw error;
    process.stdout.write(`port ${embedded.port} is taken; using a free one\n`);
    embedded.port = 0;
    return Supervisor.start(loaded, { log });
  }
}

/** Mo, the owner of #general, listens and prints the conversation (his client sees everyone else). */
async function watch(baseUrl: string, ca: string): Promise<{ close(): void }> {
  const mo = new GroupsClient({ baseUrl, ca, credentials: { email: DEMO_ACCOUNTS.mo.email, password: DEMO_ACCOUNTS.mo.password } });
  const general = await generalOf(mo);
  const ws = await mo.openChatSocket({ chatsubId: general.chat_sub!.id, noHistory: true });
  ws.on('message', (data) => {
    const frame = parseWireJson(String(data)) as ChatMessage;
    if (frame.object === 'chat_message') process.stdout.write(`  #general ${formatChatLine(frame)}\n`);
  });
  return { close: () => ws.close(1000, 'demo over') };
}

async function runScript(baseUrl: string, ca: string): Promise<void> {
  const carol = new GroupsClient({ baseUrl, ca, credentials: { email: DEMO_ACCOUNTS.carol.email, password: DEMO_ACCOUNTS.carol.password } });
  const general = await generalOf(carol);
  const ws = await carol.openChatSocket({ chatsubId: general.chat_sub!.id, noHistory: true });
  for (const line of SCRIPT) {
    ws.send(JSON.stringify({ object: 'chat_post', message: line }));
    await sleep(1500);
  }
  ws.close(1000, 'script done');
  await carol.close();
}

async function generalOf(client: GroupsClient): Promise<Chat> {
  const chats = await client.getChats({ group_name: 'demo' });
  const general = chats.data.find((chat) => chat.subject === 'general');
  if (!general?.chat_sub) throw new Error('the demo group has no #general this account is in');
  return general;
}
