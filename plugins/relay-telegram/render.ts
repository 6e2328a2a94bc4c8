import { closeBidi } from '../../src/index.js';

/**
 * Text for Telegram that stays text: the relay sends with no parse_mode, so Telegram renders nothing
 * in it (no Markdown, no HTML; `*bold*` and `<b>` show as typed). Telegram has no mass mention a
 * member can type (`@all`, `@everyone`, `@here` are plain words to it; only a `@username` pings, and
 * it pings that one account, as typed on Telegram itself), so nothing else is escaped. Control
 * characters are dropped, and a line is cut to Telegram's 4,096 characters.
 */
export const MAX_TEXT = 4_096;

/** Control characters but newline and tab mean nothing in a chat line and may confuse clients. */
export function stripControls(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '');
}

function cut(text: string): string {
  // Telegram counts UTF-16 code units after its own entity parsing; without a parse_mode that is the text.
  return text.length <= MAX_TEXT ? text : `${text.slice(0, MAX_TEXT - 1)}…`;
}

/** A line said somewhere else, as Telegram shows it: the template with the name and the text; an action as `* name text`; a quote of what it answers above it. */
export function renderLine(line: { template: string; name: string; text: string; action?: boolean; quote?: { name: string; text: string } }): string {
  const name = closeBidi(stripControls(line.name));
  const text = stripControls(line.text);
  let body = line.action ? `* ${name} ${text}` : line.template.split('{text}').map((part) => part.split('{name}').join(name)).join(text);
  if (line.quote) {
    // The gateway could not map what this answers to a Telegram message: a quote line stands in for the reply.
    const snippet = stripControls(line.quote.text).replace(/\s+/g, ' ').slice(0, 120);
    body = `> ${closeBidi(stripControls(line.quote.name))}: ${closeBidi(snippet)}\n${body}`;
  }
  return cut(body);
}

/** A file of a message as the Bot API describes it (PhotoSize, Document, Video, Audio, Voice, Animation, VideoNote). */
export interface TelegramFile {
  file_id: string;
  file_unique_id?: string;
  file_size?: number;
  file_name?: string;
  mime_type?: string;
}

/** The fields of a Telegram message the relay reads (Bot API `Message`). */
export interface TelegramMessage {
  message_id: number;
  message_thread_id?: number;
  is_topic_message?: boolean;
  date: number;
  edit_date?: number;
  chat: { id: number; type: string; title?: string; is_forum?: boolean };
  from?: { id: number; is_bot: boolean; first_name: string; last_name?: string; username?: string };
  sender_chat?: { id: number; title?: string };
  author_signature?: string;
  text?: string;
  caption?: string;
  reply_to_message?: { message_id: number };
  photo?: Array<TelegramFile & { width: number; height: number }>;
  video?: TelegramFile;
  animation?: TelegramFile;
  voice?: TelegramFile;
  video_note?: TelegramFile;
  audio?: TelegramFile & { title?: string };
  document?: TelegramFile;
  sticker?: { emoji?: string };
  location?: unknown;
  poll?: { question: string };
  contact?: { first_name: string };
  migrate_to_chat_id?: number;
}

/**
 * A message's text for the chat: its text; a file's caption (the file itself goes with the line:
 * files-in.ts); or, for what is not a file, the caption after what it is (`[sticker 👍]`,
 * `[location]`). Undefined for what carries no words (service messages: joins, title changes, pins).
 */
export function plainFromTelegram(message: TelegramMessage): string | undefined {
  if (message.text !== undefined) return stripControls(message.text);
  if (hasFile(message)) return message.caption === undefined ? '' : stripControls(message.caption);
  const media = mediaOf(message);
  if (media === undefined) return undefined;
  const caption = message.caption === undefined ? '' : ` ${stripControls(message.caption)}`;
  return `[${media}]${caption}`;
}

/** The message carries a file the relay hands on (a sticker is not one: it stays `[sticker 👍]`). */
export function hasFile(message: TelegramMessage): boolean {
  return (message.photo?.length ?? 0) > 0 || message.animation !== undefined || message.video !== undefined || message.video_note !== undefined
    || message.voice !== undefined || message.audio !== undefined || message.document !== undefined;
}

function mediaOf(message: TelegramMessage): string | undefined {
  if (message.sticker) return `sticker${message.sticker.emoji ? ` ${message.sticker.emoji}` : ''}`;
  if (message.location) return 'location';
  if (message.poll) return `poll: ${message.poll.question}`;
  if (message.contact) return `contact: ${message.contact.first_name}`;
  return undefined;
}

/** Who said it: the person (first and last name), or the chat it was sent as (an anonymous admin, a channel) with its post signature. */
export function speakerOf(message: TelegramMessage): { id: string; name: string } {
  if (message.sender_chat) {
    const title = message.sender_chat.title ?? String(message.sender_chat.id);
    return { id: String(message.sender_chat.id), name: message.author_signature ? `${message.author_signature} (${title})` : title };
  }
  const from = message.from;
  if (!from) return { id: String(message.chat.id), name: message.chat.title ?? String(message.chat.id) };
  return { id: String(from.id), name: from.last_name ? `${from.first_name} ${from.last_name}` : from.first_name };
}
