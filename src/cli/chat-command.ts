import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GroupsClient } from '../api/client.js';
import { parseWireJson } from '../api/wire-json.js';
import type { Chat, ChatMessage } from '../api/types.js';
import { DEMO_ACCOUNTS } from '../service/demo-seed.js';
import { parseFlags } from './command.js';
import { UsageError } from './usage-error.js';

export const CHAT_HELP = `Usage: groupwire chat --as MEMBER [--group demo] CHAT

Talks in a chat interactively: what others say is printed, each line you type is posted.
MEMBER is a demo account (alice, mo, bob, carol) or an e-mail address (password from --password or
GROUPWIRE_PASSWORD). The service is --url/--ca-file or GROUPWIRE_URL/GROUPWIRE_CA_FILE; without them, the
demo started by npm start in this directory (.groupwire/demo.json).

Options:
  --as MEMBER        who to talk as
  --group NAME       the chat's group (default demo)
  --password P       the password, for an e-mail address that is not a demo account
  --url URL --ca-file FILE
  -h, --help
`;

/** Where the demo writes its address, for `groupwire chat` to find it. */
export const DEMO_FILE = join('.groupwire', 'demo.json');

export function formatChatLine(message: ChatMessage): string {
  const time = (message.created ?? '').slice(11, 16);
  if (message.type === 'chat_msg_type_closed') return `[${time}] -- ${message.message}`;
  const prefix = `[${time}] <${message.display_name || message.user_name}> `;
  // Later lines of a multi-line message line up under the first.
  return `${prefix}${message.message.split('\n').join(`\n${' '.repeat(prefix.length)}`)}`;
}

export async function chatCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args, allowPositionals: true,
    options: {
      as: { type: 'string' }, group: { type: 'string' }, password: { type: 'string' }, url: { type: 'string' },
      'ca-file': { type: 'string' }, help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(CHAT_HELP);
    return 0;
  }
  const subject = positionals[0];
  if (!subject || positionals.length > 1) throw new UsageError('name one chat, e.g. groupwire chat --as bob general');
  if (!values.as) throw new UsageError('--as MEMBER is required (alice, mo, bob, carol or an e-mail address)');
  const demo = (DEMO_ACCOUNTS as Record<string, { email: string; password: string }>)[values.as];
  const email = demo?.email ?? values.as;
  const password = values.password ?? process.env.GROUPWIRE_PASSWORD ?? demo?.password;
  if (!password) throw new UsageError(`no password for ${email}: pass --password or set GROUPWIRE_PASSWORD`);
  const service = await serviceAddress(values.url, values['ca-file']);

  const client = new GroupsClient({ baseUrl: service.url, caFile: service.caFile, credentials: { email, password } });
  const group = values.group ?? 'demo';
  const chats = await client.paginate<Chat>('getchats', { group_name: group, limit: 100 }).all();
  const chat = chats.find((c) => c.subject === subject || c.id === subject);
  if (!chat) throw new UsageError(`group ${group} has no open chat ${subject} (open ones: ${chats.map((c) => c.subject).join(', ')})`);
  const chatsubId = chat.chat_sub?.id ?? (await client.joinChat({ chat_id: chat.id })).id;
  const ws = await client.openChatSocket({ chatsubId });
  const prompt = createInterface({ input: process.stdin, output: process.stdout, prompt: `${chat.subject}> ` });
  const print = (line: string) => {
    process.stdout.write(`\r\x1b[K${line}\n`);
    prompt.prompt(true);
  };
  process.stdout.write(`Talking in ${group}/${chat.subject} as ${email}. Type a line to post it; Ctrl-D to leave.\n`);
  ws.on('message', (data) => {
    const frame = parseWireJson(String(data)) as ChatMessage | { object: 'error'; type: string; extra: string };
    if (frame.object === 'chat_message') print(formatChatLine(frame));
    else if (frame.object === 'error') print(`(refused: ${frame.type} ${frame.extra})`);
  });
  prompt.on('line', (line) => {
    if (line.trim()) ws.send(JSON.stringify({ object: 'chat_post', message: line }));
    prompt.prompt();
  });
  prompt.prompt();
  await new Promise<void>((resolve) => {
    prompt.once('close', () => resolve());
    ws.once('close', (code, reason) => {
      print(`(the chat socket closed: ${code} ${reason.toString()})`);
      prompt.close();
    });
  });
  ws.close(1000, 'bye');
  await client.close();
  return 0;
}

async function serviceAddress(url: string | undefined, caFile: string | undefined): Promise<{ url: string; caFile?: string }> {
  const fromEnv = url ?? process.env.GROUPWIRE_URL;
  if (fromEnv) return { url: fromEnv, caFile: caFile ?? process.env.GROUPWIRE_CA_FILE };
  try {
    const demo = JSON.parse(await readFile(DEMO_FILE, 'utf8')) as { base_url: string; ca_file?: string };
    return { url: demo.base_url, caFile: demo.ca_file };
  } catch {
    throw new UsageError(`no service address: set GROUPWIRE_URL (or run npm start here first, which writes ${DEMO_FILE})`);
  }
}
