import type { StoredMessage } from './web-api.js';

/**
 * conversations.history and conversations.replies over the fake's kept messages, as Slack documents
 * them (https://api.slack.com/methods/conversations.history, …/conversations.replies):
 * - `oldest` and `latest` bound the messages by ts, exclusive unless `inclusive` (`oldest` 0 and
 *   `latest` now by default);
 * - history is newest first and leaves out thread replies (a reply broadcast to the channel stays);
 *   replies is the thread's parent and then its replies, oldest first;
 * - `limit` per page (history 100 by default, at most 999; replies 1000), `has_more`, and
 *   `response_metadata.next_cursor` for the next page (`cursor`; a cursor the fake did not hand out
 *   answers invalid_cursor);
 * - a message's `metadata` only with `include_all_metadata`.
 */

/** An answer body, or a Slack error code. */
export type Listing = { body: Record<string, unknown> } | { error: string };

const HISTORY_LIMIT = { fallback: 100, max: 999 };
const REPLIES_LIMIT = { fallback: 1000, max: 1000 };

export function conversationsHistory(messages: Iterable<StoredMessage>, args: Record<string, string>): Listing {
  const all = [...messages];
  const inChannel = all.filter((m) => !m.thread_ts || m.thread_ts === m.ts || m.subtype === 'thread_broadcast');
  const page = paged(inChannel, (a, b) => compareTs(b, a), args, HISTORY_LIMIT);
  if ('error' in page) return page;
  // A thread's parent carries its thread_ts (its own ts), reply_count and latest_reply, as Slack's does.
  const withThread = (m: StoredMessage): StoredMessage => {
    const replies = all.filter((r) => r.thread_ts === m.ts && r.ts !== m.ts);
    return replies.length === 0 ? m : { ...m, thread_ts: m.ts, reply_count: replies.length, latest_reply: replies.map((r) => r.ts).sort(compareTs).at(-1)! } as StoredMessage;
  };
  return {
    body: {
      messages: page.messages.map((m) => present(withThread(m), args)), has_more: page.hasMore, pin_count: 0,
      channel_actions_ts: null, channel_actions_count: 0, response_metadata: { next_cursor: page.next },
    },
  };
}

export function conversationsReplies(messages: Iterable<StoredMessage>, args: Record<string, string>): Listing {
  const all = [...messages];
  const asked = all.find((m) => m.ts === args.ts);
  if (!asked) return { error: 'thread_not_found' };
  // `ts` may be any message of the thread: the thread is its parent's.
  const parentTs = asked.thread_ts ?? asked.ts;
  const parent = all.find((m) => m.ts === parentTs);
  const replies = all.filter((m) => m.thread_ts === parentTs && m.ts !== parentTs);
  const page = paged(replies, compareTs, args, REPLIES_LIMIT, parent);
  if ('error' in page) return page;
  return {
    body: {
      messages: page.messages.map((m) => present(m, args)), has_more: page.hasMore,
      ...(page.next ? { response_metadata: { next_cursor: page.next } } : {}),
    },
  };
}

interface Page {
  messages: StoredMessage[];
  hasMore: boolean;
  /** The next page's cursor, `''` on the last page. */
  next: string;
}

/**
 * One page of `messages` in the method's `order` (of two ts) within oldest/latest, after the cursor's
 * position. `head` (a thread's parent) comes first on the first page, whatever the bounds.
 */
function paged(
  messages: StoredMessage[], order: (a: string, b: string) => number, args: Record<string, string>, limits: { fallback: number; max: number }, head?: StoredMessage,
): Page | { error: string } {
  const inclusive = args.inclusive === 'true' || args.inclusive === '1';
  const oldest = args.oldest ?? '0';
  const latest = args.latest;
  if (!isTs(oldest) || (latest !== undefined && !isTs(latest))) return { error: 'invalid_ts_oldest' };
  const within = messages.filter((m) => {
    const afterOldest = inclusive ? compareTs(m.ts, oldest) >= 0 : compareTs(m.ts, oldest) > 0;
    const beforeLatest = latest === undefined || (inclusive ? compareTs(m.ts, latest) <= 0 : compareTs(m.ts, latest) < 0);
    return afterOldest && beforeLatest;
  }).sort((a, b) => order(a.ts, b.ts));
  let start = 0;
  if (args.cursor) {
    const after = fromCursor(args.cursor);
    if (after === undefined) return { error: 'invalid_cursor' };
    // The first message past the cursor's (which may have been deleted since).
    start = within.findIndex((m) => order(m.ts, after) > 0);
    if (start < 0) start = within.length;
  }
  const asked = Number(args.limit);
  const limit = Number.isInteger(asked) && asked > 0 ? Math.min(asked, limits.max) : limits.fallback;
  const first = !args.cursor && head ? [head] : [];
  const taken = within.slice(start, start + Math.max(limit - first.length, 0));
  const hasMore = start + taken.length < within.length;
  return { messages: [...first, ...taken], hasMore, next: hasMore && taken.length > 0 ? toCursor(taken.at(-1)!.ts) : '' };
}

/** A kept message as the methods answer it: metadata only when asked for. */
function present(message: StoredMessage, args: Record<string, string>): StoredMessage {
  const withMetadata = args.include_all_metadata === 'true' || args.include_all_metadata === '1';
  if (withMetadata || message.metadata === undefined) return { ...message };
  const { metadata: _left, ...rest } = message;
  return rest;
}

/** Slack's ts: seconds, optionally `.` and up to six digits of microseconds. */
function isTs(value: string): boolean {
  return /^\d+(\.\d{1,6})?$/.test(value);
}

/** Orders two ts exactly (as numbers they would lose the last microseconds). */
export function compareTs(a: string, b: string): number {
  const [aSeconds = '0', aMicros = ''] = a.split('.');
  const [bSeconds = '0', bMicros = ''] = b.split('.');
  const seconds = BigInt(aSeconds) - BigInt(bSeconds);
  if (seconds !== 0n) return seconds < 0n ? -1 : 1;
  const micros = BigInt(aMicros.padEnd(6, '0')) - BigInt(bMicros.padEnd(6, '0'));
  return micros === 0n ? 0 : micros < 0n ? -1 : 1;
}

function toCursor(ts: string): string {
  return Buffer.from(`next_ts:${ts}`).toString('base64');
}

function fromCursor(cursor: string): string | undefined {
  const text = Buffer.from(cursor, 'base64').toString('utf8');
  return text.startsWith('next_ts:') && isTs(text.slice('next_ts:'.length)) ? text.slice('next_ts:'.length) : undefined;
}
