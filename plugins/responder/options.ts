import { z } from 'zod';
import { ARG_TYPES, specProblem } from './args.js';
import { BUILTIN_NAMES } from './builtins/specs.js';
import { identityProblem } from './identity.js';
import { templateProblem } from './rules.js';
import { isTimeZone } from './text.js';

/** A duration: a number of seconds, or `500ms`, `30s`, `10m`, `2h`, `1d`. In milliseconds. */
export const duration = z.union([
  z.number().min(0),
  z.string().regex(/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/, 'a duration: seconds, or a number with ms, s, m, h or d (30s, 10m)'),
]).transform((value) => {
  if (typeof value === 'number') return value * 1000;
  const [, amount, unit] = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(value)!;
  return Number(amount) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit as 'ms']!;
});

/**
 * A person (identity.ts): a chat user id as the service sends it (quote big ones in YAML, or digits
 * are lost), an e-mail address, `chat:<id>`, `irc:<nick!user@host mask>`, `slack:<U…>`.
 */
const userId = z.union([
  z.string().min(1).superRefine((entry, ctx) => {
    const problem = identityProblem(entry);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  z.number().refine(Number.isSafeInteger, 'an id must be a whole number, and one this large must be quoted ("…") so no digit is lost'),
]).transform(String);

/** Where a rule's answer goes: into the chat, whence the gateway carries it everywhere, or only back where the command was said. */
const answerTo = z.enum(['everywhere', 'origin']);

export const allowSchema = z.strictObject({
  users: z.array(userId).optional(),
  emails: z.array(z.string().min(3)).optional(),
  chat_owner: z.boolean().optional(),
  moderators: z.boolean().optional(),
  everyone: z.boolean().optional(),
});

export const cooldownSchema = z.strictObject({ rule: duration.optional(), user: duration.optional(), chat: duration.optional() });

const chatList = z.array(z.union([z.string().min(1), z.number().int()]).transform(String));

const argSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'letters, digits and _'),
  type: z.enum(ARG_TYPES).default('string'),
  optional: z.boolean().default(false),
  min: z.number().optional(),
  max: z.number().optional(),
  default: z.union([z.string(), z.number()]).optional(),
  description: z.string().optional(),
});

/**
 * One rule: exactly one of `command`, `keyword` or `regex`, with a `reply` template. Checked as one
 * object (not a union) so a mistake is reported at its key.
 */
const ruleSchema = z.strictObject({
  command: z.string().regex(/^\S+$/, 'a command name has no spaces').optional(),
  keyword: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
  regex: z.string().min(1).optional(),
  flags: z.string().regex(/^[imsuv]*$/, 'regex flags: i, m, s, u, v').optional(),
  case_sensitive: z.boolean().optional(),
  args: z.array(argSchema).optional(),
  aliases: z.array(z.string().regex(/^\S+$/)).optional(),
  hidden: z.boolean().optional(),
  reply: z.string().min(1),
  description: z.string().optional(),
  allow: allowSchema.optional(),
  cooldown: cooldownSchema.optional(),
  chats: chatList.optional(),
  answer_to: answerTo.optional(),
}).superRefine((rule, ctx) => {
  const kinds = (['command', 'keyword', 'regex'] as const).filter((kind) => rule[kind] !== undefined);
  if (kinds.length !== 1) {
    ctx.addIssue({ code: 'custom', message: kinds.length === 0 ? 'a rule needs one of command, keyword or regex' : `a rule is one of command, keyword or regex, not ${kinds.join(' and ')}` });
    return;
  }
  const only = (key: keyof typeof rule, kind: string) => {
    if (rule[key] !== undefined && kinds[0] !== kind) ctx.addIssue({ code: 'custom', path: [key], message: `${key} is only for ${kind} rules` });
  };
  only('flags', 'regex');
  only('case_sensitive', 'keyword');
  only('args', 'command');
  only('aliases', 'command');
  only('hidden', 'command');
  if (rule.regex !== undefined) {
    try {
      new RegExp(rule.regex, rule.flags ?? '');
    } catch (error) {
      ctx.addIssue({ code: 'custom', path: ['regex'], message: (error as Error).message });
    }
  }
  const argsProblem = specProblem(rule.args ?? []);
  if (argsProblem) ctx.addIssue({ code: 'custom', path: ['args'], message: argsProblem });
  const problem = templateProblem(rule.reply, kinds[0]!, (rule.args ?? []).map((a) => a.name));
  if (problem) ctx.addIssue({ code: 'custom', path: ['reply'], message: problem });
});

const builtinOverride = z.union([
  z.boolean(),
  z.strictObject({
    allow: allowSchema.optional(), cooldown: cooldownSchema.optional(), aliases: z.array(z.string().regex(/^\S+$/)).optional(), chats: chatList.optional(),
    answer_to: answerTo.optional(),
  }),
]);

/** `builtins: true | false | { help: false, activity: { allow: {...} }, ... }` */
export const builtinsSchema = z.union([
  z.boolean(),
  z.strictObject(Object.fromEntries(BUILTIN_NAMES.map((name) => [name, builtinOverride.optional()])) as Record<(typeof BUILTIN_NAMES)[number], z.ZodOptional<typeof builtinOverride>>),
]);

/** A platform as relays name it (`irc`, `slack`, `discord`, `matrix`, `xmpp`, `http`; `chat` for chats of other groups). */
const platformName = z.string().regex(/^[a-z][a-z0-9_-]*$/, 'a platform as relays name it, in lower case: irc, slack, discord, matrix, xmpp, http, or chat (chats of other groups)');

/** A side outside the group allowed to read it through the bot (reads.ts): a platform, or a gateway (of one platform). */
export const groupReaderSchema = z.union([
  platformName,
  z.strictObject({ gateway: z.string().min(1), platform: platformName.optional() }),
], { error: 'a platform (irc, slack, ...) or { gateway: <name>, platform: <platform> }' });

/** The schema of the responder's `with:` options in bots.yaml (docs/plugins/responder.md). */
export const responderOptions = z.strictObject({
  /** What starts a command. */
  prefix: z.string().regex(/^\S{1,10}$/, 'one to ten characters, no spaces').default('!'),
  /** A command missed while away (backfilled) is answered when younger than this. */
  max_age: duration.default(600_000),
  /** The built-in commands: all on (true), all off (false), or per command. */
  builtins: builtinsSchema.default(true),
  /** The group's moderators (`allow: { moderators: true }`): the interface does not tell who they are. */
  moderators: z.strictObject({ users: z.array(userId).default([]), emails: z.array(z.string().min(3)).default([]) })
    .default({ users: [], emails: [] }),
  /**
   * The sides outside the group (IRC, Slack, Discord, Matrix, XMPP, the HTTP API, chats of other groups)
   * whose people may use the commands that read the group's content: none unless listed.
   */
  reads_group: z.array(groupReaderSchema).default([]),
  /** The time zone of dates in answers. */
  time_zone: z.string().default('UTC').refine(isTimeZone, { message: 'not a time zone Intl knows (an IANA name such as UTC or Europe/Berlin)' }),
  /** The longest post; longer answers are split (at most 10,000, the service's limit). */
  max_length: z.number().int().min(100).max(10_000).default(10_000),
  rules: z.array(ruleSchema).default([]).superRefine((rules, ctx) => {
    const seen = new Map<string, number>();
    for (const [index, rule] of rules.entries()) {
      for (const name of [rule.command, ...(rule.aliases ?? [])]) {
        if (name === undefined) continue;
        const earlier = seen.get(name.toLowerCase());
        if (earlier !== undefined) ctx.addIssue({ code: 'custom', path: [index, 'command'], message: `command ${name} is already rule ${earlier + 1}` });
        else seen.set(name.toLowerCase(), index);
      }
    }
  }),
});

/** The responder's options once validated, defaults filled in. */
export type ResponderConfig = z.output<typeof responderOptions>;
