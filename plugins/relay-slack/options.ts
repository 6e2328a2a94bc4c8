import { z } from 'zod';

/** A Slack conversation id (public C…, private G…, DM D…), as opposed to a channel name. */
export const CHANNEL_ID = /^[CGD][A-Z0-9]{6,}$/;

/** A channel id, or a name (with `#` it is always a name: `#GENERAL` is not taken for an id). */
const channelRef = z.string().trim().refine(
  (value) => CHANNEL_ID.test(value) || /^#?[\p{Ll}\p{Lu}\p{N}][\p{Ll}\p{Lu}\p{N}._-]{0,79}$/u.test(value),
  'a Slack channel id (C0123456789) or name (#general)',
);

const icon = z.string().refine(
  (value) => /^https?:\/\/\S+$/.test(value) || /^:[\w+-]+:$/.test(value),
  'an image URL (https://...) or an emoji (:bust_in_silhouette:)',
);

const display = z.strictObject({
  /** Slack's `username` of a relayed post: {name} (display name), {user} (user name), {chat}; "" keeps the app's name. */
  username: z.string().max(80).default('{name}'),
  /** The member's profile photo as the post's icon, when there is one. */
  avatars: z.boolean().default(true),
  /** The icon of members without a photo (or of every post when avatars is false): a URL or :emoji:. */
  default_icon: icon.optional(),
  /** Also start the text with *name*: (for apps without chat:write.customize, where username is ignored). */
  name_in_text: z.boolean().default(false),
  /** How a Slack message shows in the chat: {name}, {text}, {channel}. */
  incoming: z.string().refine((value) => value.includes('{text}'), 'a template containing {text}').default('<{name}> {text}'),
});

export const relaySlackOptions = z.strictObject({
  /** The bot token (xoxb-…): chat.postMessage, users.info, conversations.info, auth.test. */
  token: z.string().regex(/^xoxb-\S+$/, 'a Slack bot token (xoxb-...)'),
  /** The app-level token (xapp-…) with connections:write, for Socket Mode. */
  app_token: z.string().regex(/^xapp-\S+$/, 'a Slack app-level token (xapp-...) with the connections:write scope'),
  /** The Web API's address: Slack's, or a proxy's, or a local Slack's. */
  api_url: z.string().regex(/^https?:\/\/\S+$/, 'an http(s) URL').default('https://slack.com/api/'),
  /**
   * Chat subject or id → Slack channel id or name: each pair is a gateway of its own. May be empty when
   * bots.yaml's `gateways:` names this relay's channels instead.
   */
  channels: z.record(z.string().min(1), channelRef).default({}),
  display: display.prefault({}),
  /** Let Slack unfurl (preview) links in relayed posts. */
  unfurl: z.boolean().default(false),
  /** At most this many posts wait for Slack; past it, a post is refused loudly (never dropped silently). */
  queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * Reading back what channels said while the relay was away (conversations.history, .replies): at
   * start, and after a reconnect that followed a gap of `after_gap_seconds` or more. Slack allows most
   * apps 50 calls a minute (Tier 3); an app made since 29 May 2025 for distribution outside the
   * Marketplace only 1 a minute of 15 messages: `requests_per_minute: 1, page_size: 15`.
   */
  catch_up: z.strictObject({
    enabled: z.boolean().default(true),
    /** Slack retries an event three times, the last about 5 minutes after the first try: a shorter gap relies on those. 0: after every reconnect. */
    after_gap_seconds: z.number().int().min(0).max(86_400).default(300),
    requests_per_minute: z.number().min(0.1).max(600).default(50),
    page_size: z.number().int().min(1).max(999).default(200),
  }).prefault({}),
  /**
   * Files of gateway lines up to this many bytes are uploaded into Slack (the external upload flow);
   * a larger one shows as its link (the media store's). Slack takes files up to 1 GB.
   */
  max_file_size: z.number().int().min(1).max(1_000_000_000).default(1_000_000_000),
  /** How long one Web API call may take. */
  request_timeout_ms: z.number().int().min(100).max(300_000).default(15_000),
});

export type RelaySlackOptions = z.output<typeof relaySlackOptions>;
export type DisplayOptions = RelaySlackOptions['display'];
