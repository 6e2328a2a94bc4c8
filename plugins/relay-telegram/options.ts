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
  /**
   * Updates by webhook instead of getUpdates: Telegram POSTs each one to `url` (public HTTPS, a TLS
   * proxy in front of `listen`), with `secret_token` in a header the relay checks. Unset: the relay polls.
   */
  webhook: z.strictObject({
    url: z.string().regex(/^https:\/\/\S+$/, 'the public https URL Telegram posts to (a TLS proxy in front of listen)'),
    listen: z.strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(1).max(65_535),
    }),
    /** 16 to 256 of A-Z, a-z, 0-9, _ and - (Telegram takes 1 to 256; a short one is guessed): Telegram sends it with each update. */
    secret_token: z.string().regex(/^[\w-]{16,256}$/, '16 to 256 of A-Z, a-z, 0-9, _ and -'),
  }).optional(),
  /** How long Telegram may hold one getUpdates open when nothing happens (its long poll), in seconds. */
  poll_timeout_s: z.number().int().min(0).max(50).default(30),
  /** At most this many lines wait for Telegram in each chat; past it, a line is refused loudly. */
  queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * The largest file sent as a document, in bytes: the Bot API's 50 MB by default; up to 2,000 MB with
   * a local Bot API server. A larger file goes as its link line (an image over sendPhoto's 10 MB goes as a document).
   */
  max_file_size: z.number().int().min(1).max(2_000_000_000).default(50_000_000),
  /** How long one request may take (getUpdates gets its poll_timeout_s more). */
  request_timeout_ms: z.number().int().min(100).max(300_000).default(15_000),
});

export type RelayTelegramOptions = z.output<typeof relayTelegramOptions>;

/** Whether a listen host is on this machine only: localhost, ::1 or 127.x.x.x. */
function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** What `groupwire check` warns about: a webhook listener off loopback serves plain HTTP to the network (the secret and the updates in clear). */
export function relayTelegramWarnings(options: RelayTelegramOptions): Array<{ path: Array<string | number>; message: string }> {
  if (!options.webhook || isLoopbackHost(options.webhook.listen.host)) return [];
  return [{
    path: ['webhook', 'listen', 'host'],
    message: `relay-telegram's webhook listens on ${options.webhook.listen.host} over plain HTTP: the secret token and the updates cross the network in clear. `
      + 'Put a TLS proxy in front and listen on 127.0.0.1',
  }];
}

/** A channel's chat id and its forum topic, if it names one. */
export function parseChannel(channel: string): { chatId: string; topic?: number } {
  const slash = channel.indexOf('/');
  return slash < 0 ? { chatId: channel } : { chatId: channel.slice(0, slash), topic: Number(channel.slice(slash + 1)) };
}
