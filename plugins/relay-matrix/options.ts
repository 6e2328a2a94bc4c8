import { z } from 'zod';

/** A room as Matrix names it: its id (`!abc:example.org`; room version 12 ids have no server part) or an alias (`#general:example.org`). */
export const ROOM = /^(![^:\s]+(:\S+)?|#[^:\s]+:\S+)$/;
const room = z.string().trim().regex(ROOM, 'a Matrix room id (!abc:example.org) or alias (#general:example.org)');

export const relayMatrixOptions = z.strictObject({
  /** The homeserver's client-server API address (https://matrix.example.org; a local fake's in tests). */
  homeserver: z.string().regex(/^https?:\/\/\S+$/, 'an http(s) URL'),
  /** A token of the bot's account (Element: Settings → Help & About → Access Token), with `user_id`. */
  access_token: z.string().min(8, 'a Matrix access token').optional(),
  /** The account the token belongs to: `@bot:example.org`. */
  user_id: z.string().regex(/^@[^:\s]+:\S+$/, 'a Matrix user id (@bot:example.org)').optional(),
  /** Or a password login: the account's user name (localpart or full id) and password; the token is kept. */
  user: z.string().min(1).optional(),
  password: z.string().min(1).optional(),
  /** Chat subject or id → room id or alias: each pair is a gateway of its own. May be empty when bots.yaml's `gateways:` names rooms. */
  rooms: z.record(z.string().min(1), room).default({}),
  /** Accept an invite to a room of `rooms` (invites to any other room are ignored). */
  auto_join_invites: z.boolean().default(true),
  /** m.notice by default: bots conventionally do not react to notices, so other bots do not answer relayed lines. */
  msgtype: z.enum(['m.text', 'm.notice']).default('m.notice'),
  /** How a relayed line shows in the room: {name} and {text} (the name is bold in the HTML body). */
  format: z.string().refine((value) => value.split('{text}').length === 2, 'a template with {text} exactly once').default('{name}: {text}'),
  /** How a Matrix message shows in the chat: {name}, {text}. */
  incoming: z.string().refine((value) => value.includes('{text}'), 'a template containing {text}').default('<{name}> {text}'),
  /**
   * The largest file (bytes) uploaded to the homeserver; larger ones go as their link line. The
   * homeserver's own limit (m.upload.size of its media config) applies too, whichever is lower.
   */
  max_file_size: z.number().int().min(1).optional(),
  /** At most this many posts wait for the homeserver; past it, a post is refused loudly. */
  queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /** How long one request may take (the /sync long poll gets 30 s more). */
  request_timeout_ms: z.number().int().min(100).max(300_000).default(15_000),
}).superRefine((options, ctx) => {
  const token = options.access_token !== undefined || options.user_id !== undefined;
  const password = options.user !== undefined || options.password !== undefined;
  if (token === password) {
    ctx.addIssue({ code: 'custom', message: 'either access_token with user_id, or user with password' });
  } else if (token && (options.access_token === undefined || options.user_id === undefined)) {
    ctx.addIssue({ code: 'custom', message: 'access_token and user_id go together', path: [options.access_token === undefined ? 'access_token' : 'user_id'] });
  } else if (password && (options.user === undefined || options.password === undefined)) {
    ctx.addIssue({ code: 'custom', message: 'user and password go together', path: [options.user === undefined ? 'user' : 'password'] });
  }
});

export type RelayMatrixOptions = z.output<typeof relayMatrixOptions>;
