import { z } from 'zod';

/**
 * A room as the relay names it: its id (17 letters and digits, or `GENERAL` for #general; Room info →
 * the URL's last part), or its name after a `#` (`#general`, a private group's `#team-core`), looked up
 * at start with rooms.info.
 */
export const ROOM_ID = /^[A-Za-z0-9]{5,40}$/;
export const ROOM_NAME = /^#[^\s#@]{1,100}$/;
const room = z.string().trim().refine((value) => ROOM_ID.test(value) || ROOM_NAME.test(value),
  'a Rocket.Chat room id (e.g. GENERAL or 17 letters and digits) or #name (e.g. #general)');

export const relayRocketchatOptions = z.strictObject({
  /** The server's address, as in the browser: https://chat.example.org (a local fake's in tests). */
  server_url: z.string().regex(/^https?:\/\/[^\s/]+(\/[^\s]*)?$/, 'an http(s) URL, e.g. https://chat.example.org').transform((url) => url.replace(/\/+$/, '')),
  /** The bot user's id, with its personal access token (My Account → Personal Access Tokens shows both). */
  user_id: z.string().trim().regex(/^[A-Za-z0-9]{5,40}$/, 'the bot user\'s id (shown with its personal access token)').optional(),
  /** The bot user's personal access token. */
  token: z.string().trim().min(20, 'a Rocket.Chat personal access token (43 characters)').optional(),
  /** Instead of a token: the bot user's name and password (the relay logs in; a server requiring 2FA for logins needs a token). */
  username: z.string().trim().min(1).optional(),
  password: z.string().min(1).optional(),
  /** Chat subject or id → room id or `#name`: each pair is a gateway of its own. May be empty when bots.yaml's `gateways:` names them. */
  rooms: z.record(z.string().min(1), room).default({}),
  /**
   * `alias`: each line is sent under its speaker's name (the message's `alias`), the text alone, where
   * the bot has the `message-impersonate` permission (checked at start); elsewhere the bot sends
   * `format`. `bot`: the bot always sends `format`.
   */
  post_as: z.enum(['alias', 'bot']).default('alias'),
  /** An `alias` message's avatar: an https URL template with {name}, {id} and {platform} (each URL-encoded). */
  avatar_url: z.string().regex(/^https:\/\/\S+$/, 'an https URL template, e.g. https://avatars.example.org/{platform}/{id}.png').optional(),
  /** An `alias` message's avatar as an emoji instead (`:speech_balloon:`); avatar_url wins when both are set. */
  emoji: z.string().regex(/^:[\w+-]{1,64}:$/, 'an emoji name between colons, e.g. :speech_balloon:').optional(),
  /** How a line shows when the bot sends it: {name} and {text} (the name in bold by default). */
  format: z.string().refine((value) => value.split('{text}').length === 2, 'a template with {text} exactly once').default('**{name}**: {text}'),
  /** How a Rocket.Chat message shows in the chat: {name}, {text}. */
  incoming: z.string().refine((value) => value.includes('{text}'), 'a template containing {text}').default('<{name}> {text}'),
  /** Which name of a Rocket.Chat user the chat shows: the user name, or the full name (falling back to the user name). */
  show_name: z.enum(['username', 'name']).default('username'),
  /** Messages of integrations and bots (the message's `bot` field) are relayed unless this is true. */
  ignore_bots: z.boolean().default(false),
  /** At most this many messages wait for Rocket.Chat; past it, a line is refused loudly. */
  queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * Files larger than this many bytes go to Rocket.Chat as their link line, not uploaded. Default: what
   * the server says (the public setting FileUpload_MaxFileSize; Rocket.Chat's default is 100 MB).
   */
  max_upload_bytes: z.number().int().min(0).optional(),
  /** How long one REST call may take. */
  request_timeout_ms: z.number().int().min(100).max(300_000).default(15_000),
}).superRefine((options, context) => {
  const byToken = options.user_id !== undefined || options.token !== undefined;
  const byLogin = options.username !== undefined || options.password !== undefined;
  if (byToken && byLogin) {
    context.addIssue({ code: 'custom', path: ['username'], message: 'either user_id and token, or username and password, not both' });
  } else if (byToken) {
    if (options.user_id === undefined) context.addIssue({ code: 'custom', path: ['user_id'], message: 'user_id is needed with token (the bot user\'s id, shown with the token)' });
    if (options.token === undefined) context.addIssue({ code: 'custom', path: ['token'], message: 'token is needed with user_id (a personal access token)' });
  } else if (byLogin) {
    if (options.username === undefined) context.addIssue({ code: 'custom', path: ['username'], message: 'username is needed with password' });
    if (options.password === undefined) context.addIssue({ code: 'custom', path: ['password'], message: 'password is needed with username' });
  } else {
    context.addIssue({ code: 'custom', path: ['token'], message: 'the bot\'s credentials: user_id and token (a personal access token), or username and password' });
  }
});

export type RelayRocketchatOptions = z.output<typeof relayRocketchatOptions>;
