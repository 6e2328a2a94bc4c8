import { z } from 'zod';

/**
 * The relay's `with:` options in bots.yaml. Everything that ends up inside an IRC command (channel,
 * nick, user name, real name, keys) is checked here so that no option can carry a space, comma or
 * control character into a command line.
 */

const CHANNEL = /^[#&+!][^\s,:\x00-\x1f\x7f]{1,199}$/;
const NICK = /^[A-Za-z[\]\\`_^{|}][A-Za-z0-9[\]\\`_^{|}-]{0,29}$/;
const PLAIN = /^[^\x00-\x1f\x7f]*$/;

const channelName = z.string().regex(CHANNEL, 'expected an IRC channel name like "#general" (no spaces, commas, colons or control characters)');

/** A template: `{text}` exactly once, and only the tokens given. */
function template(tokens: readonly string[], fallback: string) {
  return z.string().regex(PLAIN, 'expected one line without control characters').default(fallback).superRefine((value, ctx) => {
    if (value.split('{text}').length !== 2) ctx.addIssue({ code: 'custom', message: 'a format needs {text} exactly once' });
    for (const [, token] of value.matchAll(/\{(\w+)\}/g)) {
      if (!tokens.includes(token!)) {
        ctx.addIssue({ code: 'custom', message: `unknown token {${token}} (known: ${tokens.map((t) => `{${t}}`).join(' ')})` });
      }
    }
  });
}

const route = z.union([
  channelName,
  z.strictObject({
    channel: channelName,
    /** The channel key (+k), if it has one. */
    key: z.string().regex(/^[^\s,\x00-\x1f\x7f]{1,64}$/, 'expected a channel key without spaces or commas').optional(),
    /** Put before each line sent to IRC, e.g. "[general]". Default: none, or `[<chat>]` when several chats share the channel. */
    prefix: z.string().regex(PLAIN, 'expected one line without control characters').max(50).optional(),
    direction: z.enum(['both', 'to_irc', 'to_chat']).default('both'),
  }),
]);

export const TO_IRC_TOKENS = ['prefix', 'name', 'user', 'text'] as const;
export const TO_CHAT_TOKENS = ['nick', 'channel', 'text'] as const;

export const relayOptions = z.strictObject({
  server: z.string().min(1).regex(/^[^\s/]+$/, 'expected a host name or address'),
  /** Default: 6697 with TLS, 6667 without. */
  port: z.number().int().min(1).max(65535).optional(),
  tls: z.boolean().default(true),
  /** Check the server's certificate (default). Turning it off is for test networks only. */
  tls_verify: z.boolean().default(true),
  /** A CA (PEM) to trust for the server's certificate, relative to bots.yaml. */
  tls_ca_file: z.string().min(1).optional(),
  nick: z.string().regex(NICK, 'expected an IRC nick (a letter or one of [\\]`_^{|} first, then letters, digits, -; at most 30)'),
  username: z.string().regex(/^[A-Za-z0-9_.~-]{1,32}$/, 'expected a user name of letters, digits, _ . ~ -').default('groupwire'),
  realname: z.string().regex(PLAIN).min(1).max(100).default('groupwire relay'),
  /** The server password (PASS). */
  password: z.string().regex(PLAIN).optional(),
  /** SASL PLAIN login to the network's services. */
  sasl: z.strictObject({ account: z.string().regex(PLAIN).min(1), password: z.string().regex(PLAIN) }).optional(),
  /**
   * Chat (subject or id, as in the bot's `chats`) to channel: each pair is a gateway of its own. May be
   * empty when bots.yaml's `gateways:` names the relay's channels (the core checks the relay is used).
   */
  channels: z.record(z.string().min(1), route).default({}),
  /** Other bots on IRC whose lines are not relayed (the relay's own nick never is). */
  ignore_nicks: z.array(z.string().min(1)).default([]),
  /** A zero-width space inside each chat name, so IRC clients do not highlight users of the same name. */
  anti_ping: z.boolean().default(true),
  formats: z.strictObject({
    to_irc: template(TO_IRC_TOKENS, '{prefix}<{name}> {text}'),
    to_chat: template(TO_CHAT_TOKENS, '<{nick}> {text}'),
    to_chat_action: template(TO_CHAT_TOKENS, '* {nick} {text}'),
  }).prefault({}),
  /**
   * Pacing of every command the relay sends (lines, confirmations, joins): a token bucket, or `off` for
   * none at all (a server of your own without flood limits; real networks kick a client that floods).
   */
  rate: z.union([z.literal('off'), z.strictObject({
    lines_per_second: z.number().positive().max(1000).default(1),
    burst: z.number().int().min(1).max(1000).default(4),
  })], { error: 'expected off or { lines_per_second, burst }' }).prefault({}),
  /** The longest text of one PRIVMSG, in bytes (lower for long nicks and host names; never past 512 in all). */
  max_line_bytes: z.number().int().min(100).max(450).default(400),
  /** 0: every line of a message is relayed. Otherwise longer messages are cut, with a note saying so. */
  max_lines_per_message: z.number().int().min(0).default(0),
  queue: z.strictObject({
    /** Lines waiting per channel before new ones are refused (logged as errors, counted). */
    max_lines: z.number().int().min(10).default(10_000),
    /** Warn (once per crossing) when a channel's queue reaches this fraction of max_lines. */
    warn_at: z.number().gt(0).lt(1).default(0.5),
    /** Lines sent but not yet confirmed by the server, at most. */
    in_flight: z.number().int().min(1).max(500).default(20),
    /** A line the server refuses (e.g. moderated channel) is tried this often, then dropped with an error. */
    max_attempts: z.number().int().min(1).max(100).default(5),
  }).prefault({}),
  reconnect: z.strictObject({
    /** The first retry comes after half to all of this. */
    min_delay_ms: z.number().int().min(10).default(1000),
    max_delay_ms: z.number().int().min(100).default(60_000),
  }).prefault({}),
});

export type RelayOptions = z.output<typeof relayOptions>;
export type RouteOption = RelayOptions['channels'][string];
