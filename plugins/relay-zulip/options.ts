import { z } from 'zod';

/**
 * A Zulip side as the relay names it: `stream/topic` (that topic of the stream: the default form, one
 * conversation per gateway) or `stream` alone (the whole stream: its topics are the gateway's threads).
 * The stream by its name (up to 60 characters, no `/`: a name with one cannot be written here), the
 * topic by its name (up to 60 characters; Zulip compares topics without regard to case).
 */
export const CHANNEL = /^[^/\s][^/]{0,59}(\/[^\n]{1,60})?$/;
const channel = z.string().trim().refine((value) => CHANNEL.test(value) && !/\s$/.test(value.split('/')[0]!),
  'a Zulip stream and topic (general/lobby), or a stream alone (general) whose topics are the gateway\'s threads');

export const relayZulipOptions = z.strictObject({
  /** The organisation's address, as in the browser: https://chat.example.org (a local fake's in tests). */
  server_url: z.string().regex(/^https?:\/\/[^\s/]+(\/[^\s]*)?$/, 'an http(s) URL, e.g. https://example.zulipchat.com').transform((url) => url.replace(/\/+$/, '')),
  /** The bot's email (Personal settings → Bots: the bot's "BOT EMAIL", e.g. groupwire-bot@example.zulipchat.com). */
  email: z.string().trim().regex(/^[^\s@]+@[^\s@]+$/, 'the bot\'s email, as Zulip shows it under Personal settings → Bots'),
  /** The bot's API key (the same page; 32 letters and digits). */
  api_key: z.string().trim().min(16, 'the bot\'s API key (32 letters and digits)'),
  /** Chat subject or id → `stream/topic` or `stream`: each pair is a gateway of its own. May be empty when bots.yaml's `gateways:` names them. */
  streams: z.record(z.string().min(1), channel).default({}),
  /** A whole-stream side: the topic a line that answers no topic goes to. */
  topic: z.string().trim().min(1).max(60).default('chat'),
  /** How a line shows on Zulip (the bot posts it: a Zulip bot cannot post as someone else): {name} and {text}. */
  format: z.string().refine((value) => value.split('{text}').length === 2, 'a template with {text} exactly once').default('**{name}**: {text}'),
  /** How a Zulip message shows in the chat: {name}, {text}. */
  incoming: z.string().refine((value) => value.includes('{text}'), 'a template containing {text}').default('<{name}> {text}'),
  /** At most this many lines wait for Zulip; past it, a line is refused loudly. */
  queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * Files larger than this many bytes go to Zulip as their link line, not uploaded. Default: what the
   * server says (register's `max_file_upload_size_mib`; Zulip's default is 25 MiB).
   */
  max_upload_bytes: z.number().int().min(0).optional(),
  /** How long one call may take (the event queue's long poll gets 90 s more: Zulip answers it within about 50 s). */
  request_timeout_ms: z.number().int().min(100).max(300_000).default(15_000),
});

export type RelayZulipOptions = z.output<typeof relayZulipOptions>;

/** A side's stream and, unless it is the whole stream, its topic. */
export function parseSide(side: string): { stream: string; topic?: string } {
  const slash = side.indexOf('/');
  return slash < 0 ? { stream: side } : { stream: side.slice(0, slash), topic: side.slice(slash + 1) };
}
