import { GrammyError, type Api } from 'grammy';
import { FileRefusedError, sizeInWords, type IncomingFile } from '../../src/index.js';
import { grammySignal } from './client.js';
import { telegramFailure } from './errors.js';
import type { TelegramFile, TelegramMessage } from './render.js';

/**
 * Files said on Telegram, read through the Bot API only: getFile gives the file's path, and the bytes
 * come from `<api_url>/file/bot<token>/<file_path>` (the configured API root, never another host, no
 * redirect followed). The token is in that URL: no error of a download names it.
 */

/** The Bot API lets a bot download files up to 20 MB (getFile refuses larger ones). */
export const DOWNLOAD_LIMIT = 20 * 1024 * 1024;
export const TOO_BIG_TO_DOWNLOAD = 'Telegram bots cannot download files over 20 MB';

/** A Telegram file path: relative segments of letters, digits, `_`, `.` and `-` (`photos/file_0.jpg`), none `.` or `..`. */
const FILE_PATH = /^[\w.-]+(\/[\w.-]+)*$/;

interface FileOf {
  file: TelegramFile;
  name: string;
  contentType: string;
}

/**
 * The file a message carries, with its name and type: a photo's largest size (`photo.jpg`, Telegram
 * re-encodes photos as JPEG), an animation (it also carries a `document`: one file, not two), a video,
 * a round video message, a voice message, an audio file, a document. Stickers are not files here: the
 * line says `[sticker 👍]` (a .webp, .tgs or .webm that other sides would show as a download).
 */
export function fileOf(message: TelegramMessage): FileOf | undefined {
  const photo = message.photo?.reduce((best, size) => (size.width * size.height > best.width * best.height ? size : best));
  if (photo) return { file: photo, name: 'photo.jpg', contentType: 'image/jpeg' };
  const named = (file: TelegramFile | undefined, name: string, type: string): FileOf | undefined =>
    file && { file, name: file.file_name?.trim() || name, contentType: file.mime_type?.trim() || type };
  return named(message.animation, 'animation.mp4', 'video/mp4')
    ?? named(message.video, 'video.mp4', 'video/mp4')
    ?? named(message.video_note, 'video-message.mp4', 'video/mp4')
    ?? named(message.voice, 'voice-message.ogg', 'audio/ogg')
    ?? named(message.audio, 'audio.mp3', 'audio/mpeg')
    ?? named(message.document, 'file', 'application/octet-stream');
}

/** The IncomingFile of a message's file, read through getFile; none when the message carries none. */
export function incomingFiles(message: TelegramMessage, bot: { api: () => Api; apiUrl: string; token: string }): IncomingFile[] {
  const found = fileOf(message);
  if (!found) return [];
  const { file, name, contentType } = found;
  return [{
    name, contentType,
    ...(file.file_size !== undefined ? { size: file.file_size } : {}),
    open: async (signal) => {
      // Declared over the limit: getFile would refuse it; the other sides are told why.
      if ((file.file_size ?? 0) > DOWNLOAD_LIMIT) throw new FileRefusedError(`${TOO_BIG_TO_DOWNLOAD} (this one is ${sizeInWords(file.file_size!)})`, 'too_big');
      let path: string | undefined;
      try {
        path = (await bot.api().getFile(file.file_id, grammySignal(signal))).file_path;
      } catch (error) {
        if (error instanceof GrammyError && /too big/i.test(error.description)) throw new FileRefusedError(TOO_BIG_TO_DOWNLOAD, 'too_big');
        throw new Error(`Telegram's getFile failed: ${telegramFailure(error, bot.token).reason}`);
      }
      if (path === undefined) throw new Error('Telegram gave no path for the file (it may have expired)');
      const url = downloadUrl(bot.apiUrl, bot.token, path);
      let response: Response;
      try {
        response = await fetch(url, { signal, redirect: 'error' });
      } catch (error) {
        // fetch's own errors do not name the URL, but their causes may: only the code is kept.
        const code = (error as { cause?: { code?: unknown } }).cause?.code;
        throw new Error(`the Telegram file download failed${typeof code === 'string' ? ` (${code})` : signal.aborted ? ' (aborted)' : ''}`);
      }
      if (!response.ok || !response.body) {
        await response.body?.cancel();
        throw new Error(`the Telegram file download failed: ${response.status} ${response.statusText}`);
      }
      return response.body;
    },
  }];
}

/**
 * Where a file's bytes are: under the configured API root, the path as getFile gave it. A path that
 * is not a plain relative one (a local Bot API server's absolute path, `..`, a URL) is refused: the
 * download never leaves `<api_url>/file/bot<token>/`.
 */
export function downloadUrl(apiUrl: string, token: string, filePath: string): string {
  if (!FILE_PATH.test(filePath) || filePath.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new Error('Telegram gave a file path the relay does not download from (not a relative path under the API root)');
  }
  const root = new URL(apiUrl.replace(/\/+$/, ''));
  const url = new URL(`${root.href.replace(/\/+$/, '')}/file/bot${token}/${filePath}`);
  if (url.origin !== root.origin) throw new Error('the Telegram file URL is not on the configured API root');
  return url.href;
}
