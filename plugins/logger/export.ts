import { readFile } from 'node:fs/promises';
import type { ChatMessage } from '../../src/index.js';
import { FORMATS, type FileMeta, type FormatName, type RenderOptions } from './formats.js';
import { fileDay, PathPattern, safeSegment, type PathValues } from './path-pattern.js';
import { dayOf, messageDate, zonedToInstant } from './time.js';

/** A period [start, end) of instants. */
export interface Period {
  start: Date;
  end: Date;
}

/**
 * A `--from`/`--to` value: a day (`2024-05-01`: the whole day in the zone), a day counted back from
 * `now`'s day in the zone (`today`, `yesterday`, `7d`: seven days before today), a local date-time
 * (`2024-05-01T09:30`, in the zone) or an instant with an offset (`2024-05-01T09:30:00Z`). `--to` is
 * inclusive: a day runs to its end. Undefined when the text is none of these.
 */
export function parseBound(text: string, timeZone: string, which: 'from' | 'to', now = new Date()): Date | undefined {
  const counted = dayCountedBack(text, timeZone, now);
  const day = /^(\d{4})-(\d\d)-(\d\d)$/.exec(counted ?? text);
  if (day) {
    const [year, month, dayOfMonth] = day.slice(1).map(Number) as [number, number, number];
    if (month < 1 || month > 12 || dayOfMonth < 1 || dayOfMonth > 31) return undefined;
    // The end of a day is the start of the next (Date.UTC rolls the 32nd over).
    const next = new Date(Date.UTC(year, month - 1, dayOfMonth + (which === 'to' ? 1 : 0)));
    return zonedToInstant({ year: next.getUTCFullYear(), month: next.getUTCMonth() + 1, day: next.getUTCDate() }, timeZone);
  }
  const local = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,3}))?)?$/.exec(text);
  if (local) {
    const [year, month, dayOfMonth, hour, minute, second] = local.slice(1, 7).map((v) => Number(v ?? 0)) as [number, number, number, number, number, number];
    const millisecond = Number((local[7] ?? '0').padEnd(3, '0'));
    const instant = zonedToInstant({ year, month, day: dayOfMonth, hour, minute, second, millisecond }, timeZone);
    return which === 'to' ? new Date(instant.getTime() + 1) : instant;
  }
  if (/^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)$/i.test(text)) {
    const instant = Date.parse(text);
    if (Number.isNaN(instant)) return undefined;
    return new Date(which === 'to' ? instant + 1 : instant);
  }
  return undefined;
}

/** `today`, `yesterday` or `Nd` (N days before today) as the day it names, `YYYY-MM-DD`, in the zone. */
function dayCountedBack(text: string, timeZone: string, now: Date): string | undefined {
  let back: number;
  if (text === 'today') back = 0;
  else if (text === 'yesterday') back = 1;
  else if (/^\d{1,5}d$/.test(text)) back = Number(text.slice(0, -1));
  else return undefined;
  const [year, month, day] = dayOf(now, timeZone).split('-').map(Number) as [number, number, number];
  // Calendar arithmetic on the date alone: Date.UTC rolls day 0 and below back into earlier months.
  return new Date(Date.UTC(year, month - 1, day - back)).toISOString().slice(0, 10);
}

/** One message of a transcript file, with its line exactly as stored. */
export interface StoredMessage {
  message: ChatMessage;
  line: string;
}

export interface ChatFiles {
  /** The chat as the files name it (safe segments read back where possible). */
  group: string;
  chat: string;
  chatId: string | undefined;
  files: Array<{ path: string; day: string | undefined }>;
}

function readable(segment: string | undefined): string | undefined {
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment.replace(/~[0-9a-f]{12}$/, '…'));
  } catch {
    return segment;
  }
}

/**
 * The logger's jsonl files of one chat (by subject or id, optionally in one group). Throws an Error
 * when the name fits chats of several groups.
 */
export async function findChatFiles(dir: string, pathPattern: string, chat: string, group: string | undefined): Promise<ChatFiles | undefined> {
  const pattern = PathPattern.parse(pathPattern);
  const found = await pattern.find(dir, { ext: FORMATS.jsonl.ext });
  const wanted = safeSegment(chat);
  const wantedGroup = group === undefined ? undefined : safeSegment(group);
  const fits = (values: PathValues) => (values.chat_id === wanted || values.chat === wanted)
    && (wantedGroup === undefined || values.group === wantedGroup || values.group_id === wantedGroup
      || (values.group === undefined && values.group_id === undefined));
  const chats = new Map<string, ChatFiles>();
  for (const file of found) {
    if (!fits(file.values)) continue;
    const key = `${file.values.group_id ?? file.values.group ?? ''}/${file.values.chat_id ?? file.values.chat}`;
    let entry = chats.get(key);
    if (!entry) {
      entry = {
        group: readable(file.values.group) ?? readable(file.values.group_id) ?? group ?? '',
        chat: readable(file.values.chat) ?? chat,
        chatId: file.values.chat_id === undefined ? undefined : readable(file.values.chat_id),
        files: [],
      };
      chats.set(key, entry);
    }
    entry.files.push({ path: file.path, day: fileDay(file.values) });
  }
  if (chats.size > 1) {
    throw new Error(`several chats fit ${chat} (${[...chats.keys()].join(', ')}): name the group with --group, or the chat by its id`);
  }
  const [only] = chats.values();
  if (only) only.files.sort((a, b) => (a.day ?? '').localeCompare(b.day ?? '') || a.path.localeCompare(b.path));
  return only;
}

/** The messages of a period from a chat's jsonl files, in msg_num order, each once. */
export async function readPeriod(files: ChatFiles, period: Period): Promise<StoredMessage[]> {
  // A file's day is in the logger's zone, which may not be the export's: allow a day either side.
  const first = dayOf(new Date(period.start.getTime() - 86_400_000), 'UTC');
  const last = dayOf(new Date(period.end.getTime() + 86_400_000), 'UTC');
  // A history reset marker (`"object":"history_reset"`) starts the msg_nums again: messages are told
  // apart by the resets before them and their msg_num, and ordered so.
  const byNum = new Map<string, StoredMessage & { epoch: number }>();
  let epoch = 0;
  for (const file of files.files) {
    if (file.day !== undefined && (file.day < first || file.day > last)) continue;
    const text = await readFile(file.path, 'utf8');
    for (const line of text.split('\n')) {
      if (!line) continue;
      let message: ChatMessage;
      try {
        message = JSON.parse(line) as ChatMessage;
      } catch {
        continue; // a torn last line of a file being written
      }
      if ((message as { object?: string }).object === 'history_reset') {
        epoch += 1;
        continue;
      }
      const key = `${epoch}:${message.msg_num}`;
      if (inPeriod(message, period) && !byNum.has(key)) byNum.set(key, { message, line, epoch });
    }
  }
  return [...byNum.values()].sort((a, b) => a.epoch - b.epoch || a.message.msg_num - b.message.msg_num)
    .map(({ message, line }) => ({ message, line }));
}

export function inPeriod(message: ChatMessage, period: Period): boolean {
  const time = messageDate(message.created).getTime();
  return time >= period.start.getTime() && time < period.end.getTime();
}

/** A whole transcript document: header, entries, footer. jsonl keeps each stored line as it is. */
export function renderTranscript(messages: StoredMessage[], format: FormatName, meta: FileMeta, options: RenderOptions): string {
  const shape = FORMATS[format];
  const body = messages.map((stored) => (format === 'jsonl' ? `${stored.line}\n` : shape.entry(stored.message, options))).join('');
  return `${shape.header(meta)}${body}${shape.footer()}`;
}
