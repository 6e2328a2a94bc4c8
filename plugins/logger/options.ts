import { z } from 'zod';
import { FORMAT_NAMES, type FormatName } from './formats.js';
import { DEFAULT_PATH, PathPattern } from './path-pattern.js';
import { isTimeZone } from './time.js';

/** The logger's `with:` options in bots.yaml. */
export const loggerOptions = z.strictObject({
  /** Where transcripts go, relative to bots.yaml. */
  dir: z.string().min(1).default('./transcripts'),
  /** One format or a list: jsonl, text, html, markdown. */
  format: z.unknown().optional().transform((value, ctx) => {
    const list = value === undefined ? ['jsonl'] : Array.isArray(value) ? value : [value];
    if (list.length === 0 || !list.every((item) => (FORMAT_NAMES as readonly unknown[]).includes(item))) {
      ctx.addIssue({ code: 'custom', message: `expected one of ${FORMAT_NAMES.join(', ')}, or a list of them; got ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    return [...new Set(list as FormatName[])];
  }),
  /** Where each file goes under `dir`: fields {group} {group_id} {chat} {chat_id} {bot} {date} {year} {month} {day} {ext}. */
  path: z.string().min(1).default(DEFAULT_PATH).superRefine((value, ctx) => {
    try {
      PathPattern.parse(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
    }
  }),
  /** The IANA time zone of the days (file names) and of the times shown. */
  time_zone: z.string().default('UTC').refine(isTimeZone, { message: 'not a time zone Intl knows (an IANA name such as UTC or Europe/Berlin)' }),
  /** How text, html and markdown show a message's time: YYYY MM DD HH mm ss SSS Z. */
  time_format: z.string().min(1).default('HH:mm:ss'),
  /** Write the bot's own messages too (a transcript without the bot's answers is not complete). */
  include_own: z.boolean().default(true),
  /** On a chat's very first transcript, write its whole history first (default: from now on). */
  full_history: z.boolean().default(false),
  /** Data reaches the disk (written and fsynced) within this many milliseconds. */
  flush_interval_ms: z.number().int().min(10).max(60_000).default(1000),
  /** After a write error, the longest wait before trying again. */
  retry_max_ms: z.number().int().min(10).max(600_000).default(30_000),
  /** The most messages kept in memory while writing fails; beyond it they are read from history later. */
  max_pending: z.number().int().min(10).default(100_000),
}).superRefine((value, ctx) => {
  if (Array.isArray(value.format) && value.format.length > 1 && typeof value.path === 'string' && !value.path.includes('{ext}')) {
    ctx.addIssue({ code: 'custom', path: ['path'], message: 'with more than one format the path pattern needs {ext}' });
  }
});

export type LoggerOptions = z.output<typeof loggerOptions>;
