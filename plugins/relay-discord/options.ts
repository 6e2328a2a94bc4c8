import { z } from 'zod';

/** A Discord snowflake: a channel id as Discord's "Copy Channel ID" gives it. */
const snowflake = z.string().regex(/^\d{15,25}$/, 'a Discord channel id (a number of 17 to 20 digits, "Copy Channel ID")');

export const relayDiscordOptions = z.strictObject({
  /** The bot's token (Developer Portal → Bot → Reset Token). */
  token: z.string().min(20, 'a Discord bot token'),
  /** The REST API's address (Discord's, or a local fake's); the gateway's comes from GET /gateway/bot. */
  api_url: z.string().regex(/^https?:\/\/\S+$/, 'an http(s) URL').default('https://discord.com/api'),
  /** Chat subject or id → Discord channel id: each pair is a gateway of its own. May be empty when bots.yaml's `gateways:` names them. */
  channels: z.record(z.string().min(1), snowflake).default({}),
  /**
   * `webhook`: each line is posted through the channel's webhook under its speaker's name (and avatar),
   * the text alone; the bot needs Manage Webhooks, and a channel where it has not got it falls back to
   * `bot`. `bot`: the bot posts every line as `format` renders it.
   */
  post_as: z.enum(['webhook', 'bot']).default('webhook'),
  /** The name of the webhook the relay finds or makes in each channel. */
  webhook_name: z.string().min(1).max(80).refine((name) => !/discord|clyde/i.test(name), 'a name without "discord" or "clyde" (Discord refuses those)').default('groupwire'),
  /** A webhook post's username: {name} (the speaker's) and {platform} (chat, irc, slack, ...). */
  username: z.string().refine((value) => value.includes('{name}'), 'a template containing {name}').default('{name}'),
  /** A webhook post's avatar: an https URL template with {name}, {id} and {platform} (each URL-encoded); Discord's default avatar without. */
  avatar_url: z.string().regex(/^https:\/\/\S+$/, 'an https URL template, e.g. https://avatars.example.org/{platform}/{id}.png').optional(),
  /** How a line shows when the bot posts it: {name} and {text} (the name in bold by default). */
  format: z.string().refine((value) => value.split('{text}').length === 2, 'a template with {text} exactly once').default('**{name}**: {text}'),
  /** How a Discord message shows in the chat: {name}, {text}. */
  incoming: z.string().refine((value) => value.includes('{text}'), 'a template containing {text}').default('<{name}> {text}'),
  /** At most this many posts wait for Discord; past it, a post is refused loudly. */
  queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * Files of a gateway line go up with its post while together they stay within this many bytes
   * (Discord's upload limit per message: 10 MiB for bots, more in boosted servers); the others show
   * as their links (the media store's).
   */
  max_file_size: z.number().int().min(1).max(500 * 1024 * 1024).default(10 * 1024 * 1024),
  /** How long one REST call may take. */
  request_timeout_ms: z.number().int().min(100).max(300_000).default(15_000),
});

export type RelayDiscordOptions = z.output<typeof relayDiscordOptions>;
