import { z } from 'zod';

/**
 * A Telegram chat as the relay names it: the chat's id (a group `-123456789`, a supergroup or channel
 * `-1001234567890`), alone (the whole chat) or with a forum topic's id after a slash (`-1001234567890/42`:
 * that topic only). Ids, not @usernames: a group has none, and a username can change hands.
 */
export const CHANNEL = /^-?\d{1,20}(\/\d{1,10})?$/;
const channel = z.string().trim().regex(CHANNEL, 'a Telegram chat id (-1001234567890), or a chat id and a forum topic id (-1001234567890/42)');

export const relayTelegramOptions = z.strictObject({
  /** The bot's token from @BotFather (`123456789:AA…`). */
  token: z.string().regex(/^\d{1,20}:[\w-]{20,}$/, 'a Telegram bot token from @BotFather (123456789:AA...)'),
  /** The Bot API's address (Telegram's, a local Bot API server's, or a fake's in tests). */
  api_url: z.string().regex(/^https?:\/\/\S+$/, 'an http(s) URL').default('https://api.telegram.org'),
  /** Chat subject or id → Telegram chat id (or chat id/topic id): each pair is a gateway of its own. May be empty when bots.yaml's `gateways:` names them. */
  chats: z.record(z.string().min(1), channel).default({}),
  /** How a relayed line shows in Telegram: {name} and {text} (plain text: nothing in it is formatting). */
  format: z.string().refine((value) => value.split('{text}').length === 2, 'a template with {text} exactly once').default('<{name}> {text}'),
  /** How a Telegram message shows in the chat: {name}, {text}. */
  incoming: z.string().refine((value) => value.includes('{text}'), 'a template containing {text}').default('<{name}> {text}'),
  /**
   * Sending pace (Telegram's own limits: about one message a second in a chat, 20 a minute in a group,
   * 30 a second in all): a bucket per chat and one for the bot, or `off` (a local Bot API server of your own).
   */
  rate: z.union([z.literal('off'), z.strictObject({
    per_second: z.number().positive().max(1000).default(30),
    chat_per_minute: z.number().positive().max(60_000).default(20),
    chat_burst: z.number().int().min(1).max(1000).default(3),
  })], { error: 'expected off or { per_second, chat_per_minute, chat_burst }' }).prefault({}),
  /** How long Telegram may hold one getUpdates open when nothing happens (its long poll), in seconds. */
  poll_timeout_s: z.number().int().min(0).max(50).default(30),
  /** At most this many lines wait for Telegram in each chat; past it, a line is refused loudly. */
  queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /** How long one request may take (getUpdates gets its poll_timeout_s more). */
  request_timeout_ms: z.number().int().min(100).max(300_000).default(15_000),
});

export type RelayTelegramOptions = z.output<typeof relayTelegramOptions>;

/** A channel's chat id and its forum topic, if it names one. */
export function parseChannel(channel: string): { chatId: string; topic?: number } {
  const slash = channel.indexOf('/');
  return slash < 0 ? { chatId: channel } : { chatId: channel.slice(0, slash), topic: Number(channel.slice(slash + 1)) };
}
