import { createInterface } from 'node:readline';
import type { WebSocket } from 'ws';
import type { GroupsClient } from '../api/client.js';
import { errorFromObject, GroupsError } from '../api/errors.js';
import { explainError } from '../api/explain-error.js';
import { terminalText } from './terminal-text.js';
import { parseWireJson } from '../api/wire-json.js';
import type { Chat, ChatMessage } from '../api/types.js';
import { DEMO_ACCOUNTS } from '../service/demo-seed.js';
import { chatLine } from './chat-line.js';
import { parseFlags } from './command.js';
import { EXIT, writeErr } from './output.js';
import { OwnPosts } from './own-posts.js';
import { CLIENT_HELP, CLIENT_OPTIONS, clientFromFlags, type ClientFlags } from './client-options.js';
import { UsageError } from './usage-error.js';

export const CHAT_HELP = `Usage: groupwire chat [--as MEMBER] [--group demo] CHAT

Talks in a chat interactively: what others say is printed, each line you type is posted and shown
with its time and your name once the service has stored it. Ctrl-D (or Ctrl-C, or the end of piped
input) leaves, after every line typed so far is posted. Exit 0, or 1 when a line could not be posted.
Who talks is --as MEMBER: a demo account (alice, mo, bob, carol; its password is known) or an e-mail
address (password from --password or GROUPWIRE_PASSWORD); without --as, the login of every client
command below (--email/--password, --token, or the environment). Without --url or GROUPWIRE_URL, the
demo (or serve) running from this directory (.groupwire/demo.json).

Options:
  --as MEMBER        who to talk as: a demo account or an e-mail address
  --group NAME       the chat's group (default demo)
  --wait SECONDS     after the end of input, go on showing what is said for this long before leaving
                     (a script's way to see the answers: echo '!ping' | groupwire chat --as bob general --wait 5)
  -h, --help

${CLIENT_HELP}`;

// Where the demo writes its address (defined with the code that reads it; kept here for its importers).
export { DEMO_FILE } from './service-address.js';

function formatChatLine(message: ChatMessage): string {
  const time = (message.created ?? '').slice(11, 16);
  if (message.type === 'chat_msg_type_closed') return chatLine(`[${time}] -- `, message.message);
  return chatLine(`[${time}] <${terminalText(message.display_name || message.user_name)}> `, message.message);
}

/**
 * `--as MEMBER` as login flags: a demo account's e-mail address and (public) password, or an e-mail
 * address whose password is --password or GROUPWIRE_PASSWORD. Any other login flag beside it is a
 * second answer to "who": refused rather than one silently ignored.
 */
function memberLogin(as: string, flags: ClientFlags): ClientFlags {
  const other = (['email', 'token'] as const).find((name) => flags[name] !== undefined);
  if (other) throw new UsageError(`--as and --${other} both say who talks: give one`);
  const demo = Object.hasOwn(DEMO_ACCOUNTS, as) ? (DEMO_ACCOUNTS as Record<string, { email: string; password: string }>)[as] : undefined;
  // A demo account has its own (public) password: GROUPWIRE_PASSWORD, exported for another account
  // with the demo's export lines, must not be sent with this one.
  const password = flags.password ?? (demo ? demo.password : process.env.GROUPWIRE_PASSWORD);
  const email = demo?.email ?? as;
  if (!password) throw new UsageError(`no password for ${email}: pass --password or set GROUPWIRE_PASSWORD`);
  return { email, password };
}

export async function chatCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args, allowPositionals: true,
    options: {
      as: { type: 'string' }, group: { type: 'string' }, wait: { type: 'string' }, help: { type: 'boolean', short: 'h' }, ...CLIENT_OPTIONS,
    },
  });
  const waitSeconds = values.wait === undefined ? 0 : Number(values.wait);
  if (!Number.isFinite(waitSeconds) || waitSeconds < 0) throw new UsageError(`--wait takes a number of seconds, not ${values.wait}`);
  if (values.help) {
    process.stdout.write(CHAT_HELP);
    return 0;
  }
  const subject = positionals[0];
  if (!subject || positionals.length > 1) throw new UsageError('name one chat, e.g. groupwire chat --as bob general');
  const client = clientFromFlags(values.as === undefined ? values : { ...values, ...memberLogin(values.as, values) });
  try {
    const group = values.group ?? 'demo';
    const chats = await client.paginate<Chat>('getchats', { group_name: group, limit: 100 }).all()
      .catch((error: unknown) => {
        throw error instanceof GroupsError ? error.withContext({ params: { group_name: group } }) : error;
      });
    const chat = chats.find((c) => c.subject === subject || c.id === subject);
    if (!chat) throw new UsageError(`group ${group} has no open chat ${subject} (open ones: ${chats.map((c) => c.subject).join(', ')})`);
    // Who talks (to tell its own lines): the login answers it, a token's extended answer too.
    if (!client.session.user) await (client.session.canLogIn ? client.login() : client.csrf());
    const me = client.session.user!;
    const chatsubId = chat.chat_sub?.id ?? (await client.joinChat({ chat_id: chat.id })).id;
    // The chat's newest message before anything is typed, so a line is never confirmed by an older
    // message of the same text (piped input can come before the socket's history is read).
    const newest = await client.getChatHistory({ chat_id: chat.id, limit: 1, sort_dir: 'desc' });
    // Nothing awaited from here until the listeners are on: the socket's history and stdin's lines
    // are emitted once, heard or not.
    const ws = await client.openChatSocket({ chatsubId });
    process.stdout.write(`Talking in ${terminalText(group)}/${terminalText(chat.subject)} as ${terminalText(me.email || me.user_name || String(me.id))}. Type a line to post it; Ctrl-D to leave.\n`);
    const { unconfirmed, refused } = await talk(client, chat, String(me.id), ws, newest.data[0]?.msg_num ?? 0, waitSeconds * 1000);
    if (unconfirmed.length > 0) {
      writeErr(`groupwire: ${unconfirmed.length} line${unconfirmed.length === 1 ? '' : 's'} not confirmed as posted: ${unconfirmed.map(quoteLine).join(', ')}\n`);
    }
    return unconfirmed.length + refused > 0 ? EXIT.error : EXIT.ok;
  } finally {
    await client.close();
  }
}

/**
 * The conversation: others' lines as they come, each typed line posted and shown (with time and name)
 * once the service has stored it. Ends at end of input (Ctrl-D, Ctrl-C, or a pipe's end), after every
 * line typed so far is confirmed, or when the socket closes. Answers the lines never confirmed and
 * how many the service refused.
 */
async function talk(
  client: GroupsClient, chat: Chat, userId: string, ws: WebSocket, newestMsgNum: number, lingerMs: number,
): Promise<{ unconfirmed: string[]; refused: number }> {
  const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY);
  const prompt = createInterface({ input: process.stdin, output: process.stdout, prompt: `${chat.subject}> `, terminal: interactive });
  let inputClosed = false;
  const print = (line: string) => {
    if (!interactive) return void process.stdout.write(`${line}\n`);
    process.stdout.write(`\r\x1b[K${line}\n`);
    // Never after close: prompting again would resume stdin and wait for a second Ctrl-D.
    if (!inputClosed) prompt.prompt(true);
  };
  const own = new OwnPosts({
    userId,
    stored: (message) => print(formatChatLine(message)),
    readHistory: async (after) => {
      const history = await client.paginate<ChatMessage>('getchathistory', { chat_id: chat.id, start_msg_num: after, sort_dir: 'asc', limit: 100 }).all();
      return history.sort((a, b) => a.msg_num - b.msg_num);
    },
  });
  own.seen(newestMsgNum);
  // Others' lines that came while a line of ours was not confirmed yet: they may answer it, so ours is
  // looked for first and the lines are shown in the chat's order (the service does not echo our posts).
  let held: ChatMessage[] = [];
  let confirming: Promise<void> | undefined;
  const showOthers = (message: ChatMessage) => {
    if (own.count === 0 && held.length === 0) return print(formatChatLine(message));
    held.push(message);
    confirming ??= own.confirmNow().then(() => {
      confirming = undefined;
      const ready = held.sort((a, b) => a.msg_num - b.msg_num);
      held = [];
      for (const line of ready) print(formatChatLine(line));
    });
  };
  ws.on('message', (data) => {
    const frame = parseWireJson(String(data)) as ChatMessage | { object: 'error'; type: string; extra: string };
    if (frame.object === 'chat_message') {
      own.seen(frame.msg_num);
      showOthers(frame);
    } else if (frame.object === 'error') {
      const reason = explainError(errorFromObject(frame, 400, 'chat_post'));
      refused += 1;
      void own.refused().then((text) => print(`(not posted${text === undefined ? '' : ` ${quoteLine(text)}`}: ${reason})`));
    }
  });
  let socketOpen = true;
  let refused = 0;
  prompt.on('line', (line) => {
    if (line.trim() && socketOpen) {
      ws.send(JSON.stringify({ object: 'chat_post', message: line }));
      own.sent(line);
    } else if (line.trim()) {
      refused += 1;
      print(`(not posted ${quoteLine(line)}: the chat socket is closed)`);
    }
    if (interactive) prompt.prompt();
  });
  // Ctrl-C leaves like Ctrl-D (readline would otherwise only pause the input).
  prompt.on('SIGINT', () => prompt.close());
  if (interactive) prompt.prompt();
  await new Promise<void>((resolve) => {
    prompt.once('close', () => {
      inputClosed = true;
      // Let go of the terminal: nothing reads stdin any more, so the process can end.
      process.stdin.pause();
      resolve();
    });
    ws.once('close', (code, reason) => {
      socketOpen = false;
      if (!inputClosed) {
        print(`(the chat socket closed: ${code} ${reason.toString()})`);
        prompt.close();
      }
    });
  });
  if (interactive) process.stdout.write('\n');
  const unconfirmed = await own.settle(30_000);
  // --wait: what is said after the last line (a bot's answer) is still shown for a while.
  if (lingerMs > 0 && socketOpen) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, lingerMs);
      ws.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  if (socketOpen) ws.close(1000, 'bye');
  return { unconfirmed, refused };
}

/** A typed line in a note, quoted and cut short. */
function quoteLine(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
}
