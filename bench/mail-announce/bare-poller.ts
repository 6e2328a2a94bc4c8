import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { GroupsClient, type Chat, type Message } from '../../src/api/index.js';

/**
 * The mail announcement bench's baseline, in a process of its own like groupwire's supervisor: per
 * setup, a GroupsClient that calls getmessages on a fixed schedule every `intervalMs` (no back-off, no
 * durable cursor: the position is the newest msg_num in memory) and posts each new topic into its
 * chat itself, at once, through the chat's websocket — no gateway, no queue, no message map. It prints
 * `ready` once every poller has its position and its socket. Its one argument is JSON:
 * { baseUrl, caFile, group, pollers: [{ email, password, chat, intervalMs }] }.
 */
interface PollerSettings {
  email: string;
  password: string;
  /** The chat's subject. */
  chat: string;
  intervalMs: number;
}

interface Settings {
  baseUrl: string;
  caFile: string;
  group: string;
  pollers: PollerSettings[];
}

const settings = JSON.parse(process.argv[2] ?? '') as Settings;
const ca = readFileSync(settings.caFile, 'utf8');
const stopping = new AbortController();

async function startPoller(poller: PollerSettings): Promise<() => Promise<void>> {
  const client = new GroupsClient({ baseUrl: settings.baseUrl, ca, credentials: { email: poller.email, password: poller.password } });
  await client.login();
  let chat: Chat | undefined;
  for await (const found of client.paginate<Chat>('getchats', { group_name: settings.group, limit: 100 })) if (found.subject === poller.chat) chat = found;
  if (!chat?.chat_sub?.id) throw new Error(`${poller.email} is not in the chat ${poller.chat}`);
  const socket = await client.openChatSocket({ chatsubId: String(chat.chat_sub.id), noHistory: true });
  socket.on('error', (error) => {
    process.stderr.write(`bare poller ${poller.chat}: ${error.message}\n`);
    process.exit(1);
  });
  // The past is not announced: the newest message is the position.
  const newest = await client.getMessages({ group_name: settings.group, limit: 1 });
  let position = newest.data[0]?.msg_num ?? 0;
  const loop = (async () => {
    const start = performance.now();
    for (let tick = 1; !stopping.signal.aborted; tick += 1) {
      // A fixed schedule: a slow answer does not push the later calls back.
      const wait = start + tick * poller.intervalMs - performance.now();
      if (wait > 0) await sleep(wait, undefined, { signal: stopping.signal }).catch(() => undefined);
      if (stopping.signal.aborted) return;
      const page = await client.getMessages({ group_name: settings.group, limit: 100 });
      const fresh = page.data.filter((message: Message) => message.msg_num > position).sort((a, b) => a.msg_num - b.msg_num);
      for (const message of fresh) {
        position = Math.max(position, message.msg_num);
        if (message.is_reply) continue;
        socket.send(JSON.stringify({ object: 'chat_post', message: `<${message.name}> New topic: ${message.subject}` }));
      }
    }
  })().catch((error: unknown) => {
    // A failed call ends the baseline loudly: its figures would be wrong, not slow.
    if (stopping.signal.aborted) return;
    process.stderr.write(`bare poller ${poller.chat}: ${(error as Error).message}\n`);
    process.exit(1);
  });
  return async () => {
    await loop;
    socket.close();
    await client.close();
  };
}

const stops = await Promise.all(settings.pollers.map((poller) => startPoller(poller)));
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  stopping.abort();
  void Promise.all(stops.map((stop) => stop())).finally(() => process.exit(0));
});
