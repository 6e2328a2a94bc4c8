import { InputFile, type Api } from 'grammy';
import type { Message } from 'grammy/types';
import type { Logger } from 'pino';
import { fileLines, type Attachment, type MediaFiles, type RefusedFile } from '../../src/index.js';
import { grammySignal } from './client.js';
import { isFinal, isRefusal, telegramFailure } from './errors.js';
import { renderLine } from './render.js';

/**
 * Files to Telegram: an image Telegram takes as a photo goes by sendPhoto (shown inline), anything
 * else by sendDocument, streamed from the media store as multipart; the caption is the line as the
 * relay renders text (the speaker and the text). Over the Bot API's limits (a photo 10 MB, a document
 * `max_file_size`, 50 MB by default) the file goes as its link line instead.
 */

/** sendPhoto takes at most 10 MB (Bot API), JPEG, PNG or WebP; anything else goes as a document. */
export const PHOTO_LIMIT = 10_000_000;
const PHOTO_TYPES = new Set(['image/jpeg', 'image/png', 'image/webp']);
/** A caption is at most 1,024 characters: a longer line goes as a message of its own before the files. */
export const CAPTION_LIMIT = 1_024;

/** A file waiting to go to Telegram with its line. */
export interface OutboundFile {
  attachment: Attachment;
  as: 'photo' | 'document';
  caption: string;
  /** What is sent instead when the store no longer has the file, or Telegram will not take it: the line with its link. */
  instead: string;
}

interface LineToRender {
  template: string;
  name: string;
  text: string;
  action?: boolean;
  quote?: { name: string; text: string };
}

/**
 * A line with files as Telegram gets it: `text` (a message of its own, when there is one) and the
 * files, each with its caption. The whole line is the first file's caption when it fits (and `fold`:
 * no reply text waits for its parent); otherwise it goes first as text and each file's caption is the
 * speaker. Files over Telegram's limits, and refused ones, are link lines in the text.
 */
export function planPost(line: LineToRender, files: readonly Attachment[], refused: readonly RefusedFile[], documentLimit: number, fold: boolean): { text?: string; files: OutboundFile[] } {
  const planned: Array<{ attachment: Attachment; as: 'photo' | 'document' }> = [];
  const tooBig: Attachment[] = [];
  for (const attachment of files) {
    if (attachment.image && PHOTO_TYPES.has(attachment.contentType) && attachment.size <= PHOTO_LIMIT) planned.push({ attachment, as: 'photo' });
    else if (attachment.size <= documentLimit) planned.push({ attachment, as: 'document' });
    else tooBig.push(attachment);
  }
  const body = [line.text, ...fileLines(tooBig, refused)].filter((part) => part.trim() !== '').join('\n');
  const rendered = renderLine({ ...line, text: body });
  if (planned.length === 0) return { text: rendered, files: [] };
  const full = rendered.trimEnd();
  const speaker = renderLine({ template: line.template, name: line.name, text: '', ...(line.action ? { action: true } : {}) }).trimEnd();
  const instead = (attachment: Attachment) => renderLine({ template: line.template, name: line.name, text: fileLines([attachment])[0]! });
  const inCaption = fold && full.length <= CAPTION_LIMIT;
  return {
    ...(inCaption ? {} : { text: full }),
    files: planned.map((file, index) => ({ ...file, caption: inCaption && index === 0 ? full : speaker, instead: instead(file.attachment) })),
  };
}

/** A file name as grammY writes it in the multipart header (unquoted): no line breaks, quotes, semicolons or controls. */
export function multipartName(name: string): string {
  const safe = name.replace(/[\u0000-\u001f\u007f";\\/]/g, '_').trim();
  return safe === '' ? 'file' : safe;
}

/** The other fields of a send: the forum topic, and the message it answers (the first message of a line only). */
export interface SendPlace {
  message_thread_id?: number;
  reply_parameters?: { message_id: number; allow_sending_without_reply: boolean };
}

/**
 * Sends one file: its bytes from the store (a Readable, streamed into the multipart body), by
 * sendPhoto or sendDocument. A photo Telegram will not take as one (its dimensions, its format) goes
 * again as a document; a file the store no longer has, or one Telegram refuses for good, goes as its
 * link line. A failure trying again may change (the network, a 5xx, a 429) is thrown, as a refused token.
 */
export async function sendFile(
  bot: { api: Api; filesApi: Api; media: MediaFiles; log: Logger; token: string; counters: { files_sent: number; files_linked: number } },
  chatId: string, file: OutboundFile, place: SendPlace, signal: AbortSignal,
): Promise<Message> {
  const asLink = async () => {
    bot.counters.files_linked += 1;
    return await bot.api.sendMessage(chatId, file.instead, { ...place, link_preview_options: { is_disabled: true } }, grammySignal(signal));
  };
  let as = file.as;
  for (;;) {
    let bytes;
    try {
      bytes = await bot.media.open(file.attachment.id);
    } catch {
      // The store's retention took it: its link says so where it leads.
      return await asLink();
    }
    const input = new InputFile(bytes, multipartName(file.attachment.name));
    const fields = { ...place, caption: file.caption };
    try {
      const sent = as === 'photo'
        ? await bot.filesApi.sendPhoto(chatId, input, fields, grammySignal(signal))
        : await bot.filesApi.sendDocument(chatId, input, fields, grammySignal(signal));
      bot.counters.files_sent += 1;
      return sent;
    } catch (error) {
      bytes.destroy();
      if (signal.aborted || isRefusal(error) || !isFinal(error)) throw error;
      if (as === 'photo') {
        as = 'document';
        continue;
      }
      bot.log.warn({ chat: chatId, file: file.attachment.id, ...telegramFailure(error, bot.token) }, 'Telegram refused a file: its link goes instead');
      return await asLink();
    }
  }
}
