import { z } from 'zod';

/** A channel's id (26 lowercase letters and digits, "View Info" in the channel's menu), or `team/channel` by their URL names. */
export const CHANNEL_ID = /^[a-z0-9]{26}$/;
export const TEAM_CHANNEL = /^[a-z0-9][a-z0-9_-]*\/[a-z0-9][a-z0-9_-]*$/;
const channel = z.string().trim().refine((value) => CHANNEL_ID.test(value) || TEAM_CHANNEL.test(value),
  'a Mattermost channel id (26 lowercase letters and digits) or team/channel by their URL names (e.g. acme/town-square)');

export const relayMattermostOptions = z.strictObject({
  /** The server's address, as in the browser: https://chat.example.org (a local fake's in tests). */
  server_url: z.string().regex(/^https?:\/\/[^\s/]+(\/[^\s]*)?$/, 'an http(s) URL, e.g. https://chat.example.org').transform((url) => url.replace(/\/+$/, '')),
  /** A bot account's access token, or a user's personal access token (Profile → Security → Personal Access Tokens). */
  token: z.string().trim().min(20, 'a Mattermost access token (26 characters)'),
  /** Chat subject or id → channel id or `team/channel`: each pair is a gateway of its own. May be empty when bots.yaml's `gateways:` names them. */
  channels: z.record(z.string().min(1), channel).default({}),
  /**
   * `override`: each line is posted under its speaker's name (`props.override_username`), the text
   * alone, where the server lets integrations override names (checked at start); elsewhere the bot
   * posts `format`. `bot`: the bot always posts `format`.
   */
  post_as: z.enum(['override', 'bot']).default('override'),
  /** An `override` post's icon: an https URL template with {name}, {id} and {platform} (each URL-encoded); the bot's own icon without. */
  icon_url: z.string().regex(/^https:\/\/\S+$/, 'an https URL template, e.g. https://avatars.example.org/{platform}/{id}.png').optional(),
  /** How a line shows when the bot posts it: {name} and {text} (the name in bold by default). */
  format: z.string().refine((value) => value.split('{text}').length === 2, 'a template with {text} exactly once').default('**{name}**: {text}'),
  /** How a Mattermost post shows in the chat: {name}, {text}. */
  incoming: z.string().refine((value) => value.includes('{text}'), 'a template containing {text}').default('<{name}> {text}'),
  /** Which name of a Mattermost user the chat shows: the user name (Mattermost's default), the nickname or the full name (each falling back to the user name). */
  show_name: z.enum(['username', 'nickname', 'full_name']).default('username'),
  /** Posts of other bot accounts (`props.from_bot`) are relayed unless this is true. */
  ignore_bots: z.boolean().default(false),
  /** At most this many posts wait for Mattermost; past it, a post is refused loudly. */
  queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * The largest file uploaded, in bytes; unset: the server's MaxFileSize (its client config; 100 MB when
   * it does not say). A larger file goes as its link line.
   */
  max_file_size: z.number().int().min(1).max(10_000_000_000).optional(),
  /** How long one REST call may take (an upload: five minutes at least). */
  request_timeout_ms: z.number().int().min(100).max(300_000).default(15_000),
});

export type RelayMattermostOptions = z.output<typeof relayMattermostOptions>;
