import { z } from 'zod';

/** A duration: seconds, or a number with ms, s, m or h (`2s`, `1m`). In milliseconds. */
const duration = z.union([
  z.number().min(0),
  z.string().regex(/^\d+(\.\d+)?\s*(ms|s|m|h)$/, 'a duration: seconds, or a number with ms, s, m or h (2s, 1m)'),
]).transform((value) => {
  if (typeof value === 'number') return value * 1000;
  const [, amount, unit] = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/.exec(value)!;
  return Number(amount) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms']!;
});

const template = (must: string) => z.string().refine((value) => value.includes(must), `a template containing ${must}`);

export const groupMailOptions = z.strictObject({
  /** Chat subject or id → group name: each pair is a gateway of the chat and the group's archive (`in`: the archive speaks, unless post_to_group). */
  groups: z.record(z.string().min(1), z.string().min(1)).default({}),
  /** `topics`: the first message of each new topic; `messages`: every new message, replies threaded under their topic. */
  follow: z.enum(['topics', 'messages']).default('topics'),
  /** Only messages of topics with one of these hashtags (`announce` or `#announce`, any case); none: all. */
  hashtags: z.array(z.string().min(1).transform((tag) => tag.replace(/^#/, '').toLowerCase())).default([]),
  /** How a new topic shows: {subject}, {author}, {snippet}, {link}, {hashtags}, {group}, {msg_num}. */
  topic_template: template('{subject}').default('New topic: {subject} {hashtags} — {snippet} {link}'),
  /** How a reply shows (follow: messages), with the same fields. */
  reply_template: z.string().min(1).default('re: {subject} — {snippet} {link}'),
  /** The snippet's length in characters: plain text of the body, quoted part and signature dropped. */
  snippet_length: z.number().int().min(0).max(4000).default(200),
  /** A message's link: {group_url} (the group's page), {msg_num}, {message_id}, {topic_id}. */
  link: z.string().default('{group_url}/message/{msg_num}'),
  /** How a line from the archive shows in the chat: {name} (the author) and {text}. */
  incoming: template('{text}').default('<{name}> {text}'),
  /**
   * Also follow the group's activity log (the account needs view_activity) as a second channel,
   * `<group>/moderation`: entries of these `filter_by` families.
   */
  moderation: z.union([z.boolean(), z.array(z.enum(['member', 'message', 'mod', 'pay'])).min(1)]).default(false)
    .transform((value) => (value === true ? ['mod' as const] : value === false ? [] : [...new Set(value)])),
  /** How an activity entry shows: {entry} (its text), {action}, {group}. */
  moderation_template: template('{entry}').default('{entry}'),
  /** Polling: this soon after activity, doubling while the group is quiet up to `max`. */
  poll: z.strictObject({ min: duration.default(2_000), max: duration.default(60_000) }).default({ min: 2_000, max: 60_000 })
    .refine((poll) => poll.min >= 50 && poll.max >= poll.min, 'min at least 50ms, and max at least min'),
  /** Lines said on the gateway's other sides may be posted into the group (a topic each, a reply where they answer an announced message). Off by default. */
  post_to_group: z.boolean().default(false),
  /** A posted line's subject: {name}, {platform}, {start} (the line's first words). */
  post_subject: template('{start}').default('{name}: {start}'),
  /** At most this many lines wait to be posted into groups; past it, a line is refused loudly. */
  queue_max: z.number().int().min(1).max(1_000_000).default(1_000),
});

export type GroupMailOptions = z.output<typeof groupMailOptions>;

/** The channel of a group's activity log, next to the group's own (the archive). */
export const moderationChannel = (group: string): string => `${group}/moderation`;
