import { z } from 'zod';
import type { PluginWarning } from '../../src/index.js';

/**
 * A channel of the HTTP endpoint: a name the user picks (`ops`). It is part of URLs and of file names
 * under the plugin's state, so it is kept to letters, digits, `.`, `_` and `-`.
 */
export const CHANNEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const channelName = z.string().regex(CHANNEL_NAME, 'a channel name: letters, digits, ".", "_" or "-", at most 64, starting with a letter or digit');

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration as milliseconds or as `500ms`, `30s`, `15m`, `24h`, `7d`. */
const duration = z.union([
  z.number().int().min(0),
  z.string().regex(/^\d+(ms|s|m|h|d)$/, 'a duration such as 30s, 15m, 24h or 7d (or a number of milliseconds)')
    .transform((text) => Number(/^\d+/.exec(text)![0]) * UNITS[/[a-z]+$/.exec(text)![0]]!),
]);

const SIZE_UNITS: Record<string, number> = { kb: 1_000, mb: 1_000_000, gb: 1_000_000_000 };

/** A size as bytes or as `512KB`, `25MB`, `1GB` (decimal, as platforms state their limits). */
const size = z.union([
  z.number().int().min(1),
  z.string().regex(/^\d+ ?(KB|MB|GB)$/i, 'a size such as 512KB, 25MB or 1GB (or a number of bytes)')
    .transform((text) => Number(/^\d+/.exec(text)![0]) * SIZE_UNITS[/[a-z]+$/i.exec(text)![0].toLowerCase()]!),
], { error: 'a size: a number of bytes, or such as 512KB, 25MB or 1GB' });

const secret = (what: string) => z.string().min(16, `${what}: at least 16 characters (make one with \`openssl rand -hex 32\`)`);

/** Who may call the API: a bearer token or an HMAC secret, optionally limited to some channels. */
const client = z.union([
  z.strictObject({ name: z.string().min(1).max(64), token: secret('token'), channels: z.array(channelName).optional() }),
  z.strictObject({ name: z.string().min(1).max(64), hmac_secret: secret('hmac_secret'), channels: z.array(channelName).optional() }),
]);

const webhook = z.strictObject({
  url: z.string().regex(/^https?:\/\/\S+$/, 'an http(s) URL'),
  /** Signs every POST (X-Groupwire-Signature), so the receiver knows it came from this bot. */
  secret: secret('secret'),
  /** Only lines of these channels (default: every channel). */
  channels: z.array(channelName).optional(),
  timeout_ms: z.number().int().min(100).max(300_000).default(10_000),
  /** A line not delivered for this long goes to the webhook's dead-letter file. */
  dead_letter_after: duration.default(86_400_000),
});

export const httpApiOptions = z.strictObject({
  listen: z.strictObject({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65_535).default(8088),
  }).default({ host: '127.0.0.1', port: 8088 }),
  /** Serve HTTPS: PEM files, relative to bots.yaml. */
  tls: z.strictObject({ cert_file: z.string().min(1), key_file: z.string().min(1) }).optional(),
  /** Chat subject or id → channel name: each pair is a gateway of its own. May be empty when bots.yaml's `gateways:` names them (`http: ops`). */
  channels: z.record(z.string().min(1), channelName).default({}),
  clients: z.array(client).default([]).superRefine((clients, ctx) => {
    const names = clients.map((c) => c.name);
    const twice = names.find((name, index) => names.indexOf(name) !== index);
    if (twice !== undefined) ctx.addIssue({ code: 'custom', message: `two clients named ${twice}` });
  }),
  webhooks: z.array(webhook).default([]).superRefine((webhooks, ctx) => {
    // A webhook's queue and dead-letter files are named after its URL.
    const urls = webhooks.map((w) => w.url);
    if (urls.some((url, index) => urls.indexOf(url) !== index)) ctx.addIssue({ code: 'custom', message: 'two webhooks with the same url: make it one with both channels' });
  }),
  /**
   * The speaker's name of a posted message, as the gateways show it everywhere ({name} of `incoming`, `*
   * name` of an action, quotes, the other platforms): {username} (the POST's, or the client's name) and
   * {client}. The default marks it as the API's, in front, where a name holding `> ` cannot push it out
   * of sight (#31 item 11).
   */
  speaker_name: z.string().max(64, 'at most 64 characters')
    .refine((value) => value.includes('{username}'), 'a template containing {username} (and, if you like, {client})')
    .refine((value) => !/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(value), 'one line, without control characters')
    .default('[api] {username}'),
  /** How a posted message shows in the chat: {name}, {text}. */
  incoming: z.string().refine((value) => value.includes('{text}'), 'a template containing {text}').default('<{name}> {text}'),
  /** The longest text a POST may carry, in characters. */
  text_max: z.number().int().min(1).max(100_000).default(4_000),
  /** The largest file a multipart POST may carry (each file); past it the POST gets 413. */
  file_max: size.pipe(z.number().max(2 ** 40, 'at most 1 TB')).default(25_000_000),
  /**
   * Where clients reach this API (`https://api.example.com`, no trailing path needed): the start of the
   * download URLs of files in payloads when the media store has no public link. Default: the address listened on.
   */
  public_url: z.string().regex(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, 'an http(s) URL without query or fragment').optional(),
  /** How long an Idempotency-Key's first answer is replayed. */
  idempotency_ttl: duration.default(86_400_000),
  /** Posted messages waiting for the chat, per channel; past it a POST gets 503. */
  intake_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /** Lines waiting for one webhook; past it a line is dropped for that webhook (logged, counted). */
  webhook_queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /** Lines kept per channel for the event stream and polling (resumable by id). */
  stream_keep: z.number().int().min(1).max(1_000_000).default(10_000),
  keepalive_ms: z.number().int().min(100).max(300_000).default(15_000),
  /** Webhook retries: the first pause, doubling up to the cap. */
  retry_min_ms: z.number().int().min(1).max(300_000).default(1_000),
  retry_max_ms: z.number().int().min(1).max(3_600_000).default(300_000),
});

export type HttpApiOptions = z.output<typeof httpApiOptions>;
export type ClientOptions = HttpApiOptions['clients'][number];
export type WebhookOptions = HttpApiOptions['webhooks'][number];

/** Whether a listen host is on this machine only: localhost, ::1 or 127.x.x.x. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/**
 * What `groupwire check` warns about (and the plugin logs at start): the API listening off loopback over
 * plain HTTP, where tokens, signatures and messages cross the network in clear (#31 item 6).
 */
export function httpApiWarnings(options: HttpApiOptions): PluginWarning[] {
  if (options.tls !== undefined || isLoopbackHost(options.listen.host)) return [];
  return [{
    path: ['listen', 'host'],
    message: `http-api listens on ${options.listen.host} over plain HTTP: tokens, signatures and messages cross the network in clear. `
      + 'Give tls: { cert_file, key_file }, put a TLS proxy in front and listen on 127.0.0.1, or listen on 127.0.0.1 only',
  }];
}
