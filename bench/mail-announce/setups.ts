import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type WebSocket from 'ws';
import { stringify } from 'yaml';
import { GroupsClient, type Chat } from '../../src/api/index.js';
import { BUILD } from '../lib/build.js';
import { stopChild, type Running } from '../lib/child.js';
import { ROOT } from '../lib/paths.js';
import type { ServiceProcess } from '../lib/service-process.js';

/**
 * The setups of the mail announcement bench and what they stand on: a chat of the demo group per setup
 * (its poster, a user of its own, and bob, who watches), the supervisor's bots.yaml, the bare pollers'
 * process, and bob's sockets that stamp each announcement as it arrives.
 */

export const GROUP = 'demo';

/** One way of getting the archive's new topics into a chat: group-mail at some poll options, or the bare poller at a fixed interval. */
export interface Setup {
  key: string;
  kind: 'gateway' | 'bare';
  /** group-mail's poll options; for the bare poller only `min` counts (its fixed interval). */
  poll: { min: number; max: number };
  /** The chat's subject, which is also its poster's user name. */
  chat: string;
  email: string;
  password: string;
}

export function setupOf(kind: Setup['kind'], min: number, max: number): Setup {
  const key = `${kind}-${min}`;
  const chat = `mail-${key}`;
  return { key, kind, poll: { min, max }, chat, email: `${chat}@example.com`, password: `${chat}-pass` };
}

/** A poster of its own per setup (a member of the group and of its chat), and the chat with bob in it. */
export async function prepare(service: ServiceProcess, setups: Setup[]): Promise<void> {
  for (const setup of setups) {
    await service.admin('users', { email: setup.email, password: setup.password, full_name: `Poster ${setup.key}`, user_name: setup.chat });
    await service.admin('subscriptions', { group: GROUP, user: setup.email, role: 'member' });
    await service.admin('chats', { group: GROUP, owner: 'alice@example.com', subject: setup.chat, members: [setup.email, 'bob@example.com'] });
  }
}

/** groupwire (the tsc build) in a process of its own: a bot per gateway setup, each with group-mail at its poll options and its chat. */
export function startSupervisor(service: ServiceProcess, setups: Setup[], dir: string, run: string): Running {
  const file = join(dir, `bots-${run}.yaml`);
  writeFileSync(file, stringify({
    service: { base_url: service.baseUrl, ca_file: service.caFile },
    state_dir: join(dir, `state-${run}`),
    log: { level: 'warn', pretty: false },
    // Several benches may run on one machine: no operations endpoint to fight over a port.
    ops: false,
    bots: setups.map((setup) => ({
      name: setup.key,
      login: { email: setup.email, password: setup.password },
      chats: [{ group: GROUP, chat: setup.chat }],
      plugins: [{ use: 'group-mail', with: { groups: { [setup.chat]: GROUP }, poll: { min: `${setup.poll.min}ms`, max: `${setup.poll.max}ms` } } }],
    })),
  }));
  const child = spawn(process.execPath, [join(BUILD, 'src/cli/main.js'), 'run', file], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  return { stop: () => stopChild(child) };
}

/** The bare pollers of these setups, in one process of their own (bench/mail-announce/bare-poller.ts); resolves once it says ready. */
export async function startBare(service: ServiceProcess, setups: Setup[]): Promise<Running> {
  const settings = {
    baseUrl: service.baseUrl, caFile: service.caFile, group: GROUP,
    pollers: setups.map((setup) => ({ email: setup.email, password: setup.password, chat: setup.chat, intervalMs: setup.poll.min })),
  };
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/mail-announce/bare-poller.ts'), JSON.stringify(settings)], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((ready, fail) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) ready();
    });
    child.once('exit', (code) => fail(new Error(`the bare pollers ended (${code}) before they were ready`)));
  });
  return { stop: () => stopChild(child) };
}

/** What the bench looks for in a chat line: `mab-<tag>-<n>` from a topic's subject, wherever the announcement puts it. */
export const MARK = /\bmab-([a-z]+)-(\d+)\b/;
export const mark = (tag: string, n: number): string => `mab-${tag}-${n}`;

/**
 * bob's socket on each setup's chat: `seen(setup, tag, n, at)` for each line that carries a mark (only
 * the setup's poster announces topics there), stamped when the socket handed the frame over (before parsing). One clock: the bench's.
 */
export async function watchChats(
  service: ServiceProcess, setups: Setup[], seen: (setup: Setup, tag: string, n: number, at: number) => void,
): Promise<{ close(): Promise<void> }> {
  const bob = new GroupsClient({ baseUrl: service.baseUrl, ca: service.ca, credentials: { email: 'bob@example.com', password: 'bob-demo' } });
  await bob.login();
  const chats = new Map<string, Chat>();
  for await (const chat of bob.paginate<Chat>('getchats', { group_name: GROUP, limit: 100 })) chats.set(chat.subject, chat);
  const sockets: WebSocket[] = [];
  for (const setup of setups) {
    const chat = chats.get(setup.chat);
    if (!chat?.chat_sub?.id) throw new Error(`bob is not in the chat ${setup.chat}`);
    const socket = await bob.openChatSocket({ chatsubId: String(chat.chat_sub.id), noHistory: true });
    socket.on('message', (data) => {
      const at = performance.now();
      const frame = JSON.parse(data.toString()) as { object?: string; message?: unknown };
      if (frame.object !== 'chat_message' || typeof frame.message !== 'string') return;
      const found = MARK.exec(frame.message);
      if (found) seen(setup, found[1]!, Number(found[2]), at);
    });
    sockets.push(socket);
  }
  return {
    async close() {
      for (const socket of sockets) socket.close();
      await bob.close();
    },
  };
}
