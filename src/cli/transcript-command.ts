import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { GroupsClient } from '../api/client.js';
import type { Chat, ChatMessage } from '../api/types.js';
import { findChatFiles, parseBound, readPeriod, renderTranscript, type ChatFiles, type Period } from '../../plugins/logger/export.js';
import { FORMAT_NAMES, type FormatName } from '../../plugins/logger/formats.js';
import { DEFAULT_PATH, PathPattern } from '../../plugins/logger/path-pattern.js';
import { dayOf, isTimeZone } from '../../plugins/logger/time.js';
import { CLIENT_HELP, CLIENT_OPTIONS, clientFromFlags, type ClientFlags } from './client-options.js';
import { CommandUsageError, inCommand, oneOf, parseFlags } from './command.js';
import { EXIT, writeErr, writeOut } from './output.js';
import { UsageError } from './usage-error.js';
import { groupNameOf } from './group-lookup.js';

export const TRANSCRIPT_HELP = `Usage: groupwire transcript <subcommand> [options]

Subcommands:
  export     write a chat's transcript for a period (from the logger's files, or from the service)

Run 'groupwire transcript export --help' for its options.
`;

export const TRANSCRIPT_EXPORT_HELP = `Usage: groupwire transcript export --chat SUBJECT_OR_ID --from DATE --to DATE --format F [options]

Writes a chat's transcript for a period. It reads the logger plugin's jsonl files under --dir; when that
directory has none for the chat, it reads the chat's history from the service (getchathistory) with the
credentials of the other client commands.

DATE is a day (2024-05-01: the whole day; today, yesterday, or 7d: seven days before today), a local
time (2024-05-01T09:30) or an instant with an offset (2024-05-01T09:30:00Z); days and local times are
in --tz. --to is inclusive: --from 7d --to today is the last seven days and today.

Options:
  --chat SUBJECT_OR_ID     the chat (required)
  --group NAME             its group (needed for a subject when reading the service, or when several
                           groups have a chat of that subject)
  --from DATE --to DATE    the period (required)
  --format F               ${FORMAT_NAMES.join(', ')} (required)
  --dir DIR                the logger's directory (default ./transcripts)
  --path PATTERN           the logger's path pattern, if bots.yaml changed it (default ${DEFAULT_PATH})
  --source S               auto (default: the files if there are any, else the service), files or service
  --out FILE               write here instead of standard output
  --tz ZONE                the IANA time zone of dates and of the times shown (default UTC)
  --time-format F          how times show (tokens YYYY MM DD HH mm ss; default YYYY-MM-DD HH:mm:ss)
  -h, --help               this text

${CLIENT_HELP}`;

const SOURCES = ['auto', 'files', 'service'] as const;
const DATE_FORMS = '2024-05-01, 2024-05-01T09:30, 2024-05-01T09:30:00Z, today, yesterday or 7d';

export async function transcriptCommand(args: string[]): Promise<number> {
  const [subcommand, ...rest] = args;
  switch (subcommand) {
    case 'export':
      return inCommand('transcript export', () => transcriptExportCommand(rest));
    case undefined:
      writeOut(TRANSCRIPT_HELP);
      return EXIT.usage;
    case '-h':
    case '--help':
    case 'help':
      writeOut(TRANSCRIPT_HELP);
      return EXIT.ok;
    default:
      throw new CommandUsageError(`unknown transcript subcommand ${subcommand} (export)`, 'transcript');
  }
}

function required(flag: string, value: string | undefined): string {
  if (value === undefined || value === '') throw new UsageError(`--${flag} is required`);
  return value;
}

async function transcriptExportCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: {
      chat: { type: 'string' }, group: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, format: { type: 'string' },
      dir: { type: 'string' }, path: { type: 'string' }, source: { type: 'string' }, out: { type: 'string' }, tz: { type: 'string' },
      'time-format': { type: 'string' }, help: { type: 'boolean', short: 'h' }, ...CLIENT_OPTIONS,
    },
  });
  if (values.help) {
    writeOut(TRANSCRIPT_EXPORT_HELP);
    return EXIT.ok;
  }
  const chat = required('chat', values.chat);
  const format = oneOf('format', required('format', values.format), FORMAT_NAMES)!;
  const timeZone = values.tz ?? 'UTC';
  if (!isTimeZone(timeZone)) throw new UsageError(`--tz ${timeZone} is not a time zone (an IANA name such as UTC or Europe/Berlin)`);
  const start = parseBound(required('from', values.from), timeZone, 'from');
  const end = parseBound(required('to', values.to), timeZone, 'to');
  if (!start) throw new UsageError(`--from ${values.from} is not a date (${DATE_FORMS})`);
  if (!end) throw new UsageError(`--to ${values.to} is not a date (${DATE_FORMS})`);
  if (end <= start) throw new UsageError('--to is before --from');
  const pathPattern = values.path ?? DEFAULT_PATH;
  try {
    PathPattern.parse(pathPattern);
  } catch (error) {
    throw new UsageError(`--path: ${(error as Error).message}`);
  }
  const result = await exportTranscript({
    chat, group: values.group, period: { start, end }, format, timeZone, timeFormat: values['time-format'] ?? 'YYYY-MM-DD HH:mm:ss',
    dir: resolve(values.dir ?? 'transcripts'), pathPattern, source: oneOf('source', values.source, SOURCES) ?? 'auto',
    client: () => clientFromFlags(values as ClientFlags),
  });
  if (values.out) {
    const out = resolve(values.out);
    await mkdir(dirname(out), { recursive: true });
    await writeFile(`${out}.part`, result.text);
    await rename(`${out}.part`, out);
    writeErr(`groupwire: wrote ${result.count} message${result.count === 1 ? '' : 's'} of ${result.chat} from the ${result.source} to ${values.out}\n`);
  } else writeOut(result.text);
  for (const note of result.notes) writeErr(`groupwire: ${note}\n`);
  return EXIT.ok;
}

export interface ExportOptions {
  chat: string;
  group: string | undefined;
  period: Period;
  format: FormatName;
  timeZone: string;
  timeFormat: string;
  dir: string;
  pathPattern: string;
  source: (typeof SOURCES)[number];
  /** Made only when the service is read. */
  client(): GroupsClient;
}

export interface ExportResult {
  text: string;
  count: number;
  source: 'files' | 'service';
  chat: string;
  notes: string[];
}

/** The transcript of a chat for a period, from the logger's files or the service. */
export async function exportTranscript(options: ExportOptions): Promise<ExportResult> {
  const { period, format } = options;
  const render = { timeZone: options.timeZone, timeFormat: options.timeFormat };
  const periodText = `${options.period.start.toISOString()} to ${new Date(options.period.end.getTime() - 1).toISOString()}`;
  if (options.source !== 'service') {
    let files;
    try {
      files = await findChatFiles(options.dir, options.pathPattern, options.chat, options.group);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    if (files) {
      const messages = await readPeriod(files, period);
      const meta = { group: files.group, chat: files.chat, period: periodText, timeZone: options.timeZone };
      const notes: string[] = [];
      const first = await firstStored(files);
      // Files that begin on a later day than the period may miss messages from before the logger ran.
      if (first && dayOf(new Date(first.created), options.timeZone) > dayOf(period.start, options.timeZone)) {
        notes.push(`the transcript files of ${files.chat} begin at ${first.created}; for earlier messages use --source service`);
      }
      return { text: renderTranscript(messages, format, meta, render), count: messages.length, source: 'files', chat: files.chat, notes };
    }
    if (options.source === 'files') throw new UsageError(`no transcript files of ${options.chat} under ${options.dir}`);
  }
  const client = options.client();
  try {
    const chat = await findServiceChat(client, options.chat, options.group);
    const messages = await historyOf(client, chat.id, period);
    // Named by a chat id alone: the heading names the group as the caller knows it (getsubs), not by its id.
    const group = options.group ?? (await groupNameOf(client, String(chat.group_id))) ?? String(chat.group_id);
    const meta = { group, chat: chat.subject, period: periodText, timeZone: options.timeZone };
    const stored = messages.map((message) => ({ message, line: JSON.stringify(message) }));
    return { text: renderTranscript(stored, format, meta, render), count: stored.length, source: 'service', chat: chat.subject, notes: [] };
  } finally {
    await client.close();
  }
}

async function firstStored(files: ChatFiles): Promise<ChatMessage | undefined> {
  const [first] = files.files;
  if (!first) return undefined;
  const line = (await readFile(first.path, 'utf8')).split('\n', 1)[0];
  try {
    return line ? (JSON.parse(line) as ChatMessage) : undefined;
  } catch {
    return undefined;
  }
}

/** The chat by id (any group), or by subject or id in --group. */
async function findServiceChat(client: GroupsClient, chat: string, group: string | undefined): Promise<Pick<Chat, 'id' | 'subject' | 'group_id'>> {
  if (group === undefined) {
    // Without a group only an id can be looked up: its history answers whether it is one.
    const page = await client.getChatHistory({ chat_id: chat, limit: 1 }).catch(() => undefined);
    if (!page) throw new UsageError(`--chat ${chat}: no chat with that id (name a subject together with --group)`);
    const groupId = page.data[0]?.group_id ?? '';
    // Its subject, for the heading, from its group's chat list (the id stands in when that fails).
    const listed = groupId === '' ? undefined : await findInGroup(client, { group_id: groupId }, chat).catch(() => undefined);
    return listed ?? { id: chat, subject: chat, group_id: groupId };
  }
  const found = await findInGroup(client, { group_name: group }, chat);
  if (!found) throw new UsageError(`group ${group} has no chat ${chat}`);
  return found;
}

/** The chat with this id or subject among the group's chats, open or closed. */
async function findInGroup(client: GroupsClient, group: { group_name: string } | { group_id: string }, chat: string): Promise<Chat | undefined> {
  for (const showClosed of [false, true]) {
    for await (const found of client.paginate<Chat>('getchats', { ...group, show_closed: showClosed, limit: 100 })) {
      if (found.id === chat || found.subject === chat) return found;
    }
  }
  return undefined;
}

/** The chat's messages of the period, oldest first (read newest first, stopping before the period). */
async function historyOf(client: GroupsClient, chatId: string, period: Period): Promise<ChatMessage[]> {
  const messages: ChatMessage[] = [];
  for await (const message of client.paginate<ChatMessage>('getchathistory', { chat_id: chatId, sort_dir: 'desc', limit: 100 })) {
    const time = Date.parse(message.created);
    if (time < period.start.getTime()) break;
    if (time < period.end.getTime()) messages.push(message);
  }
  return messages.reverse();
}
