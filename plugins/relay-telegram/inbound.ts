import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Api } from 'grammy';
import { attributedLines, oneLineName, receiveUntilTaken, type GatewayPort, type IncomingMessage } from '../../src/index.js';
import { incomingFiles } from './files-in.js';
import { plainFromTelegram, speakerOf, type TelegramMessage } from './render.js';

/** The updates the relay asks for (getUpdates' allowed_updates): messages and their edits, in groups and channels. */
export const ALLOWED_UPDATES = ['message', 'edited_message', 'channel_post', 'edited_channel_post'] as const;

/** A Bot API Update, the kinds the relay asks for. */
export interface TelegramUpdate {
  update_id: number;
  message?: TelegramMessage;
  edited_message?: TelegramMessage;
  channel_post?: TelegramMessage;
  edited_channel_post?: TelegramMessage;
}

export interface InboundCounters {
  received: number;
  receive_retries: number;
}

const RETRY_MS = 2_000;

/**
 * Updates to the gateways: messages (and channel posts) as lines, their edits as edits, each chat's in
 * the order Telegram numbered them, the chats of a batch side by side. A forum topic's messages go to
 * the channel of that topic when bots.yaml names it, else to the channel of the whole chat. The bot's
 * own posts never come back (Telegram does not send a bot its own messages, and the relay skips its id
 * anyway); other bots' messages do not come either (Telegram does not give bots each other's in groups).
 */
export class TelegramInbound {
  constructor(
    private readonly options: {
      gateway: GatewayPort;
      log: Logger;
      counters: InboundCounters;
      incoming: string;
      /** The bot's user id (getMe). */
      self: () => number | undefined;
      /** The relay's channels: a chat id, or a chat id and a forum topic. */
      has: (channel: string) => boolean;
      /** A message seen in a forum topic: a reply to it from another side goes into that topic. */
      noteTopic: (chatId: string, messageId: string, topic: number) => void;
      /** The Bot API a file said on Telegram is read through (getFile, then `<api_url>/file/bot<token>/…`). */
      bot: { api: () => Api; apiUrl: string; token: string };
      stopping: AbortSignal;
    },
  ) {}

  /** A batch of getUpdates: resolves once each line of it was handed to its gateways (durably), or the relay stops. */
  async batch(updates: readonly TelegramUpdate[]): Promise<void> {
    const byChat = new Map<number, Array<{ message: TelegramMessage; edit: boolean }>>();
    for (const update of updates) {
      const message = update.message ?? update.channel_post ?? update.edited_message ?? update.edited_channel_post;
      if (!message) continue;
      const edit = update.edited_message !== undefined || update.edited_channel_post !== undefined;
      byChat.set(message.chat.id, [...(byChat.get(message.chat.id) ?? []), { message, edit }]);
    }
    await Promise.all([...byChat.values()].map(async (messages) => {
      for (const { message, edit } of messages) {
        if (this.options.stopping.aborted) return;
        await this.take(message, edit);
      }
    }));
  }

  /** The channel a message belongs to: its topic's when that is one of the relay's, else its chat's (undefined: not the relay's). */
  private channelOf(message: TelegramMessage): string | undefined {
    const chatId = String(message.chat.id);
    const topic = message.is_topic_message ? message.message_thread_id : undefined;
    if (topic !== undefined && this.options.has(`${chatId}/${topic}`)) return `${chatId}/${topic}`;
    return this.options.has(chatId) ? chatId : undefined;
  }

  private async take(message: TelegramMessage, edit: boolean): Promise<void> {
    if (message.migrate_to_chat_id !== undefined && this.options.has(String(message.chat.id))) {
      this.options.log.error({ chat: message.chat.id, migrate_to_chat_id: message.migrate_to_chat_id },
        'the Telegram group became a supergroup with a new chat id: write the new id in bots.yaml (nothing more comes from the old one)');
      return;
    }
    const channel = this.channelOf(message);
    if (channel === undefined) return;
    if (message.from !== undefined && message.from.id === this.options.self()) return;
    const chatId = String(message.chat.id);
    const topic = message.is_topic_message ? message.message_thread_id : undefined;
    if (topic !== undefined) this.options.noteTopic(chatId, String(message.message_id), topic);
    const text = plainFromTelegram(message);
    // A file without a caption is still a line; an edit only ever changes the caption.
    const files = edit ? [] : incomingFiles(message, this.options.bot);
    if (text === undefined || (text.trim() === '' && files.length === 0)) return;
    const speaker = { platform: 'telegram', ...speakerOf(message) };
    if (edit) {
      // edit_date is in seconds: two edits within one are told apart by their text (the same update read twice has the same).
      const revision = `${message.edit_date ?? message.date}:${createHash('sha256').update(text).digest('base64url').slice(0, 12)}`;
      await this.receive(channel, { kind: 'edit', text, nativeId: String(message.message_id), revision, speaker });
      return;
    }
    // In a forum topic every message answers the topic's first message unless it answers another: that is the topic, not a reply.
    const parent = message.reply_to_message?.message_id;
    const replyTo = parent !== undefined && !(topic !== undefined && parent === topic) ? String(parent) : undefined;
    const line: IncomingMessage = {
      kind: 'message', text, nativeId: String(message.message_id), time: new Date(message.date * 1000).toISOString(), speaker,
      ...(replyTo !== undefined ? { replyTo } : {}),
      ...(files.length > 0 ? { files } : {}),
      // A file alone: the gateway shows its line with the speaker (fileLines).
      ...(text.trim() !== '' ? { chatText: attributedLines(text, (part) => this.options.incoming.replaceAll('{name}', () => oneLineName(speaker.name)).replace('{text}', () => part)) } : {}),
    };
    await this.receive(channel, line);
    this.options.counters.received += 1;
  }

  /** Hands one line to the gateway; a chat that will not take it now is tried again until it does (or the relay stops). */
  private async receive(channel: string, line: IncomingMessage): Promise<void> {
    try {
      await receiveUntilTaken(this.options.gateway, channel, line, {
        stopping: this.options.stopping, retryMs: RETRY_MS, onRetry: () => (this.options.counters.receive_retries += 1),
      });
    } catch (error) {
      if (this.options.stopping.aborted) return;
      throw error;
    }
  }
}
